package idempotency

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"

	bolt "go.etcd.io/bbolt"
)

// storeFileError is an intent store file refused before bbolt opens it:
// missing meta pages, a bad checksum, a size that does not cover the pages
// its meta page says it holds (a truncated copy), a directory. Opening
// such a file would lose intents or crash the process when bbolt reads a
// page past the end of the file (SIGBUS), so Open says what is wrong
// instead. Nothing in the file is changed.
type storeFileError struct {
	// Path is the store file.
	Path string
	// Reason says what is wrong and how to proceed.
	Reason string
}

// Error implements error.
func (e *storeFileError) Error() string {
	return fmt.Sprintf("idempotency: store %s: %s", e.Path, e.Reason)
}

// bbolt's on-disk layout (go.etcd.io/bbolt internal/common: page.go,
// meta.go, types.go), read here rather than trusted to bbolt, which maps
// the file and would fault on a page past its end.
const (
	boltMagic       = 0xED0CDAED
	boltVersion     = 2
	boltPageHeader  = 16         // id u64, flags u16, count u16, overflow u32
	boltMetaSize    = 64         // magic, version, page size, flags, root (2×u64), freelist, pgid, txid, checksum
	boltChecksumAt  = 56         // FNV-64a over the meta's first 56 bytes
	boltMinPageSize = 1024       // bbolt probes page sizes from 1 KiB…
	boltMaxPageSize = 1024 << 14 // …to 16 MiB
	boltMetaPage    = 0x04
	boltNoFreelist  = ^uint64(0)
)

// boltMeta is one decoded meta page.
type boltMeta struct {
	pageSize       uint64
	root, freelist uint64
	pgid, txid     uint64
}

// readBoltMeta decodes the meta page at off, or says why it is not one.
func readBoltMeta(f io.ReaderAt, off int64) (boltMeta, error) {
	var buf [boltPageHeader + boltMetaSize]byte
	if _, err := f.ReadAt(buf[:], off); err != nil {
		return boltMeta{}, errors.New("cut short")
	}
	bo := binary.NativeEndian // bbolt writes its pages in the machine's byte order
	if flags := bo.Uint16(buf[8:]); flags&boltMetaPage == 0 {
		return boltMeta{}, errors.New("not a meta page")
	}
	m := buf[boltPageHeader:]
	switch {
	case bo.Uint32(m[0:]) != boltMagic:
		return boltMeta{}, errors.New("no bbolt magic number")
	case bo.Uint32(m[4:]) != boltVersion:
		return boltMeta{}, fmt.Errorf("bbolt format version %d, want %d", bo.Uint32(m[4:]), boltVersion)
	}
	h := fnv.New64a()
	_, _ = h.Write(m[:boltChecksumAt])
	if h.Sum64() != bo.Uint64(m[boltChecksumAt:]) {
		return boltMeta{}, errors.New("checksum mismatch")
	}
	meta := boltMeta{
		pageSize: uint64(bo.Uint32(m[8:])),
		root:     bo.Uint64(m[16:]),
		freelist: bo.Uint64(m[32:]),
		pgid:     bo.Uint64(m[40:]),
		txid:     bo.Uint64(m[48:]),
	}
	if meta.pageSize < boltMinPageSize || meta.pageSize > boltMaxPageSize || meta.pageSize&(meta.pageSize-1) != 0 {
		return boltMeta{}, fmt.Errorf("page size %d is not a power of two from 1 KiB to 16 MiB", meta.pageSize)
	}
	if meta.root >= meta.pgid || (meta.freelist >= meta.pgid && meta.freelist != boltNoFreelist) || meta.pgid < 4 {
		return boltMeta{}, errors.New("pages out of order")
	}
	return meta, nil
}

