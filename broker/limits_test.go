package broker_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
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

// limitsVenue is a simulated venue on a fake clock that creates a second
// order for a reused client_order_id, served over loopback HTTP/1.1 or,
// with overTLS, over TLS + HTTP/2, for Clients built by client.
type limitsVenue struct {
	srv *brokertest.Server
	clk venue.Clock
}

func newLimitsVenue(t *testing.T, overTLS bool, account ...string) *limitsVenue {
	t.Helper()
	clk := venue.NewClock(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	cfg := venue.Config{Clock: clk, Faults: venue.FaultPlan{Duplicate: venue.CreateSecond}}
	if len(account) > 0 {
		cfg.AccountNumber = account[0]
	}
	serve := brokertest.NewServer
	if overTLS {
		serve = brokertest.NewTLSServer
	}
	srv := serve(cfg)
	t.Cleanup(srv.Close)
	return &limitsVenue{srv: srv, clk: clk}
}

// client returns a Client of the venue's account with limits, recording
// intents in store (a bolt file of its own when nil).
func (v *limitsVenue) client(t *testing.T, limits broker.Limits, store idempotency.Store) *broker.Client {
	t.Helper()
	key, err := signing.ParsePrivateKey(v.srv.PrivateKeyBase64)
	if err != nil {
		t.Fatal(err)
	}
	cfg := broker.Config{APIKey: v.srv.APIKey, PrivateKey: key, BaseURL: v.srv.URL, AccountNumber: v.srv.AccountNumber,
		Limits: limits, IntentStore: store}
	if store == nil {
		cfg.IntentStoreFile = t.TempDir() + "/intents.db"
	}
	cfg.Transport.RoundTripper = v.srv.Client().Transport
	cfg.Transport.Clock = v.clk
	c, err := broker.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// requests returns the requests the venue received from the n-th on, as
// "METHOD path?query".
func (v *limitsVenue) requests(from int) []string {
	var out []string
	for _, r := range v.srv.Ledger().Requests()[from:] {
		out = append(out, r.Method+" "+r.Target)
	}
	return out
}

func (v *limitsVenue) creates() int {
	n := 0
	for _, r := range v.srv.Ledger().Requests() {
		if r.Method == "POST" && strings.HasPrefix(r.Target, "/api/v2/crypto/trading/orders/?") {
			n++
		}
	}
	return n
}

func dec(s string) decimal.Decimal { return decimal.RequireFromString(s) }

func marketBuy(qty string) broker.OrderRequest {
	return broker.OrderRequest{Symbol: "BTC-USD", Side: broker.SideBuy, Type: broker.TypeMarket, AssetQuantity: dec(qty)}
}

// wantDenied checks that err is the refusal of limit, as a bot reads it.
func wantDenied(t *testing.T, err error, limit string) *broker.LimitError {
	t.Helper()
	var le *broker.LimitError
	if !errors.As(err, &le) || le.Limit != limit {
		t.Fatalf("err = %v; want a *LimitError of %s", err, limit)
	}
	if !errors.Is(err, broker.ErrInvalidRequest) || errors.Is(err, broker.ErrUnknownOutcome) {
		t.Fatalf("err = %v; want it to match ErrInvalidRequest alone", err)
	}
	if !strings.Contains(err.Error(), "not placed") || le.Value == "" || le.Setting == "" {
		t.Fatalf("err = %q (%+v); want the value, the setting, and that it was not placed", err, le)
	}
	return le
}

// TestLimitDenialSendsNothing: an order a limit refuses sends nothing at
// all but the estimate a market order is valued at; the account's limits
// read the intent store (and, for open orders, the open orders as last
// listed, fresh here) alone. Each refusal is counted.
func TestLimitDenialSendsNothing(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name   string
		limits broker.Limits
		before []broker.OrderRequest // placed first, and let through
		req    broker.OrderRequest
		limit  string
		reads  []string // the requests the refusal may send: path prefixes of GETs
	}{
		{name: "symbols", limits: broker.Limits{Symbols: []string{"ETH-USD"}}, req: limitBuy(), limit: "symbols"},
		{name: "order notional, limit price", limits: broker.Limits{MaxOrderNotional: dec("29.99")}, req: limitBuy(), limit: "max_order_notional"},
		{name: "order notional, stop price", limits: broker.Limits{MaxOrderNotional: dec("10")},
			req:   broker.OrderRequest{Symbol: "BTC-USD", Side: broker.SideSell, Type: broker.TypeStopLoss, AssetQuantity: dec("0.001"), StopPrice: dec("20000")},
			limit: "max_order_notional"},
		{name: "order notional, quote amount", limits: broker.Limits{MaxOrderNotional: dec("10")},
			req:   broker.OrderRequest{Symbol: "BTC-USD", Side: broker.SideBuy, Type: broker.TypeLimit, QuoteAmount: dec("11"), LimitPrice: dec("30000")},
			limit: "max_order_notional"},
		{name: "order notional, market", limits: broker.Limits{MaxOrderNotional: dec("10")}, req: marketBuy("0.001"), limit: "max_order_notional",
			reads: []string{"/api/v2/crypto/trading/estimated_price/?"}},
		{name: "order quantity", limits: broker.Limits{MaxOrderQuantity: dec("0.0009")}, req: limitBuy(), limit: "max_order_quantity"},
		{name: "order quantity, quote amount", limits: broker.Limits{MaxOrderQuantity: dec("0.0001")},
			req:   broker.OrderRequest{Symbol: "BTC-USD", Side: broker.SideBuy, Type: broker.TypeLimit, QuoteAmount: dec("30"), LimitPrice: dec("30000")},
			limit: "max_order_quantity"},
		{name: "daily notional", limits: broker.Limits{MaxDailyNotional: dec("50")}, before: []broker.OrderRequest{limitBuy()}, req: limitBuy(), limit: "max_daily_notional"},
		{name: "open orders", limits: broker.Limits{MaxOpenOrders: 2}, before: []broker.OrderRequest{limitBuy(), limitBuy()}, req: limitBuy(), limit: "max_open_orders"},
	}
	for _, tc := range cases {
		for _, overTLS := range []bool{false, true} {
			wire := map[bool]string{false: "HTTP/1.1", true: "TLS + HTTP/2"}[overTLS]
			t.Run(tc.name+", "+wire, func(t *testing.T) {
				v := newLimitsVenue(t, overTLS)
				c := v.client(t, tc.limits, nil)
				for i, req := range tc.before {
					if _, err := c.Place(ctx, fmt.Sprint("before-", i), req); err != nil {
						t.Fatalf("an order within the limit: %v", err)
					}
				}
				for i, key := range []string{"k", ""} { // a key, and none
					from, creates := len(v.srv.Ledger().Requests()), v.creates()
					_, err := c.Place(ctx, key, tc.req)
					wantDenied(t, err, tc.limit)
					if n := v.creates() - creates; n != 0 {
						t.Fatalf("%d creates sent for a refused order", n)
					}
					for _, r := range v.requests(from) {
						ok := false
						for _, p := range tc.reads {
							ok = ok || strings.HasPrefix(r, "GET "+p)
						}
						if !ok {
							t.Errorf("the refusal sent %s", r)
						}
					}
					if got := c.LimitDenials(); got != uint64(i+1) {
						t.Fatalf("LimitDenials = %d; want %d", got, i+1)
					}
				}
				// Preview reports what Place refuses.
				p, err := c.Preview(ctx, tc.req)
				if err != nil {
					t.Fatal(err)
				}
				found := false
				for _, vi := range p.Violations {
					found = found || vi.Code == tc.limit
				}
				if !found {
					t.Fatalf("Preview's violations %v; want %s", p.Violations, tc.limit)
				}
			})
		}
	}
}

func TestLimitsLetThrough(t *testing.T) {
	ctx := context.Background()
	v := newLimitsVenue(t, false)
	store := idempotency.NewMemoryStore()
	c := v.client(t, broker.Limits{Symbols: []string{"BTC-USD"}, MaxOrderNotional: dec("30"), MaxOrderQuantity: dec("0.001"),
		MaxDailyNotional: dec("60"), MaxOpenOrders: 2}, store)
	for i := range 2 {
		p, err := c.Preview(ctx, limitBuy())
		if err != nil || !p.OK() {
			t.Fatalf("Preview: %v, %v", err, p.Violations)
		}
		if _, err := c.Place(ctx, fmt.Sprint("k", i), limitBuy()); err != nil {
			t.Fatal(err)
		}
	}
	if c.LimitDenials() != 0 || v.creates() != 2 {
		t.Fatalf("denials %d, creates %d", c.LimitDenials(), v.creates())
	}
	// The same keys again are answered as placed, whatever the limits
	// say now: a refusal would say "not placed", which is not true.
	strict := v.client(t, broker.Limits{MaxOrderNotional: dec("1"), MaxOpenOrders: 1}, store)
	for i := range 2 {
		if o, err := strict.Place(ctx, fmt.Sprint("k", i), limitBuy()); err != nil || o == nil {
			t.Fatalf("an acknowledged key again: %v", err)
		}
	}
	_, err := strict.Place(ctx, "k2", limitBuy())
	wantDenied(t, err, "max_order_notional")
	if v.creates() != 2 {
		t.Fatalf("creates %d; want 2", v.creates())
	}
}

// TestLimitsRefuseNegative: a negative limit or a bad symbol is refused
// by New.
func TestLimitsRefuseNegative(t *testing.T) {
	for _, l := range []broker.Limits{{MaxOrderNotional: dec("-1")}, {MaxOrderQuantity: dec("-1")}, {MaxDailyNotional: dec("-1")}, {MaxOpenOrders: -1}, {Symbols: []string{"btc"}}} {
		_, err := broker.New(broker.Config{APIKey: "k", PrivateKey: mustKey(t), Limits: l})
		var ae *broker.ArgumentError
		if !errors.As(err, &ae) || !strings.HasPrefix(ae.Field, "Limits.") {
			t.Fatalf("%+v: err = %v; want an *ArgumentError naming the limit", l, err)
		}
	}
}

func mustKey(t *testing.T) *signing.PrivateKey {
	t.Helper()
	k, err := signing.ParsePrivateKey("xQnTJVeQLmw1/Mg2YimEViSpw/SdJcgNXZ5kQkAXNPU=")
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// fleetLimits checks the account's limits across two Clients sharing
// store, over loopback HTTP/1.1 and over TLS + HTTP/2: goroutines of both place at once, and no more orders land than
// the limits hold, while as many as fit do (a Place refused for
// contention is placed on a later try).
func fleetLimits(t *testing.T, store func(account string) idempotency.Store) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		limits broker.Limits
		fit    int
	}{
		{"open orders", broker.Limits{MaxOpenOrders: 3}, 3},
		{"daily notional", broker.Limits{MaxDailyNotional: dec("90")}, 3}, // 30 each
	} {
		for _, overTLS := range []bool{false, true} {
			wire := map[bool]string{false: "HTTP/1.1", true: "TLS + HTTP/2"}[overTLS]
			t.Run(tc.name+", "+wire, func(t *testing.T) {
				// An account of its own, so that no earlier run's intents
				// in a shared store count.
				v := newLimitsVenue(t, overTLS, "LIM"+strings.ReplaceAll(uuid.NewString(), "-", "")[:20])
				s := store(v.srv.AccountNumber)
				clients := []*broker.Client{v.client(t, tc.limits, s), v.client(t, tc.limits, s)}
				var wg sync.WaitGroup
				errs := make([]error, 8)
				for i := range errs {
					wg.Add(1)
					go func() {
						defer wg.Done()
						_, errs[i] = clients[i%2].Place(ctx, fmt.Sprint("g", i), limitBuy())
					}()
				}
				wg.Wait()
				placed := 0
				for i, err := range errs {
					var le *broker.LimitError
					switch {
					case err == nil:
						placed++
					case !errors.As(err, &le):
						t.Fatalf("Place %d: %v", i, err)
					}
				}
				if n := v.creates(); n != placed || n > tc.fit {
					t.Fatalf("%d orders created, %d Places answered placed; want at most %d", n, placed, tc.fit)
				}
				// Any room left is taken by Places one at a time, then none.
				for i := 0; placed < tc.fit; i++ {
					if _, err := clients[i%2].Place(ctx, fmt.Sprint("room-", i), limitBuy()); err == nil {
						placed++
					} else if i > 20 {
						t.Fatalf("room for %d more, but: %v", tc.fit-placed, err)
					}
				}
				for i := range 2 {
					_, err := clients[i].Place(ctx, fmt.Sprint("after-", i), limitBuy())
					wantDenied(t, err, map[string]string{"open orders": "max_open_orders", "daily notional": "max_daily_notional"}[tc.name])
				}
				if n := v.creates(); n != tc.fit {
					t.Fatalf("%d orders created; want %d", n, tc.fit)
				}
			})
		}
	}
}

