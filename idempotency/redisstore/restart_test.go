package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/tradewire/tradewire/broker"
	"github.com/tradewire/tradewire/broker/brokertest"
	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/idempotency/redisstore"
	"github.com/tradewire/tradewire/internal/redistest"
	"github.com/tradewire/tradewire/venue"
)

// TestRedisRestartMidRun crashes a private redis-server (SIGKILL) while two
// workers, each with its own Store (two processes' worth), place the same
// keys, and starts it again on the same directory: no order is placed
// twice, no intent written before the crash is lost, and every key ends
// with its one order.
func TestRedisRestartMidRun(t *testing.T) {
	if testing.Short() {
		t.Skip("restarts a redis-server")
	}
	rs := redistest.Start(t)
	srv := brokertest.NewServer(venue.Config{Seed: 3, RateLimits: venue.RateLimits{Account: venue.RateLimit{PerMinute: math.Inf(1)}}})
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ns := runID(t)
	const nkeys = 40
	keys := make([]string, nkeys)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%02d", i)
	}
	type worker struct {
		p     *broker.Client
		store idempotency.Store
	}
	var workers []worker
	for i := 0; i < 2; i++ {
		p, store, err := newPlacer(ctx, srv.URL, srv.APIKey, srv.PrivateKeyBase64, srv.AccountNumber, rs.URL(), ns, redisstore.Config{})
		if err != nil {
			t.Fatal(err)
		}
		defer store.Close()
		workers = append(workers, worker{p, store})
	}

	var mu sync.Mutex
	placedBeforeCrash := map[string]string{} // key → order id, returned before the crash
	crashed := false
	acks := make(chan struct{}, 2*nkeys)
	failures := 0
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, k := range keys {
				o, err := w.p.Place(ctx, k, buy)
				mu.Lock()
				switch {
				case err == nil && !crashed:
					placedBeforeCrash[k] = o.ID
				case err != nil && !errors.Is(err, idempotency.ErrInProgress):
					failures++
				}
				mu.Unlock()
				if err == nil {
					acks <- struct{}{}
				}
				time.Sleep(10 * time.Millisecond) // spread the run over the crash
			}
		}()
	}
	// Crash once a third of the keys are through; the intents on record
	// just before the crash are read first.
	for i := 0; i < nkeys/3; i++ {
		<-acks
	}
	before, err := workers[0].store.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	crashed = true
	mu.Unlock()
	rs.Kill()
	time.Sleep(3 * time.Second) // Places fail meanwhile: Redis is down
	rs.Restart()
	wg.Wait()

	// Every intent on record before the crash is still there, no less far
	// along.
	rank := map[idempotency.State]int{idempotency.Pending: 0, idempotency.Unknown: 1,
		idempotency.NotPlaced: 2, idempotency.Rejected: 3, idempotency.Acknowledged: 3}
	for _, rec := range before {
		got, err := workers[1].store.Get(ctx, rec.ClientOrderID)
		if err != nil {
			t.Fatalf("intent %s (%s before the crash) lost: %v", rec.ClientOrderID, rec.State, err)
		}
		if rank[got.State] < rank[rec.State] || got.Sends < rec.Sends || (rec.OrderID != "" && got.OrderID != rec.OrderID) {
			t.Fatalf("intent %s went back: %s/%d sends before the crash, %s/%d after", rec.ClientOrderID, rec.State, rec.Sends, got.State, got.Sends)
		}
	}

	// Finish every key. A Place that Redis's crash cut short may have left
	// its claim behind; its own worker's Store takes that claim up.
	for _, k := range keys {
		var o *broker.Order
		var err error
		for _, w := range workers {
			if o, err = w.p.Place(ctx, k, buy); !errors.Is(err, idempotency.ErrInProgress) {
				break
			}
		}
		if err != nil {
			t.Fatalf("Place(%s) after the restart: %v", k, err)
		}
		if id, ok := placedBeforeCrash[k]; ok && id != o.ID {
			t.Fatalf("key %s: order %s before the crash, %s after", k, id, o.ID)
		}
		cid := workers[0].p.ClientOrderID(k)
		if at := srv.Ledger().OrdersByClientID(cid); len(at) != 1 || at[0].ID != o.ID {
			t.Fatalf("key %s: venue holds %v, Place returned %s", k, at, o.ID)
		}
		if rec, err := workers[0].store.Get(ctx, cid); err != nil || rec.State != idempotency.Acknowledged || rec.OrderID != o.ID {
			t.Fatalf("key %s: record %+v, %v", k, rec, err)
		}
	}
	if dups := srv.Ledger().DuplicateClientIDs(); len(dups) > 0 {
		t.Fatalf("orders placed twice: %v", dups)
	}
	if n := len(srv.Ledger().Orders()); n != nkeys {
		t.Fatalf("%d orders at the venue for %d keys", n, nkeys)
	}
	t.Logf("redis-server killed (SIGKILL) and restarted mid-run: %d intents on record before the crash all present after; %d Places failed while Redis was down; %d keys, %d orders, 0 duplicates",
		len(before), failures, nkeys, len(srv.Ledger().Orders()))
}
