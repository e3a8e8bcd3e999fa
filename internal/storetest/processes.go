package storetest

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/internal/claim"
)

// Processes checks the claim rules between the processes of a shared
// store (Redis, PostgreSQL), each with a Store of its own on one account:
// a second process's Create of a held intent is refused with a
// *claim.InProgressError that names the holder and its lease, while the
// holder gets the record back; and of many processes racing to create one
// key, exactly one creates it. newAccount returns a fresh account and a
// function that opens one process's Store on it; owner returns the id a
// Store claims under; clock is the clock the Stores run on (their leases
// are judged on it).
func Processes(t *testing.T, clock clockwork.Clock, newAccount func(t *testing.T) (newProcess func() idempotency.Store, account string), owner func(idempotency.Store) string) {
	record := func(account, cid string) idempotency.Record {
		now := clock.Now()
		return idempotency.Record{ClientOrderID: cid, Key: "k-" + cid, AccountNumber: account, Symbol: "BTC-USD",
			Fingerprint: "fp", State: idempotency.Pending, Body: []byte(`{"client_order_id":"` + cid + `"}`),
			Target: "/api/v2/crypto/trading/orders/?account_number=" + account, CreatedAt: now, UpdatedAt: now}
	}
	t.Run("create claims once", func(t *testing.T) {
		t.Parallel()
		newProcess, acct := newAccount(t)
		ctx := context.Background()
		a, b := newProcess(), newProcess()
		rec := record(acct, "c1")
		got, created, err := a.Create(ctx, rec)
		if err != nil || !created || got.ClientOrderID != "c1" {
			t.Fatalf("first Create = %v, %v, %v", got.ClientOrderID, created, err)
		}
		_, created, err = b.Create(ctx, rec)
		var ip *claim.InProgressError
		if !errors.As(err, &ip) || !errors.Is(err, idempotency.ErrInProgress) || created {
			t.Fatalf("second process's Create: created %v, err %v; want *InProgressError", created, err)
		}
		if !strings.HasPrefix(ip.Owner, owner(a)+"/") || ip.ClientOrderID != "c1" || ip.LeaseExpires.Before(clock.Now()) || !ip.SignaturesExpire.IsZero() {
			t.Fatalf("InProgressError = %+v, want held by %s", ip, owner(a))
		}
		if msg := err.Error(); !strings.Contains(msg, owner(a)) || !strings.Contains(msg, "c1") ||
			!strings.Contains(msg, ip.LeaseExpires.UTC().Format(time.RFC3339Nano)) {
			t.Fatalf("message %q does not name the holder %s and its lease", msg, owner(a))
		}
		// The holder itself gets the record back (orders serialises its
		// own callers per key).
		if got, created, err := a.Create(ctx, rec); err != nil || created || got.State != idempotency.Pending {
			t.Fatalf("holder's second Create = %+v, %v, %v", got, created, err)
		}
	})
	t.Run("concurrent create", func(t *testing.T) {
		t.Parallel()
		newProcess, acct := newAccount(t)
		const n = 16
		stores := make([]idempotency.Store, n)
		for i := range stores {
			stores[i] = newProcess()
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		won, busy := 0, 0
		rec := record(acct, "race")
		start := make(chan struct{})
		for _, s := range stores {
			wg.Go(func() {
				<-start
				_, created, err := s.Create(context.Background(), rec)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil && created:
					won++
				case errors.Is(err, idempotency.ErrInProgress):
					busy++
				default:
					t.Errorf("Create: created %v, err %v", created, err)
				}
			})
		}
		close(start)
		wg.Wait()
		if won != 1 || busy != n-1 {
			t.Fatalf("%d created, %d in progress; want 1 and %d", won, busy, n-1)
		}
	})
}