// TestLimitsFleetWideMemory: the account's limits hold across two Clients
// sharing one memory store.
func TestLimitsFleetWideMemory(t *testing.T) {
	fleetLimits(t, func(string) idempotency.Store { return idempotency.NewMemoryStore() })
}

// TestLimitsFleetWideRedis: the account's limits hold across two Clients
// sharing one Redis intent store.
//
//	bash internal/redistest/with-redis.sh go test -race -run LimitsFleetWideRedis ./broker/
func TestLimitsFleetWideRedis(t *testing.T) {
	rdb := redistest.Client(t)
	fleetLimits(t, func(account string) idempotency.Store {
		s, err := redisstore.New(context.Background(), rdb, account, redisstore.Config{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}

// BenchmarkPlaceWithDailyLimit times a Place of a new key on a bbolt
// store with MaxDailyNotional set, which records the intent before it
// counts the store's intents of the last 24 hours, against a Place with
// no limit measured in the same loop (each client on a venue of its own,
// with no rate limit). The store grows by one intent a Place, so b.N sets
// how many intents each count reads. Reported as limited/baseline.
//
//	go test -run '^$' -bench PlaceWithDailyLimit -benchtime 1000x ./broker/
func BenchmarkPlaceWithDailyLimit(b *testing.B) {
	ctx := context.Background()
	client := func(limits broker.Limits) *broker.Client {
		srv, err := brokertest.New(venue.Config{RateLimits: venue.RateLimits{Account: venue.RateLimit{PerMinute: math.Inf(1)}}})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(srv.Close)
		key, _ := signing.ParsePrivateKey(srv.PrivateKeyBase64)
		c, err := broker.New(broker.Config{APIKey: srv.APIKey, PrivateKey: key, BaseURL: srv.URL, AccountNumber: srv.AccountNumber,
			IntentStoreFile: b.TempDir() + "/intents.db", Limits: limits,
			Transport: transport.Config{RoundTripper: srv.Client().Transport, RatePerMinute: -1}})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { c.Close() })
		return c
	}
	base, limited := client(broker.Limits{}), client(broker.Limits{MaxDailyNotional: dec("1000000000")})
	var tBase, tLimited time.Duration
	for i := 0; b.Loop(); i++ {
		for _, p := range []struct {
			c *broker.Client
			t *time.Duration
		}{{base, &tBase}, {limited, &tLimited}} {
			start := time.Now()
			if _, err := p.c.Place(ctx, fmt.Sprint("k", i), limitBuy()); err != nil {
				b.Fatal(err)
			}
			*p.t += time.Since(start)
		}
	}
	b.ReportMetric(float64(tLimited)/float64(tBase), "limited/baseline")
	b.ReportMetric(float64(tLimited.Microseconds())/float64(b.N), "µs-limited/op")
}

// TestOpenOrdersLimitFollowsTheVenue: MaxOpenOrders counts from its last
// read of the venue's open orders while that read is fresh (a refusal
// then sends nothing), and reads them again after 30 seconds: an order
// cancelled meanwhile frees its place, and an order placed elsewhere
// takes one.
func TestOpenOrdersLimitFollowsTheVenue(t *testing.T) {
	ctx := context.Background()
	v := newLimitsVenue(t, false)
	c := v.client(t, broker.Limits{MaxOpenOrders: 2}, nil)
	var first *broker.Order
	for i := range 2 {
		o, err := c.Place(ctx, fmt.Sprint("k", i), limitBuy())
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = o
		}
	}
	refused := func(key string, wantReads bool) {
		t.Helper()
		from := len(v.srv.Ledger().Requests())
		_, err := c.Place(ctx, key, limitBuy())
		wantDenied(t, err, "max_open_orders")
		reads := v.requests(from)
		for _, r := range reads {
			if !strings.HasPrefix(r, "GET /api/v2/crypto/trading/orders/?") {
				t.Fatalf("the refusal sent %s", r)
			}
		}
		if got := len(reads) > 0; got != wantReads {
			t.Fatalf("the refusal read the open orders: %v (%v); want %v", got, reads, wantReads)
		}
	}
	refused("k2", false)

	if _, err := c.CancelOrder(ctx, first.ID); err != nil {
		t.Fatal(err)
	}
	refused("k2", false) // the last read is fresh: the cancel is not seen yet
	v.clk.Advance(31 * time.Second)
	if _, err := c.Place(ctx, "k2", limitBuy()); err != nil {
		t.Fatalf("after the cancel and 31 s: %v", err)
	}

	// An order placed elsewhere counts once the open orders are read again.
	body := fmt.Sprintf(`{"client_order_id":%q,"side":"buy","type":"limit","symbol":"BTC-USD","limit_order_config":{"asset_quantity":"0.001","limit_price":"30000"}}`, uuid.NewString())
	if _, err := v.srv.PlaceExternal([]byte(body)); err != nil {
		t.Fatal(err)
	}
	v.clk.Advance(31 * time.Second)
	refused("k3", true)
	refused("k3", false)
	if got := c.LimitDenials(); got != 4 {
		t.Fatalf("LimitDenials = %d; want 4", got)
	}
}
