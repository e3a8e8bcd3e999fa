package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tradewire/tradewire/idempotency"
)

// Meta checks idempotency.Meta on stores made by newStore, each empty and
// returned with the account it keeps and again, which returns another
// holder of the same data (the same value in memory, the file closed and
// reopened for bbolt, a second Store on the same Redis for a fleet's
// other process): an unset name is ErrNotFound, a value put is read back
// whole by every holder and after a reopen, a put replaces it, names are
// apart, an empty name is refused, concurrent puts leave one of the
// values put, and neither intents nor retention's deletion of settled
// intents touch a value.
func Meta(t *testing.T, newStore func(t *testing.T) (s idempotency.Store, account string, again func() idempotency.Store)) {
	ctx := context.Background()
	meta := func(t *testing.T, s idempotency.Store) idempotency.Meta {
		t.Helper()
		m, ok := s.(idempotency.Meta)
		if !ok {
			t.Fatalf("%T does not implement idempotency.Meta", s)
		}
		return m
	}
	t.Run("put, get, share", func(t *testing.T) {
		s, _, again := newStore(t)
		m := meta(t, s)
		if v, err := m.GetMeta(ctx, "halt"); !errors.Is(err, idempotency.ErrNotFound) {
			t.Fatalf("GetMeta of an unset name = %q, %v; want ErrNotFound", v, err)
		}
		if err := m.PutMeta(ctx, "", []byte("x")); err == nil {
			t.Fatal("PutMeta with an empty name succeeded; want it refused")
		}
		if _, err := m.GetMeta(ctx, ""); err == nil || errors.Is(err, idempotency.ErrNotFound) {
			t.Fatalf("GetMeta with an empty name = %v; want it refused", err)
		}
		want := []byte("{\"halted\":true}\x00\xff")
		if err := m.PutMeta(ctx, "halt", want); err != nil {
			t.Fatal(err)
		}
		want[0] = 'X' // the store keeps its own copy
		if err := m.PutMeta(ctx, "watch.cursor", []byte("c1")); err != nil {
			t.Fatal(err)
		}
		m2 := meta(t, again())
		if v, err := m2.GetMeta(ctx, "halt"); err != nil || string(v) != "{\"halted\":true}\x00\xff" {
			t.Fatalf("GetMeta(halt) by another holder = %q, %v; want the value put", v, err)
		}
		if v, err := m2.GetMeta(ctx, "watch.cursor"); err != nil || string(v) != "c1" {
			t.Fatalf("GetMeta(watch.cursor) = %q, %v; want c1", v, err)
		}
		if err := m2.PutMeta(ctx, "halt", []byte("{}")); err != nil {
			t.Fatal(err)
		}
		m3 := meta(t, again())
		if v, err := m3.GetMeta(ctx, "halt"); err != nil || string(v) != "{}" {
			t.Fatalf("GetMeta(halt) after a second put = %q, %v; want {}", v, err)
		}
		if err := m3.PutMeta(ctx, "empty", nil); err != nil {
			t.Fatal(err)
		}
		if v, err := m3.GetMeta(ctx, "empty"); err != nil || len(v) != 0 {
			t.Fatalf("GetMeta of an empty value = %q, %v; want it set and empty", v, err)
		}
	})
	t.Run("concurrent puts", func(t *testing.T) {
		s, _, _ := newStore(t)
		m := meta(t, s)
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				for j := range 10 {
					if err := m.PutMeta(ctx, "n", fmt.Appendf(nil, "%d-%d", i, j)); err != nil {
						t.Error(err)
					}
					if _, err := m.GetMeta(ctx, "n"); err != nil {
						t.Error(err)
					}
				}
			})
		}
		wg.Wait()
		v, err := m.GetMeta(ctx, "n")
		if err != nil || len(v) < 3 || v[len(v)-2] != '-' {
			t.Fatalf("GetMeta after concurrent puts = %q, %v; want one of the values put", v, err)
		}
	})
	t.Run("retention keeps values", func(t *testing.T) {
		s, account, again := newStore(t)
		if err := meta(t, s).PutMeta(ctx, "halt", []byte("on")); err != nil {
			t.Fatal(err)
		}
		// Settled intents long past any retention, then writes that sweep
		// them out.
		old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
		for i := range 40 {
			r := idempotency.Record{ClientOrderID: fmt.Sprintf("00000000-0000-5000-8000-%012d", i), Key: fmt.Sprint("k", i),
				AccountNumber: account, Symbol: "BTC-USD", Fingerprint: "f", State: idempotency.Pending, Body: []byte(`{}`),
				CreatedAt: old, UpdatedAt: old, Holder: "h"}
			if _, _, err := s.Create(ctx, r); err != nil {
				t.Fatal(err)
			}
			r.State, r.UpdatedAt = idempotency.NotPlaced, old
			if err := s.Update(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
		now := old.AddDate(6, 0, 0) // open intents: kept whatever their age
		for i := range 8 {
			r := idempotency.Record{ClientOrderID: fmt.Sprintf("00000000-0000-5000-9000-%012d", i), Key: fmt.Sprint("n", i),
				AccountNumber: account, Symbol: "BTC-USD", Fingerprint: "f", State: idempotency.Pending, Body: []byte(`{}`),
				CreatedAt: now, UpdatedAt: now, Holder: "h"}
			if _, _, err := s.Create(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
		recs, err := s.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if r.ClientOrderID == "halt" || r.Key == "halt" {
				t.Errorf("List shows the named value as an intent: %+v", r)
			}
		}
		if v, err := meta(t, again()).GetMeta(ctx, "halt"); err != nil || string(v) != "on" {
			t.Fatalf("GetMeta after retention's sweep = %q, %v; want on", v, err)
		}
	})
	t.Run("closed", func(t *testing.T) {
		s, _, _ := newStore(t)
		s.Close()
		if err := meta(t, s).PutMeta(ctx, "halt", []byte("x")); !errors.Is(err, idempotency.ErrClosed) {
			t.Errorf("PutMeta on a closed store = %v; want ErrClosed", err)
		}
		if _, err := meta(t, s).GetMeta(ctx, "halt"); !errors.Is(err, idempotency.ErrClosed) {
			t.Errorf("GetMeta on a closed store = %v; want ErrClosed", err)
		}
	})
}
