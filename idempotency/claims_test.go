package idempotency_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/internal/storetest"
)

func TestClaimsMemory(t *testing.T) {
	storetest.Claims(t, func(*testing.T) (idempotency.Store, string) { return idempotency.NewMemoryStore(), "TW1" })
}

func TestClaimsBolt(t *testing.T) {
	storetest.Claims(t, func(t *testing.T) (idempotency.Store, string) {
		s, err := idempotency.Open(filepath.Join(t.TempDir(), "intents.db"), idempotency.Config{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s, "TW1"
	})
}

// TestBoltClaimsEndWithTheProcess: a bbolt file is held by one process at
// a time, so the claims of the process that closed it (or died holding
// it) are gone for the next one, which takes the open intent up.
func TestBoltClaimsEndWithTheProcess(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "intents.db")
	s, err := idempotency.Open(path, idempotency.Config{})
	if err != nil {
		t.Fatal(err)
	}
	rec := idempotency.Record{ClientOrderID: "x", State: idempotency.Pending, Sends: 1, CreatedAt: time.Unix(0, 0), Holder: "first"}
	if _, _, err := s.Create(ctx, rec); err != nil {
		t.Fatal(err)
	}
	rec.Holder = "second"
	if _, _, err := s.Create(ctx, rec); !errors.Is(err, idempotency.ErrInProgress) {
		t.Fatalf("Create by a second holder = %v; want ErrInProgress", err)
	}
	s.Close()
	s, err = idempotency.Open(path, idempotency.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, created, err := s.Create(ctx, rec)
	if err != nil || created || got.Holder != "second" || got.Sends != 1 {
		t.Fatalf("Create after reopening = %+v, %v, %v; want the open intent, held by the new holder", got, created, err)
	}
}

func TestMetaMemory(t *testing.T) {
	storetest.Meta(t, func(*testing.T) (idempotency.Store, string, func() idempotency.Store) {
		s := idempotency.NewMemoryStore()
		return s, "TW1", func() idempotency.Store { return s }
	})
}

// TestMetaBolt: another holder of a bbolt file is the next process to
// open it.
func TestMetaBolt(t *testing.T) {
	storetest.Meta(t, func(t *testing.T) (idempotency.Store, string, func() idempotency.Store) {
		path := filepath.Join(t.TempDir(), "intents.db")
		open := func() idempotency.Store {
			s, err := idempotency.Open(path, idempotency.Config{})
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		s := open()
		t.Cleanup(func() { s.Close() })
		return s, "TW1", func() idempotency.Store {
			s.Close()
			s = open()
			return s
		}
	})
}