// checkStoreFile refuses a file at path that bbolt cannot open safely,
// and creates the store when path does not exist (createStoreFile). An
// existing file must hold both meta pages whole, and each one's
// high-water mark (pgid × page size) must lie within the file: bbolt
// grows the file before it commits a larger one, so a shorter file is a
// truncated copy.
//
// An empty file is refused too: a store is whole (its meta pages synced)
// before it appears at its path, so an empty file is not a new store but
// one whose contents are gone; opening it would forget every intent and
// let a create be sent again without a lookup.
func checkStoreFile(path string) error {
	bad := func(format string, args ...any) error {
		return &storeFileError{Path: path, Reason: fmt.Sprintf(format, args...)}
	}
	info, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		if err := createStoreFile(path); err != nil {
			return err
		}
		info, err = os.Stat(path)
	}
	switch {
	case err != nil:
		return fmt.Errorf("idempotency: open %s: %w", path, err)
	case info.IsDir():
		return bad("is a directory, not an intent store file (name a file in it, such as %s/intents.db)", path)
	case !info.Mode().IsRegular():
		return bad("is not a regular file")
	}
	size := info.Size()
	const damaged = "; it is damaged or not an intent store: keep it for inspection, and point --store at a new file only once you know no order was placed from it (or run recover against a copy)"
	if size == 0 {
		return bad("is empty: an intent store is never empty, so its intents are gone" + damaged)
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("idempotency: open %s: %w", path, err)
	}
	defer f.Close()

	if size < 2*boltMinPageSize {
		return bad("is %d bytes, too short to hold bbolt's two meta pages"+damaged, size)
	}
	// bbolt keeps two meta pages and falls back on one when the other is
	// damaged. The damaged one may be the newer: falling back would forget
	// the last intent written, so both must be whole.
	meta0, err := readBoltMeta(f, 0)
	if err != nil {
		return bad("holds no valid bbolt meta page (page 0: %v)"+damaged, err)
	}
	meta1, err := readBoltMeta(f, int64(meta0.pageSize))
	if err == nil && meta1.pageSize != meta0.pageSize {
		err = fmt.Errorf("page size %d, but page 0 says %d", meta1.pageSize, meta0.pageSize)
	}
	if err != nil {
		return bad("its second bbolt meta page is damaged (%v): bbolt would fall back on the other and might forget the last intent written"+damaged, err)
	}
	metas := []boltMeta{meta0, meta1}
	for _, m := range metas {
		if need := m.pgid * m.pageSize; need > uint64(size) || m.pgid > uint64(size) {
			return bad("is %d bytes but its meta page (transaction %d) says it holds %d pages of %d bytes (%d bytes): it was cut short"+damaged,
				size, m.txid, m.pgid, m.pageSize, need)
		}
	}
	return nil
}

// openNewStoreFile opens the file a new store is built in (bbolt's
// Options.OpenFile). Tests replace it to make the build's writes fail, as
// on a full disk.
var openNewStoreFile = os.OpenFile

// createStoreFile creates a new, empty intent store at path, whole or not
// at all: bbolt builds it in a temporary file in the same directory,
// which is synced, linked at path and unlinked, and the directory is
// synced. A failure part way (a full disk) leaves nothing at path, so the
// next Open creates the store again instead of refusing a half-written
// file as damaged. A file another process put at path meanwhile is kept.
// A process killed while building leaves only a temporary file named
// .<name>.new-*, which nothing reads.
func createStoreFile(path string) error {
	dir, name := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	fail := func(err error) error {
		return fmt.Errorf("idempotency: create %s: %w (nothing was left at that path)", path, err)
	}
	f, err := os.CreateTemp(dir, "."+name+".new-*")
	if err != nil {
		return fail(err)
	}
	tmp := f.Name()
	_ = f.Close()
	// Once linked at path, tmp is a second name for the store: remove it.
	defer os.Remove(tmp)
	if err := buildStoreFile(tmp); err != nil {
		return fail(err)
	}
	switch err := os.Link(tmp, path); {
	case errors.Is(err, fs.ErrExist):
		return nil // another process created the store first: theirs is checked
	case err != nil:
		// A file system without hard links: rename, unless a store
		// appeared meanwhile.
		if _, serr := os.Lstat(path); serr == nil {
			return nil
		}
		if err := os.Rename(tmp, path); err != nil {
			return fail(err)
		}
	}
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("idempotency: create %s: syncing its directory: %w", path, err)
	}
	return nil
}

// buildStoreFile writes an empty intent store, its buckets made, into the
// empty file at path and syncs it.
func buildStoreFile(path string) error {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: lockWait, OpenFile: openNewStoreFile})
	if err != nil {
		return err
	}
	err = db.Update(ensureBuckets)
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// syncDir makes a new name in dir durable. Windows cannot sync a
// directory; NTFS journals the rename.
func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
