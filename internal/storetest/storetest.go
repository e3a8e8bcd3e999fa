// Package storetest holds the claim rules every idempotency.Store keeps,
// as one test run against each store (bbolt, memory, Redis), so that the
// rule is written once.
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

// Claims checks the claim rules of idempotency.Store on stores made by
// newStore, each empty and returned with the account it keeps: a second holder is refused
// (in progress) and writes nothing, whoever it is; only the holder
// updates; a release or a final state frees the intent for the next
// holder; a resolved intent is returned to anyone and held by nobody.
func Claims(t *testing.T, newStore func(t *testing.T) (idempotency.Store, string)) {
	ctx := context.Background()
	t0 := time.Date(2026, 11, 2, 14, 0, 0, 0, time.UTC)
	var account string
	rec := func(holder string) idempotency.Record {
		return idempotency.Record{ClientOrderID: "ae6ec0cf-288b-51fc-ba4f-34c2c5b23ed0", Key: "k", AccountNumber: account,
			Symbol: "BTC-USD", Fingerprint: "f1", State: idempotency.Pending, Body: []byte(`{"a":1}`),
			CreatedAt: t0, UpdatedAt: t0, Holder: holder}
	}
	t.Run("one holder at a time", func(t *testing.T) {
		s, acct := newStore(t)
		account = acct
		if _, created, err := s.Create(ctx, rec("a")); err != nil || !created {
			t.Fatalf("Create(a) = %v, %v; want created", created, err)
		}
		b := rec("b")
		b.Fingerprint = "f2"
		if _, _, err := s.Create(ctx, b); !errors.Is(err, idempotency.ErrInProgress) {
			t.Fatalf("Create(b) while a holds it = %v; want ErrInProgress", err)
		}
		got, err := s.Get(ctx, b.ClientOrderID)
		if err != nil || got.Fingerprint != "f1" || got.Holder != "" {
			t.Fatalf("Get = %+v, %v; want a's record, and no holder shown", got, err)
		}
		if err := s.Update(ctx, b); !errors.Is(err, idempotency.ErrClaimLost) {
			t.Fatalf("Update by b = %v; want ErrClaimLost", err)
		}
		a := rec("a")
		a.Sends, a.LastSignedAt, a.FirstSentAt = 1, t0, t0
		if err := s.Update(ctx, a); err != nil {
			t.Fatalf("Update by a = %v", err)
		}
		if got, created, err := s.Create(ctx, rec("a")); err != nil || created || got.Sends != 1 || got.Holder != "a" {
			t.Fatalf("Create(a) again = %+v, %v, %v; want a's record, still a's", got, created, err)
		}
		if err := s.Release(ctx, a.ClientOrderID, "b"); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Create(ctx, rec("b")); !errors.Is(err, idempotency.ErrInProgress) {
			t.Fatalf("Create(b) after b released what it did not hold = %v; want ErrInProgress", err)
		}
		if err := s.Release(ctx, a.ClientOrderID, "a"); err != nil {
			t.Fatal(err)
		}
		got, created, err := s.Create(ctx, rec("b"))
		if err != nil || created || got.Holder != "b" || got.Sends != 1 {
			t.Fatalf("Create(b) after a released = %+v, %v, %v; want the record, held by b", got, created, err)
		}
		if err := s.Update(ctx, a); !errors.Is(err, idempotency.ErrClaimLost) {
			t.Fatalf("Update by a after it released = %v; want ErrClaimLost", err)
		}
		got.State = idempotency.NotPlaced
		if err := s.Update(ctx, got); err != nil {
			t.Fatal(err)
		}
		got, _, err = s.Create(ctx, rec("c"))
		if err != nil || got.Holder != "c" || got.State != idempotency.NotPlaced {
			t.Fatalf("Create(c) of a not placed intent = %+v, %v; want it, held by c", got, err)
		}
		got.State, got.OrderID = idempotency.Acknowledged, "o-1"
		if err := s.Update(ctx, got); err != nil {
			t.Fatal(err)
		}
		got, created, err = s.Create(ctx, rec("d"))
		if err != nil || created || got.State != idempotency.Acknowledged || got.Holder != "" {
			t.Fatalf("Create(d) of an acknowledged intent = %+v, %v, %v; want it, held by nobody", got, created, err)
		}
		if err := s.Update(ctx, got); !errors.Is(err, idempotency.ErrClaimLost) {
			t.Fatalf("Update of an acknowledged intent by nobody's holder = %v; want ErrClaimLost", err)
		}
	})
	t.Run("racing holders", func(t *testing.T) {
		s, acct := newStore(t)
		account = acct
		const keys, holders = 50, 4
		var mu sync.Mutex
		won := map[string]int{}
		var wg sync.WaitGroup
		for h := range holders {
			wg.Go(func() {
				for k := range keys {
					r := rec(fmt.Sprint("h", h))
					r.ClientOrderID = fmt.Sprintf("00000000-0000-5000-8000-%012d", k)
					_, _, err := s.Create(ctx, r)
					switch {
					case err == nil:
						mu.Lock()
						won[r.ClientOrderID]++
						mu.Unlock()
					case !errors.Is(err, idempotency.ErrInProgress):
						t.Error(err)
					}
				}
			})
		}
		wg.Wait()
		for id, n := range won {
			if n != 1 {
				t.Errorf("%s was claimed by %d holders at once; want 1", id, n)
			}
		}
		if len(won) != keys {
			t.Errorf("%d keys claimed; want %d", len(won), keys)
		}
	})
}
