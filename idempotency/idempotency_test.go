package idempotency

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
)

func TestClientOrderIDGolden(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "client_order_ids.json"))
	if err != nil {
		t.Fatal(err)
	}
	var vectors []struct {
		AccountNumber string `json:"account_number"`
		Namespace     string `json:"namespace"`
		Key           string `json:"key"`
		ClientOrderID string `json:"client_order_id"`
	}
	if err := json.Unmarshal(data, &vectors); err != nil {
		t.Fatal(err)
	}
	for _, v := range vectors {
		got := ClientOrderID(v.AccountNumber, v.Namespace, v.Key)
		if got != v.ClientOrderID {
			t.Errorf("ClientOrderID(%q, %q, %q) = %s, want %s (ids must never change)", v.AccountNumber, v.Namespace, v.Key, got, v.ClientOrderID)
		}
		u := uuid.MustParse(got)
		if u.Version() != 5 || u.Variant() != uuid.RFC4122 {
			t.Errorf("%s is not an RFC 4122 UUIDv5", got)
		}
	}
}

func TestClientOrderIDUnambiguous(t *testing.T) {
	pairs := [][2][3]string{
		{{"AB1", "", "xy"}, {"AB1", "x", "y"}},
		{{"AB1", "x", "y"}, {"AB1x", "", "y"}},
		{{"AB1", "", "k"}, {"AB2", "", "k"}},
		{{"AB1", "ns", "k"}, {"AB1", "", "k"}},
		{{"", "", "AB1k"}, {"AB1", "", "k"}},
	}
	for _, p := range pairs {
		a := ClientOrderID(p[0][0], p[0][1], p[0][2])
		b := ClientOrderID(p[1][0], p[1][1], p[1][2])
		if a == b {
			t.Errorf("%q and %q share the id %s", p[0], p[1], a)
		}
	}
	if ClientOrderID("AB1", "ns", "k") != ClientOrderID("AB1", "ns", "k") {
		t.Error("the same triple gave two ids")
	}
}

func stores(t *testing.T) map[string]Store {
	t.Helper()
	bs, err := Open(filepath.Join(t.TempDir(), "intents.db"), Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bs.Close() })
	return map[string]Store{"memory": NewMemoryStore(), "bolt": bs}
}

var t0 = time.Date(2026, 11, 2, 14, 0, 0, 0, time.UTC)

func TestStoreContract(t *testing.T) {
	ctx := context.Background()
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			rec := Record{ClientOrderID: "ae6ec0cf-288b-51fc-ba4f-34c2c5b23ed0", Key: "order-1", State: Pending,
				Fingerprint: "f1", Notional: "30.5", Body: []byte(`{"a":1}`), CreatedAt: t0, Holder: "h"}
			got, created, err := s.Create(ctx, rec)
			if err != nil || !created || got.Key != "order-1" {
				t.Fatalf("Create = %+v, %v, %v", got, created, err)
			}
			other := rec
			other.Fingerprint = "f2"
			got, created, err = s.Create(ctx, other)
			if err != nil || created || got.Fingerprint != "f1" {
				t.Fatalf("second Create by the holder = %+v, %v, %v; want the first record back", got, created, err)
			}
			rec.State = Acknowledged
			rec.OrderID = "o-1"
			rec.LastSignedAt = t0.Add(time.Second)
			if err := s.Update(ctx, rec); err != nil {
				t.Fatal(err)
			}
			// Settled, the bolt store's record is compacted: the body
			// goes, the fingerprint, the notional and the order's id stay.
			got, err = s.Get(ctx, rec.ClientOrderID)
			if err != nil || got.State != Acknowledged || got.OrderID != "o-1" || !got.LastSignedAt.Equal(t0.Add(time.Second)) ||
				(name == "bolt") != (got.Body == nil) || got.Fingerprint != "f1" || got.Notional != "30.5" {
				t.Fatalf("Get = %+v, %v", got, err)
			}
			if _, err := s.Get(ctx, "nope"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("Get(missing) err = %v", err)
			}
			if err := s.Update(ctx, Record{ClientOrderID: "nope", Holder: "h"}); !errors.Is(err, ErrNotFound) {
				t.Fatalf("Update(missing) err = %v", err)
			}
			second := Record{ClientOrderID: "b", State: Unknown, CreatedAt: t0.Add(time.Minute)}
			if _, _, err := s.Create(ctx, second); err != nil {
				t.Fatal(err)
			}
			all, _ := s.List(ctx)
			open, _ := s.List(ctx, Pending, Unknown)
			if len(all) != 2 || all[0].ClientOrderID != rec.ClientOrderID || len(open) != 1 || open[0].ClientOrderID != "b" {
				t.Fatalf("List = %+v / %+v", all, open)
			}
		})
	}
}

func TestBoltStoreIsDurableAndExclusive(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state", "intents.db")
	s, err := Open(path, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Create(ctx, Record{ClientOrderID: "x", State: Pending, CreatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	// A second opener gets a clear error at once, not a hang.
	if _, err := Open(path, Config{}); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open err = %v, want ErrLocked", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "x"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Get after Close err = %v", err)
	}
	s2, err := Open(path, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	rec, err := s2.Get(ctx, "x")
	if err != nil || rec.State != Pending {
		t.Fatalf("after reopening: %+v, %v", rec, err)
	}
	info, err := os.Stat(path)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("store file mode = %v, %v; want 0600", info.Mode(), err)
	}
}
