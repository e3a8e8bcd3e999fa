package redisstore_test

import (
	"context"
	"errors"
	"net/http"
	"runtime"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/tradewire/tradewire/broker"
	"github.com/tradewire/tradewire/broker/brokertest"
	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/idempotency/redisstore"
	"github.com/tradewire/tradewire/internal/redistest"
	"github.com/tradewire/tradewire/orders"
	"github.com/tradewire/tradewire/signing"
	"github.com/tradewire/tradewire/transport"
	"github.com/tradewire/tradewire/venue"
)

// TestTakeoverReconcilesByLookup: process A sends a create that the venue
// commits, and dies before hearing the answer, holding the intent's claim.
// Process B is told "in progress" until A's lease has lapsed and A's
// signature has expired; then B's Place takes the claim over, finds A's
// order by lookup, and sends nothing.
func TestTakeoverReconcilesByLookup(t *testing.T) {
	t.Parallel()
	url := redistest.URL(t)
	clock := clockwork.NewFakeClockAt(time.Now().Add(-time.Hour))
	srv := brokertest.NewServer(venue.Config{Clock: clock, Seed: 11})
	defer srv.Close()
	ns := runID(t)
	const lease = 100 * time.Millisecond
	ctx := context.Background()

	placer := func() (*broker.Client, idempotency.Store) {
		pk, err := signing.ParsePrivateKey(srv.PrivateKeyBase64)
		if err != nil {
			t.Fatal(err)
		}
		signer, _ := signing.New(srv.APIKey, pk)
		tc, err := transport.New(srv.URL, signer, transport.Config{Clock: clock, AttemptTimeout: time.Hour, RoundTripper: http.DefaultTransport.(*http.Transport).Clone()})
		if err != nil {
			t.Fatal(err)
		}
		store, err := redisstore.Open(ctx, url, srv.AccountNumber, redisstore.ShortLeaseForTest(redisstore.Config{Clock: clock}, lease))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { store.Close() })
		p, err := broker.NewFromTransport(tc, broker.Config{
			AccountNumber: srv.AccountNumber,
			IntentStore:   store,
			Orders:        orders.Config{Namespace: ns},
		})
		if err != nil {
			t.Fatal(err)
		}
		return p, store
	}
	a, aStore := placer()
	b, _ := placer()
	cid := a.ClientOrderID("k")
	forgetIntents(t, url, srv.AccountNumber, []string{cid})

	// A's create is committed, and its answer held back on the venue's
	// clock; A dies while waiting: its connection to Redis goes first, so
	// it cannot release its claim, then its work ends.
	if err := srv.Inject(venue.Fault{Kind: "latency", Method: "POST", Delay: time.Minute, AfterCommit: true}); err != nil {
		t.Fatal(err)
	}
	actx, kill := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { _, err := a.Place(actx, "k", buy); errc <- err }()
	for len(srv.Ledger().OrdersByClientID(cid)) == 0 {
		runtime.Gosched()
	}
	aStore.Close()
	kill()
	if err := <-errc; err == nil {
		t.Fatal("A's Place returned an order after its context ended")
	}
	posts := func() int {
		n := 0
		for _, r := range srv.Ledger().Requests() {
			if r.Method == "POST" {
				n++
			}
		}
		return n
	}

	// A's lease lapses, but its signature is still valid: B must not touch it.
	time.Sleep(2 * lease)
	_, err := b.Place(ctx, "k", buy)
	var ip *redisstore.InProgressError
	if !errors.As(err, &ip) || ip.SignaturesExpire.IsZero() {
		t.Fatalf("B's Place while A's signature lives: %v, want *InProgressError with SignaturesExpire", err)
	}
	// Once every signature has expired (30 s + 10 s margin), B takes over,
	// finds A's order by lookup and sends nothing.
	clock.Advance(41 * time.Second)
	o, err := b.Place(ctx, "k", buy)
	if err != nil {
		t.Fatalf("B's Place after A's signature expired: %v", err)
	}
	at := srv.Ledger().OrdersByClientID(cid)
	if len(at) != 1 || o.ID != at[0].ID {
		t.Fatalf("venue holds %v, B returned %s", at, o.ID)
	}
	if n := posts(); n != 1 {
		t.Fatalf("%d creates sent, want A's one", n)
	}
	got, err := redisstoreGet(ctx, url, srv.AccountNumber, cid)
	if err != nil || got.State != idempotency.Acknowledged || got.OrderID != o.ID {
		t.Fatalf("record after takeover: %+v, %v", got, err)
	}
}

func redisstoreGet(ctx context.Context, url, account, cid string) (idempotency.Record, error) {
	s, err := redisstore.Open(ctx, url, account, redisstore.Config{})
	if err != nil {
		return idempotency.Record{}, err
	}
	defer s.Close()
	return s.Get(ctx, cid)
}
