package broker_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/tradewire/tradewire/broker"
	"github.com/tradewire/tradewire/broker/brokertest"
	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/idempotency/redisstore"
	"github.com/tradewire/tradewire/internal/redistest"
	"github.com/tradewire/tradewire/signing"
	"github.com/tradewire/tradewire/transport"
	"github.com/tradewire/tradewire/venue"
)

// haltBudget is the rate budget (requests a minute) of the halt tests'
// clients: the venue's.
const haltBudget = 100

// haltVenue is a simulated venue that creates a second order for a
// reused client_order_id, on a clock that skips every wait of the one
// goroutine that uses it.
func haltVenue(t *testing.T, account ...string) (*brokertest.Server, venue.Clock) {
	t.Helper()
	clk := venue.NewClock(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	clk.SkipWaits(1)
	cfg := venue.Config{Clock: clk, Faults: venue.FaultPlan{Duplicate: venue.CreateSecond}}
	if len(account) > 0 {
		cfg.AccountNumber = account[0] // an account of its own in a shared Redis: a halt there stops no other test
	}
	srv, err := brokertest.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv, clk
}

// haltClient is a Client of srv on clk with the given intent store
// settings, as a process of its own would make it.
func haltClient(t *testing.T, srv *brokertest.Server, clk venue.Clock, cfg broker.Config) *broker.Client {
	t.Helper()
	key, err := signing.ParsePrivateKey(srv.PrivateKeyBase64)
	if err != nil {
		t.Fatal(err)
	}
	cfg.APIKey, cfg.PrivateKey, cfg.BaseURL, cfg.AccountNumber = srv.APIKey, key, srv.URL, srv.AccountNumber
	cfg.Transport = transport.Config{RoundTripper: srv.Client().Transport, Clock: clk, RatePerMinute: haltBudget}
	c, err := broker.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// resting is a limit buy far below the market: it stays open.
func resting() broker.OrderRequest {
	return broker.OrderRequest{Symbol: "BTC-USD", Side: broker.SideBuy, Type: broker.TypeLimit,
		AssetQuantity: decimal.RequireFromString("0.0001"), LimitPrice: decimal.RequireFromString("1000")}
}

// creates counts the create requests the venue received.
func creates(srv *brokertest.Server) int {
	n := 0
	for _, r := range srv.Ledger().Requests() {
		if r.Method == "POST" && !strings.HasSuffix(r.Target, "/cancel/") {
			n++
		}
	}
	return n
}

// wantHalted checks that a Place of key by c is refused as halted, with
// no request sent at all.
func wantHalted(t *testing.T, srv *brokertest.Server, c *broker.Client, key string) {
	t.Helper()
	before := len(srv.Ledger().Requests())
	o, err := c.Place(context.Background(), key, resting())
	if !errors.Is(err, broker.ErrHalted) || !errors.Is(err, broker.ErrNotSent) || errors.Is(err, broker.ErrUnknownOutcome) || o != nil {
		t.Fatalf("Place(%s) on a halted store = %+v, %v; want ErrHalted (and ErrNotSent), no order", key, o, err)
	}
	if n := len(srv.Ledger().Requests()) - before; n != 0 {
		t.Fatalf("Place(%s) on a halted store sent %d requests; want none", key, n)
	}
}

// TestHaltStopsEveryHolder: after one Client halts the store, the next
// create from another Client sharing it (in memory; on Redis a Client
// with a Store of its own, as another process has) is refused, with
// nothing sent; Resume lets Place through again. (The one-second bound is
// TestHaltReachesEveryPlacerWithinASecond, in package orders.)
func TestHaltStopsEveryHolder(t *testing.T) {
	for _, tc := range []struct {
		name  string
		redis bool
		open  func(t *testing.T, account string) idempotency.Store // one holder's store
	}{
		{"memory", false, func() func(*testing.T, string) idempotency.Store {
			shared := idempotency.NewMemoryStore()
			return func(*testing.T, string) idempotency.Store { return shared }
		}()},
		{"redis, two processes", true, func(t *testing.T, account string) idempotency.Store {
			s, err := redisstore.Open(context.Background(), redistest.URL(t), account, redisstore.Config{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var account []string
			if tc.redis {
				account = append(account, redistest.Account(t, redistest.URL(t)))
			}
			srv, clk := haltVenue(t, account...)
			ctx := context.Background()
			a := haltClient(t, srv, clk, broker.Config{IntentStore: tc.open(t, srv.AccountNumber)})
			b := haltClient(t, srv, clk, broker.Config{IntentStore: tc.open(t, srv.AccountNumber)})
			if _, err := b.Place(ctx, "before", resting()); err != nil {
				t.Fatal(err)
			}
			rep, err := a.Halt(ctx)
			if err != nil || len(rep.Canceled) != 1 || len(rep.Open) != 0 {
				t.Fatalf("Halt = %+v, %v; want b's order canceled", rep, err)
			}
			createsBefore := creates(srv)
			wantHalted(t, srv, b, "after") // another holder
			wantHalted(t, srv, a, "after") // the halting one
			if n := creates(srv); n != createsBefore {
				t.Fatalf("%d creates reached the venue after the halt", n-createsBefore)
			}
			if err := b.Resume(ctx); err != nil {
				t.Fatal(err)
			}
			clk.Advance(time.Second)
			for _, c := range []*broker.Client{a, b} {
				o, err := c.Place(ctx, "after", resting())
				if err != nil || o.State != broker.StateOpen {
					t.Fatalf("Place after Resume = %+v, %v; want it placed", o, err)
				}
			}
			if got := srv.Ledger().OrdersByClientID(a.ClientOrderID("after")); len(got) != 1 {
				t.Fatalf("the key placed after Resume has %d orders; want 1", len(got))
			}
		})
	}
}

// TestHaltCancelsEveryOpenOrder: Halt cancels each of N open orders once,
// paging through the list, within ⌈N / budget⌉ minutes + 5 s of the
// client's clock, and nothing stays open.
func TestHaltCancelsEveryOpenOrder(t *testing.T) {
	const n = 250
	srv, clk := haltVenue(t)
	ctx := context.Background()
	c := haltClient(t, srv, clk, broker.Config{IntentStore: idempotency.NewMemoryStore()})
	for i := range n {
		if _, err := c.Place(ctx, fmt.Sprint("o", i), resting()); err != nil {
			t.Fatal(err)
		}
	}
	start := clk.Now()
	rep, err := c.Halt(ctx)
	if err != nil {
		t.Fatal(err)
	}
	took := clk.Now().Sub(start)
	bound := time.Duration((n+haltBudget-1)/haltBudget)*time.Minute + 5*time.Second
	t.Logf("Halt canceled %d open orders in %v of the clock (bound %v)", len(rep.Canceled), took, bound)
	if took > bound {
		t.Errorf("Halt took %v; want at most %v", took, bound)
	}
	if len(rep.Canceled) != n || len(rep.Open) != 0 {
		t.Fatalf("Halt canceled %d and left %d open; want %d canceled", len(rep.Canceled), len(rep.Open), n)
	}
	cancels := map[string]int{}
	for _, r := range srv.Ledger().Requests() {
		if r.Method == "POST" && strings.HasSuffix(r.Target, "/cancel/") {
			cancels[r.Target]++
		}
	}
	if len(cancels) != n {
		t.Errorf("%d orders got a cancel; want %d", len(cancels), n)
	}
	for target, k := range cancels {
		if k != 1 {
			t.Errorf("%s sent %d times", target, k)
		}
	}
	for _, st := range []broker.OrderState{broker.StateOpen, broker.StatePartiallyFilled, broker.StatePending} {
		open, err := broker.Collect(c.Orders(ctx, broker.OrderFilter{State: st}, broker.Paging{MaxPages: 100}))
		if err != nil || len(open) != 0 {
			t.Fatalf("%s orders after Halt: %d, %v; want none", st, len(open), err)
		}
	}
}

// TestHaltSurvivesRestart: a bbolt store halted, closed and opened again
// by a new process is still halted, until Resume.
func TestHaltSurvivesRestart(t *testing.T) {
	srv, clk := haltVenue(t)
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "intents.db")
	c := haltClient(t, srv, clk, broker.Config{IntentStoreFile: path})
	if _, err := c.Place(ctx, "k0", resting()); err != nil {
		t.Fatal(err)
	}
	if rep, err := c.Halt(ctx); err != nil || len(rep.Canceled) != 1 {
		t.Fatalf("Halt = %+v, %v", rep, err)
	}
	c.Close()
	c = haltClient(t, srv, clk, broker.Config{IntentStoreFile: path})
	wantHalted(t, srv, c, "k1")
	if err := c.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	c.Close()
	c = haltClient(t, srv, clk, broker.Config{IntentStoreFile: path})
	if o, err := c.Place(ctx, "k1", resting()); err != nil || o.State != broker.StateOpen {
		t.Fatalf("Place after Resume and a restart = %+v, %v", o, err)
	}
}

// TestHaltReportsWhatStaysOpen: an order whose cancel the venue refuses
// every time is reported open, with the venue's refusal.
func TestHaltReportsWhatStaysOpen(t *testing.T) {
	srv, clk := haltVenue(t)
	ctx := context.Background()
	c := haltClient(t, srv, clk, broker.Config{IntentStore: idempotency.NewMemoryStore()})
	if _, err := c.Place(ctx, "k", resting()); err != nil {
		t.Fatal(err)
	}
	if err := srv.Inject(venue.Fault{Kind: "respond", Method: "POST", Path: "/api/v2/crypto/trading/orders/*/cancel/", Status: 503, Times: 10}); err != nil {
		t.Fatal(err)
	}
	rep, err := c.Halt(ctx)
	if err != nil || len(rep.Canceled) != 0 || len(rep.Open) != 1 || !errors.Is(rep.Open[0].Err, broker.ErrUnknownOutcome) {
		t.Fatalf("Halt = %+v, %v; want the order reported open, its cancel's outcome unknown", rep, err)
	}
	if n := srv.Ledger().Counts().ByStatus[503]; n != 3 {
		t.Errorf("%d cancels sent; want 3, the tries Halt makes", n)
	}
}

// TestHaltStopsAPlaceUnderWay: a Place that checked the store before the
// halt, and is still reading the venue (its lookup before the first
// send) when the halt lands, checks again just before its create leaves,
// and sends nothing.
func TestHaltStopsAPlaceUnderWay(t *testing.T) {
	srv, clk := haltVenue(t)
	clk.SkipWaits(0)
	ctx := context.Background()
	store := idempotency.NewMemoryStore() // it does not vouch for newness: Place looks the key up first
	a := haltClient(t, srv, clk, broker.Config{IntentStore: store})
	b := haltClient(t, srv, clk, broker.Config{IntentStore: store})
	if _, err := b.Account(ctx); err != nil {
		t.Fatal(err)
	}
	if err := srv.Inject(venue.Fault{Kind: "latency", Method: "GET", Path: "/api/v2/crypto/trading/orders/", Delay: 3 * time.Second}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := b.Place(ctx, "k", resting())
		done <- err
	}()
	if err := clk.BlockUntilContext(ctx, 1); err != nil { // b's lookup, held at the venue
		t.Fatal(err)
	}
	halted := make(chan error, 1)
	go func() {
		rep, err := a.Halt(ctx)
		if err == nil && len(rep.Canceled)+len(rep.Open) != 0 {
			err = fmt.Errorf("Halt = %+v; want nothing to cancel", rep)
		}
		halted <- err
	}()
	if err := clk.BlockUntilContext(ctx, 2); err != nil { // and a, waiting between its listings
		t.Fatal(err)
	}
	clk.SkipWaits(1)
	if err := <-halted; err != nil {
		t.Fatal(err)
	}
	err := <-done
	if !errors.Is(err, broker.ErrHalted) || errors.Is(err, broker.ErrUnknownOutcome) {
		t.Fatalf("Place under way when the store was halted = %v; want ErrHalted", err)
	}
	if n := creates(srv); n != 0 {
		t.Fatalf("%d creates sent; want none", n)
	}
}
