package idempotency

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fullStore writes a store with enough intents to span many pages and
// returns its path and size.
func fullStore(t *testing.T) (string, int64) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "intents.db")
	s, err := Open(path, Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 300 {
		rec := Record{ClientOrderID: fmt.Sprintf("id-%04d", i), Key: strings.Repeat("k", 200), State: Pending, CreatedAt: t0}
		if _, _, err := s.Create(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Size() < 64<<10 {
		t.Fatalf("store is only %d bytes; the truncation cases need more", info.Size())
	}
	return path, info.Size()
}

// TestOpenRefusesDamagedFiles gives Open files that are not whole intent
// stores. Each is refused with a *storeFileError naming the file: none
// crashes the process (bbolt would fault reading a page past the end of a
// truncated file) and none is opened as if it were empty.
func TestOpenRefusesDamagedFiles(t *testing.T) {
	good, size := fullStore(t)
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	flip := func(off int) []byte {
		b := bytes.Clone(data)
		b[off] ^= 0xff
		return b
	}
	// Both meta pages damaged: the checksum no longer matches.
	bothMetas := flip(boltPageHeader + 20)
	bothMetas[4096+boltPageHeader+20] ^= 0xff
	tests := []struct {
		name, path, want string
	}{
		{"empty", write("empty.db", nil), "is empty"},
		{"too short", write("short.db", []byte("tradewire")), "too short"},
		{"garbage", write("garbage.db", bytes.Repeat([]byte("not a bbolt file "), 1000)), "no valid bbolt meta page"},
		{"text", write("text.db", []byte(strings.Repeat("{\"intents\": []}\n", 500))), "no valid bbolt meta page"},
		{"directory", dir, "is a directory"},
		{"truncated to half", write("half.db", data[:size/2]), "cut short"},
		{"truncated to 16384", write("16k.db", data[:16384]), "cut short"},
		{"truncated to two pages", write("8k.db", data[:8192]), "cut short"},
		{"truncated one byte below the high-water mark", write("hwm.db", data[:highWater(t, good)-1]), "cut short"},
		{"both meta pages corrupt", write("metas.db", bothMetas), "checksum mismatch"},
		{"first meta page corrupt", write("meta0.db", flip(boltPageHeader+20)), "checksum mismatch"},
		{"second meta page corrupt", write("meta1.db", flip(4096+boltPageHeader+20)), "second bbolt meta page is damaged"},
		{"other format version", write("version.db", flip(boltPageHeader+4)), "format version"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Open(tt.path, Config{})
			if err == nil {
				s.Close()
				t.Fatal("opened")
			}
			var fe *storeFileError
			if !errors.As(err, &fe) || fe.Path != tt.path || !strings.Contains(err.Error(), tt.path) || !strings.Contains(fe.Reason, tt.want) {
				t.Fatalf("err = %v; want a *storeFileError naming %s and saying %q", err, tt.path, tt.want)
			}
			if errors.Is(err, ErrLocked) {
				t.Fatal("a damaged file reported as locked")
			}
		})
	}
}

// highWater is the larger of the store's two meta pages' pgid × page size.
func highWater(t *testing.T, path string) int64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var hw uint64
	for _, off := range []int64{0, 4096} {
		m, err := readBoltMeta(f, off)
		if err != nil {
			t.Fatal(err)
		}
		hw = max(hw, m.pgid*m.pageSize)
	}
	return int64(hw)
}

// TestOpenAcceptsWholeFiles opens what bbolt can open safely and without
// forgetting anything: a new path, a whole store, one with extra bytes at
// the end, and one cut to its high-water mark (bbolt allocates ahead; the
// pages past the mark hold nothing).
func TestOpenAcceptsWholeFiles(t *testing.T) {
	good, _ := fullStore(t)
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, b := range map[string][]byte{
		"whole":                 data,
		"grown":                 append(bytes.Clone(data), make([]byte, 8192)...),
		"cut to the high water": data[:highWater(t, good)],
	} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".db")
			if err := os.WriteFile(p, b, 0o600); err != nil {
				t.Fatal(err)
			}
			s, err := Open(p, Config{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if recs, err := s.List(context.Background()); err != nil || len(recs) != 300 {
				t.Fatalf("List: %d records, %v", len(recs), err)
			}
		})
	}
	t.Run("new", func(t *testing.T) {
		s, err := Open(filepath.Join(dir, "sub", "new.db"), Config{})
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
	})
}

// TestOpenLockedFileIsLockedNotDamaged: while one process holds a store,
// a second opener hears that it is in use, even if it reads a meta page
// mid-write.
func TestOpenLockedFileIsLockedNotDamaged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "intents.db")
	s, err := Open(path, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !lockedElsewhere(path) {
		t.Fatal("lockedElsewhere = false for a held store")
	}
	if _, err := Open(path, Config{}); !errors.Is(err, ErrLocked) {
		t.Fatalf("err = %v, want ErrLocked", err)
	}
}

func FuzzCheckStoreFile(f *testing.F) {
	f.Add([]byte{})
	f.Add(bytes.Repeat([]byte{0xed}, 9000))
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(t.TempDir(), "f.db")
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := checkStoreFile(p); err == nil {
			// Whatever passes the check, bbolt opens without a fault.
			if s, err := Open(p, Config{}); err == nil {
				s.Close()
			}
		}
	})
}

// TestOpenAfterAFailedCreate: a store whose creation fails part way (a
// full disk: here every write fails) leaves nothing at its path, so the
// next Open creates it instead of refusing a half-written file as
// damaged with its intents gone. Not parallel: it replaces
// openNewStoreFile.
func TestOpenAfterAFailedCreate(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "intents.db")
	openNewStoreFile = func(name string, _ int, perm os.FileMode) (*os.File, error) {
		// The file opens, but for reading only: every write bbolt makes fails.
		return os.OpenFile(name, os.O_RDONLY|os.O_CREATE, perm)
	}
	t.Cleanup(func() { openNewStoreFile = os.OpenFile })
	s, err := Open(path, Config{})
	if err == nil {
		s.Close()
		t.Fatal("Open created a store though every write failed")
	}
	var sfe *storeFileError
	if errors.As(err, &sfe) || !strings.Contains(err.Error(), "nothing was left") {
		t.Errorf("Open: %v; want a failed create that says nothing was left at the path", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("a failed create left %v in the store's directory", entries)
	}

	openNewStoreFile = os.OpenFile // the disk has room again
	s, err = Open(path, Config{})
	if err != nil {
		t.Fatalf("Open after a failed create: %v", err)
	}
	ctx := context.Background()
	if _, _, err := s.Create(ctx, Record{ClientOrderID: "id-1", Key: "k", State: Pending, CreatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the store's directory holds %v, want the store alone", entries)
	}
	s, err = Open(path, Config{})
	if err != nil {
		t.Fatalf("reopening: %v", err)
	}
	defer s.Close()
	if _, err := s.Get(ctx, "id-1"); err != nil {
		t.Errorf("the intent written after the failed create: %v", err)
	}
}

// TestOpenKeepsAStoreCreatedMeanwhile: a store another process put at the
// path while this one built its own is the one opened.
func TestOpenKeepsAStoreCreatedMeanwhile(t *testing.T) {
	t.Parallel()
	path, _ := fullStore(t)
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := createStoreFile(path); err != nil {
		t.Fatal(err)
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Error("creating over an existing store changed it")
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
		t.Errorf("the store's directory holds %v, want the store alone", entries)
	}
}
