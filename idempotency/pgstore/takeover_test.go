package pgstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/shopspring/decimal"

	"github.com/tradewire/tradewire/broker"
	"github.com/tradewire/tradewire/broker/brokertest"
	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/idempotency/pgstore"
	"github.com/tradewire/tradewire/internal/pgtest"
	"github.com/tradewire/tradewire/orders"
	"github.com/tradewire/tradewire/signing"
	"github.com/tradewire/tradewire/transport"
	"github.com/tradewire/tradewire/venue"
)

var buy = broker.OrderRequest{Symbol: "BTC-USD", Side: broker.SideBuy, Type: broker.TypeMarket, AssetQuantity: decimal.RequireFromString("0.0001")}

// TestTakeoverReconcilesByLookup: process A sends a create that the venue
// commits, and dies before hearing the answer, holding the intent's claim.
// Process B is told "in progress" until A's lease has lapsed and A's
// signature has expired; then B's Place takes the claim over, finds A's
// order by lookup, and sends nothing. The venue creates a second order
// for a reused client_order_id; over loopback HTTP/1.1 and TLS + HTTP/2.
func TestTakeoverReconcilesByLookup(t *testing.T) {
	t.Parallel()
	for _, overTLS := range []bool{false, true} {
		t.Run(map[bool]string{false: "HTTP/1.1", true: "TLS + HTTP/2"}[overTLS], func(t *testing.T) {
			t.Parallel()
			testTakeover(t, overTLS)
		})
	}
}

func testTakeover(t *testing.T, overTLS bool) {
	url := pgtest.URL(t)
	clock := clockwork.NewFakeClockAt(time.Now().Add(-time.Hour))
	serve := brokertest.NewServer
	if overTLS {
		serve = brokertest.NewTLSServer
	}
	srv := serve(venue.Config{Clock: clock, Seed: 11, Faults: venue.FaultPlan{Duplicate: venue.CreateSecond}})
	defer srv.Close()
	var ns [6]byte
	rand.Read(ns[:])
	const lease = 100 * time.Millisecond
	ctx := context.Background()

	namespace := t.Name() + "-" + hex.EncodeToString(ns[:])
	placer := func() (*broker.Client, idempotency.Store) {
		store := open(t, url, srv.AccountNumber, pgstore.ShortLeaseForTest(pgstore.Config{Clock: clock}, lease))
		return client(t, srv, clock, store, namespace), store
	}
	a, aStore := placer()
	b, bStore := placer()
	cid := a.ClientOrderID("k")

	// A's create is committed, and its answer held back on the venue's
	// clock; A dies while waiting: its connections go first, so it cannot
	// release its claim, then its work ends.
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
	time.Sleep(2 * lease) // the server's clock is real
	_, err := b.Place(ctx, "k", buy)
	var ip *pgstore.InProgressError
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
	got, err := bStore.Get(ctx, cid)
	if err != nil || got.State != idempotency.Acknowledged || got.OrderID != o.ID {
		t.Fatalf("record after takeover: %+v, %v", got, err)
	}
}

// client is a broker.Client of srv's account on store.
func client(t *testing.T, srv *brokertest.Server, clock clockwork.Clock, store idempotency.Store, namespace string) *broker.Client {
	t.Helper()
	pk, err := signing.ParsePrivateKey(srv.PrivateKeyBase64)
	if err != nil {
		t.Fatal(err)
	}
	signer, _ := signing.New(srv.APIKey, pk)
	tc, err := transport.New(srv.URL, signer, transport.Config{Clock: clock, AttemptTimeout: time.Hour, RoundTripper: srv.Client().Transport})
	if err != nil {
		t.Fatal(err)
	}
	p, err := broker.NewFromTransport(tc, broker.Config{AccountNumber: srv.AccountNumber, IntentStore: store, Orders: orders.Config{Namespace: namespace}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRequestsPerPlace: on a store that vouches (a synchronous standby)
// each Place of a new key is one request, the create; on one that does
// not (an asynchronous standby) the Placer looks the symbol up first.
func TestRequestsPerPlace(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		url      func(t *testing.T) string
		perPlace int
	}{
		{"synchronous standby", func(t *testing.T) string { return pgtest.URL(t) }, 1},
		{"asynchronous standby", func(t *testing.T) string { return pgtest.Start(t, pgtest.AsyncStandby).URL() }, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clock := clockwork.NewFakeClockAt(time.Now())
			srv := brokertest.NewServer(venue.Config{Clock: clock, Seed: 5, Faults: venue.FaultPlan{Duplicate: venue.CreateSecond}})
			defer srv.Close()
			var ns [6]byte
			rand.Read(ns[:])
			c := client(t, srv, clock, open(t, tc.url(t), srv.AccountNumber, pgstore.Config{Clock: clock}), t.Name()+"-"+hex.EncodeToString(ns[:]))
			const places = 5
			for i := range places {
				if _, err := c.Place(context.Background(), fmt.Sprint("k", i), buy); err != nil {
					t.Fatal(err)
				}
			}
			var reqs []string
			for _, r := range srv.Ledger().Requests() {
				if !strings.Contains(r.Target, "/trading_pairs/") { // the symbol's rules, read once
					reqs = append(reqs, r.Method+" "+r.Target)
				}
			}
			if len(reqs) != places*tc.perPlace {
				t.Fatalf("%d requests for %d Places; want %d each: %q", len(reqs), places, tc.perPlace, reqs)
			}
		})
	}
}
