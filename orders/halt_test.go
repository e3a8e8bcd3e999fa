package orders_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/tradewire/tradewire/broker/brokertest"
	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/idempotency/redisstore"
	"github.com/tradewire/tradewire/internal/redistest"
	"github.com/tradewire/tradewire/orders"
	"github.com/tradewire/tradewire/signing"
	"github.com/tradewire/tradewire/transport"
	"github.com/tradewire/tradewire/venue"
)

// TestHaltReachesEveryPlacerWithinASecond: a Placer that read the store's
// halt record (not halted) at the instant another Placer sharing the
// store halted it refuses its next create one second later, with nothing
// sent, on a venue that creates a second order for a reused
// client_order_id; Resume lets it place again a second later. In memory
// the Placers share one store; on Redis each has a Store of its own, as
// two processes of a fleet do.
func TestHaltReachesEveryPlacerWithinASecond(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		s := idempotency.NewMemoryStore()
		haltReaches(t, "", func(string) idempotency.Store { return s })
	})
	t.Run("redis, two processes", func(t *testing.T) {
		url := redistest.URL(t)
		// An account of its own: a halt in a shared Redis stops no other test.
		haltReaches(t, redistest.Account(t, url), func(account string) idempotency.Store {
			s, err := redisstore.Open(context.Background(), url, account, redisstore.Config{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		})
	})
}

func haltReaches(t *testing.T, account string, open func(account string) idempotency.Store) {
	clk := venue.NewClock(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	clk.SkipWaits(1)
	srv, err := brokertest.New(venue.Config{Clock: clk, AccountNumber: account, RateLimits: venue.RateLimits{Account: venue.RateLimit{PerMinute: math.Inf(1)}},
		Faults: venue.FaultPlan{Duplicate: venue.CreateSecond}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	key, _ := signing.ParsePrivateKey(srv.PrivateKeyBase64)
	signer, _ := signing.New(srv.APIKey, key)
	tc, err := transport.New(srv.URL, signer, transport.Config{RoundTripper: srv.Client().Transport, RatePerMinute: -1, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	a, err := orders.New(tc, open(srv.AccountNumber), srv.AccountNumber, codec{}, orders.Config{})
	if err != nil {
		t.Fatal(err)
	}
	store := open(srv.AccountNumber)
	b, err := orders.New(tc, store, srv.AccountNumber, codec{}, orders.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := b.Resume(ctx); err != nil { // b has read the record: not halted
		t.Fatal(err)
	}
	if err := a.Halt(ctx); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	before := len(srv.Ledger().Requests())
	_, err = b.Place(ctx, "k", handBuy)
	var oe *orders.Error
	if !errors.Is(err, orders.ErrHalted) || !errors.Is(err, transport.ErrNotSent) || !errors.As(err, &oe) || oe.ClientOrderID != b.ClientOrderID("k") {
		t.Fatalf("Place a second after another Placer halted the store = %v; want ErrHalted naming the client_order_id", err)
	}
	if n := len(srv.Ledger().Requests()) - before; n != 0 {
		t.Fatalf("the refused Place sent %d requests; want none", n)
	}
	if _, err := store.Get(ctx, b.ClientOrderID("k")); !errors.Is(err, idempotency.ErrNotFound) {
		t.Fatalf("the refused Place recorded an intent: %v", err)
	}
	if err := a.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	if _, err := b.Place(ctx, "k", handBuy); err != nil {
		t.Fatalf("Place a second after Resume = %v", err)
	}
	if n := len(srv.Ledger().OrdersByClientID(b.ClientOrderID("k"))); n != 1 {
		t.Fatalf("%d orders for the key; want 1", n)
	}
}

// TestHaltNeedsMeta: a store without named values cannot be halted, and
// says so; its Placers place as before.
func TestHaltNeedsMeta(t *testing.T) {
	p, _, _ := placement(t, func(s idempotency.Store) idempotency.Store { return &writeLog{Store: s} }, nil)
	if err := p.Halt(context.Background()); err == nil {
		t.Fatal("Halt of a store without idempotency.Meta succeeded")
	}
	if _, err := p.Place(context.Background(), "k", handBuy); err != nil {
		t.Fatal(err)
	}
}
