package broker_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/shopspring/decimal"

	"github.com/tradewire/tradewire/broker"
	"github.com/tradewire/tradewire/broker/brokertest"
	"github.com/tradewire/tradewire/internal/adaptive"
	"github.com/tradewire/tradewire/orders"
	"github.com/tradewire/tradewire/signing"
	"github.com/tradewire/tradewire/transport"
	"github.com/tradewire/tradewire/venue"
)

// simulated returns a client on an in-memory simulated venue sharing one
// fake clock with it.
func simulated(t testing.TB, cfg venue.Config) (*broker.Client, *brokertest.Server, *clockwork.FakeClock) {
	t.Helper()
	clk := clockwork.NewFakeClockAt(time.Date(2026, 8, 20, 18, 0, 0, 0, time.UTC))
	cfg.Clock = clk
	srv, err := brokertest.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	key, err := signing.ParsePrivateKey(srv.PrivateKeyBase64)
	if err != nil {
		t.Fatal(err)
	}
	c, err := broker.New(broker.Config{
		APIKey:     srv.APIKey,
		PrivateKey: key,
		BaseURL:    srv.URL,
		Transport:  transport.Config{RoundTripper: srv.Client().Transport, Clock: clk},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c, srv, clk
}

// TestAgainstSimulatedVenue reads every endpoint of the simulated venue,
// an oracle written independently of this package.
func TestAgainstSimulatedVenue(t *testing.T) {
	t.Parallel()
	c, srv, _ := simulated(t, venue.Config{History: 60, PageSize: 7})
	ctx := context.Background()

	a, err := c.Account(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if a.AccountNumber != srv.AccountNumber || !a.FeeTier.FeeRatio.IsPositive() {
		t.Errorf("account %+v", a)
	}
	hs, err := broker.Collect(c.Holdings(ctx, nil))
	if err != nil || len(hs) == 0 {
		t.Fatalf("holdings %v, %v", hs, err)
	}
	pairs, err := broker.Collect(c.TradingPairs(ctx, nil))
	if err != nil || len(pairs) == 0 {
		t.Fatalf("pairs %v, %v", pairs, err)
	}
	qs, err := c.BestBidAsk(ctx, "BTC-USD")
	if err != nil || len(qs) != 1 || !qs[0].Ask.IsPositive() {
		t.Fatalf("quotes %v, %v", qs, err)
	}
	est, err := c.EstimatedPrice(ctx, "BTC-USD", broker.PriceBoth, decimal.RequireFromString("0.001"), decimal.RequireFromString("0.01"))
	if err != nil || len(est) == 0 {
		t.Fatalf("estimates %v, %v", est, err)
	}
	orders, err := broker.Collect(c.Orders(ctx, broker.OrderFilter{}))
	if err != nil || len(orders) != 60 {
		t.Fatalf("%d orders, %v", len(orders), err)
	}
	r, err := c.FeeSummary(ctx, 31*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if r.Orders != 60 || r.Pages != 10 || !r.TotalFees.IsPositive() || !r.EffectiveFeeRateDefined {
		t.Errorf("fee report: %d orders, %d pages, fees %s, rate %s", r.Orders, r.Pages, r.TotalFees, r.EffectiveFeeRate)
	}
	var want decimal.Decimal
	for _, o := range orders {
		want = want.Add(o.FeeCharged)
	}
	if !r.TotalFees.Equal(want) {
		t.Errorf("fee summary %s, orders sum to %s", r.TotalFees, want)
	}
	p, err := c.Preview(ctx, broker.OrderRequest{Symbol: "BTC-USD", Side: broker.SideBuy, Type: broker.TypeMarket, AssetQuantity: decimal.RequireFromString("0.001")})
	if err != nil || !p.Estimate || !p.Total.IsPositive() {
		t.Fatalf("preview %+v, %v", p, err)
	}
	const missing = "00000000-0000-4000-8000-000000000000"
	if _, err := c.Order(ctx, missing); !errors.Is(err, broker.ErrNoSuchOrder) {
		t.Errorf("Order: %v", err)
	}
	if _, err := c.CancelOrder(ctx, missing); !errors.Is(err, broker.ErrNoSuchOrder) {
		t.Errorf("CancelOrder: %v", err)
	}
	for _, o := range orders {
		if o.State.Final() {
			_, err := c.CancelOrder(ctx, o.ID)
			var rej *transport.StatusError
			if !errors.Is(err, broker.ErrRejected) || !errors.As(err, &rej) || len(rej.Errors) == 0 || rej.Errors[0].Detail == "" {
				t.Errorf("cancel final order %s: %v", o.State, err)
			}
			break
		}
	}
	if bad := srv.Ledger().Counts(); bad.Total == 0 {
		t.Errorf("ledger %+v", bad)
	}
}

// TestFeeSweepThroughput sweeps 1,000 pages of orders inside a synctest
// bubble, where time is virtual and moves only when every goroutine waits:
// the sweep must take within 2% of the least time the venue's budget (100
// a minute, bursts of 300) allows for its 1 + 1,000 requests, and draw no
// 429.
func TestFeeSweepThroughput(t *testing.T) {
	if testing.Short() {
		t.Skip("long sweep")
	}
	synctest.Test(t, func(t *testing.T) {
		const pages = 1000
		srv, err := brokertest.New(venue.Config{BulkOrders: pages * 10, PageSize: 10})
		if err != nil {
			t.Fatal(err)
		}
		key, err := signing.ParsePrivateKey(srv.PrivateKeyBase64)
		if err != nil {
			t.Fatal(err)
		}
		c, err := broker.New(broker.Config{
			APIKey:     srv.APIKey,
			PrivateKey: key,
			BaseURL:    srv.URL,
			PageCap:    pages,
			Transport:  transport.Config{RoundTripper: srv.Client().Transport},
		})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		r, err := c.FeeSummary(context.Background(), 31*24*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		took := time.Since(start)
		// The accounts read, the pages, and the catch-up read's one page
		// (nothing changed during the sweep).
		requests := 1 + pages + 1
		minimum := time.Duration(requests-adaptive.Burst) * time.Minute / adaptive.PerMinute
		counts := srv.Ledger().Counts()
		t.Logf("%d pages, %d orders in %v of venue time; minimum %v; %d requests, %d throttled", r.Pages, r.Orders, took, minimum, counts.Total, counts.Throttled)
		if r.Pages != pages+1 || r.Orders != pages*10 {
			t.Errorf("%d pages, %d orders", r.Pages, r.Orders)
		}
		if took < minimum || float64(took) > 1.02*float64(minimum) {
			t.Errorf("sweep took %v; want within 2%% of %v", took, minimum)
		}
		if counts.Throttled != 0 || counts.Total != requests {
			t.Errorf("%d requests, %d answered 429", counts.Total, counts.Throttled)
		}
	})
}

// trading returns a client that places orders on an in-memory simulated
// venue configured by cfg, sharing one fake clock with it.
func trading(t *testing.T, cfg venue.Config) (*broker.Client, *brokertest.Server) {
	t.Helper()
	clk := venue.NewClock(time.Date(2026, 8, 20, 18, 0, 0, 0, time.UTC))
	cfg.Clock = clk
	srv, err := brokertest.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	key, err := signing.ParsePrivateKey(srv.PrivateKeyBase64)
	if err != nil {
		t.Fatal(err)
	}
	c, err := broker.New(broker.Config{
		APIKey:          srv.APIKey,
		PrivateKey:      key,
		BaseURL:         srv.URL,
		IntentStoreFile: filepath.Join(t.TempDir(), "intents.db"),
		Transport:       transport.Config{RoundTripper: srv.Client().Transport, Clock: clk},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, srv
}

// TestPreviewPricesTheDepth: against a venue with depth, Preview prices a
// market order at what its size would fill at (worse than the best ask
// beyond the top level, the best ask within it), and the order placed in
// the same second fills at that price and fee.
func TestPreviewPricesTheDepth(t *testing.T) {
	t.Parallel()
	c, srv := trading(t, venue.Config{BuyingPower: decimal.NewFromInt(2_000_000)})
	ctx := context.Background()
	_, ask, err := srv.Quote("BTC-USD")
	if err != nil {
		t.Fatal(err)
	}
	small := broker.OrderRequest{Symbol: "BTC-USD", Side: broker.SideBuy, Type: broker.TypeMarket, AssetQuantity: decimal.RequireFromString("0.001")}
	if p, err := c.Preview(ctx, small); err != nil || !p.Price.Equal(ask) {
		t.Fatalf("small preview %+v, %v: want the best ask %s", p, err, ask)
	}
	big := small
	big.AssetQuantity = decimal.RequireFromString("10")
	p, err := c.Preview(ctx, big)
	if err != nil || !p.OK() || !p.Price.GreaterThan(ask) {
		t.Fatalf("preview %+v, %v: want a price above the best ask %s", p, err, ask)
	}
	o, err := c.Place(ctx, "depth", big)
	if err != nil {
		t.Fatal(err)
	}
	if o.State != broker.StateFilled || !o.AveragePrice.Valid || !o.AveragePrice.Decimal.Equal(p.Price) || !o.FeeCharged.Equal(p.Fee) {
		t.Errorf("filled %s at %v fee %s; preview said %s fee %s", o.State, o.AveragePrice, o.FeeCharged, p.Price, p.Fee)
	}
}

// TestPreviewAndPlaceOnPairStatus: a sell-only pair takes sells and
// refuses buys, an untradable one refuses both; Preview says so before
// anything is placed and the venue agrees.
func TestPreviewAndPlaceOnPairStatus(t *testing.T) {
	t.Parallel()
	c, srv := trading(t, venue.Config{Holdings: map[string]decimal.Decimal{"XTZ": decimal.NewFromInt(100), "BSV": decimal.NewFromInt(100)}})
	ctx := context.Background()
	for i, tc := range []struct {
		symbol string
		side   broker.Side
		ok     bool
	}{
		{"XTZ-USD", broker.SideSell, true}, {"XTZ-USD", broker.SideBuy, false},
		{"BSV-USD", broker.SideSell, false}, {"BSV-USD", broker.SideBuy, false},
		{"ETH-USD", broker.SideBuy, true},
	} {
		req := broker.OrderRequest{Symbol: tc.symbol, Side: tc.side, Type: broker.TypeMarket, AssetQuantity: decimal.RequireFromString("1")}
		if tc.symbol == "ETH-USD" {
			req.AssetQuantity = decimal.RequireFromString("0.01")
		}
		p, err := c.Preview(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if p.OK() != tc.ok || !tc.ok && p.Violations[0].Code != "pair_not_tradable" {
			t.Errorf("%s %s: violations %v", tc.side, tc.symbol, p.Violations)
		}
		o, err := c.Place(ctx, fmt.Sprint("status-", i), req)
		switch {
		case tc.ok && (err != nil || o.State != broker.StateFilled):
			t.Errorf("%s %s: %v, %v", tc.side, tc.symbol, o, err)
		case !tc.ok && (!errors.Is(err, broker.ErrRejected) || errors.Is(err, broker.ErrUnknownOutcome)):
			t.Errorf("%s %s: %v, want a rejection", tc.side, tc.symbol, err)
		}
	}
	if n := srv.Ledger().Counts().Creates; n != 2 {
		t.Errorf("%d creates recorded, want the 2 accepted", n)
	}
}

// TestAccountStatesThroughTheClient: the venue's refusals for an account's
// state or a read-only key reach a bot as rejections, nothing placed.
func TestAccountStatesThroughTheClient(t *testing.T) {
	t.Parallel()
	buy := broker.OrderRequest{Symbol: "ETH-USD", Side: broker.SideBuy, Type: broker.TypeMarket, AssetQuantity: decimal.RequireFromString("0.01")}
	sell := buy
	sell.Side = broker.SideSell
	for _, tc := range []struct {
		name   string
		cfg    venue.Config
		buyOK  bool
		sellOK bool
		status int // the refusals' status
	}{
		{"sell_only", venue.Config{AccountStatus: "sell_only"}, false, true, 400},
		{"deactivated", venue.Config{AccountStatus: "deactivated"}, false, false, 403},
		{"read-only key", venue.Config{ReadOnly: true}, false, false, 403},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, _ := trading(t, tc.cfg)
			ctx := context.Background()
			want := tc.cfg.AccountStatus
			if want == "" {
				want = "active"
			}
			if a, err := c.Account(ctx); err != nil || a.Status != want {
				t.Errorf("account %+v, %v; want status %s", a, err, want)
			}
			for i, r := range []struct {
				req broker.OrderRequest
				ok  bool
			}{{buy, tc.buyOK}, {sell, tc.sellOK}} {
				_, err := c.Place(ctx, fmt.Sprint("k", i), r.req)
				if r.ok != (err == nil) || err != nil && (!errors.Is(err, broker.ErrRejected) || errors.Is(err, broker.ErrUnknownOutcome)) {
					t.Errorf("%s: %v", r.req.Side, err)
				}
				// The venue's answer is the cause, kept to read (orders.Error.Err).
				var oe *orders.Error
				var se *transport.StatusError
				if err != nil && (!errors.As(err, &oe) || !errors.As(oe.Err, &se) || se.StatusCode != tc.status) {
					t.Errorf("%s: %v, want status %d", r.req.Side, err, tc.status)
				}
			}
		})
	}
}

// TestSimulatedMarketAsSent: a crossed book reaches the caller as the
// venue sends it, and the venue's two timestamp forms (order times in US
// Eastern time with an offset, market data in UTC with Z) decode to the
// venue's instants.
func TestSimulatedMarketAsSent(t *testing.T) {
	t.Parallel()
	c, srv, clk := simulated(t, venue.Config{Seed: 9, History: 5})
	ctx := context.Background()
	crossed := false
	for i := 0; i < 20000 && !crossed; i++ {
		bid, ask, _ := srv.Quote("BTC-USD")
		if crossed = bid.GreaterThan(ask); !crossed {
			clk.Advance(time.Second)
		}
	}
	if !crossed {
		t.Fatal("no crossed book in 20000 s")
	}
	bid, ask, _ := srv.Quote("BTC-USD")
	qs, err := c.BestBidAsk(ctx, "BTC-USD")
	if err != nil || len(qs) != 1 || !qs[0].Crossed() || !qs[0].Bid.Equal(bid) || !qs[0].Ask.Equal(ask) {
		t.Fatalf("quotes %+v, %v; the venue sent bid %s ask %s", qs, err, bid, ask)
	}
	if !qs[0].Timestamp.Equal(clk.Now()) || qs[0].Timestamp.Location() != time.UTC {
		t.Errorf("quote timestamp %v, want the venue's now %v in UTC", qs[0].Timestamp, clk.Now())
	}
	// One second later the book is no longer crossed (a negative control).
	clk.Advance(time.Second)
	if qs, err := c.BestBidAsk(ctx, "BTC-USD"); err != nil || qs[0].Crossed() {
		t.Errorf("the next second: %+v, %v", qs, err)
	}
	orders, err := broker.Collect(c.Orders(ctx, broker.OrderFilter{}))
	if err != nil || len(orders) != 5 {
		t.Fatalf("%d orders, %v", len(orders), err)
	}
	for _, o := range orders {
		// August: the venue prints -04:00; the instant is what it is.
		if _, off := o.CreatedAt.Zone(); off != -4*3600 || !o.CreatedAt.Before(clk.Now()) || o.UpdatedAt.Before(o.CreatedAt) {
			t.Errorf("order %s created %v updated %v", o.ID, o.CreatedAt, o.UpdatedAt)
		}
	}
	// The orders list filters by an instant whatever form it was read in.
	first := orders[len(orders)-1].CreatedAt
	since, err := broker.Collect(c.Orders(ctx, broker.OrderFilter{CreatedAtStart: first}))
	if err != nil || len(since) != 5 {
		t.Errorf("since %v: %d orders, %v", first, len(since), err)
	}
	since, err = broker.Collect(c.Orders(ctx, broker.OrderFilter{CreatedAtStart: first.Add(time.Microsecond)}))
	if err != nil || len(since) != 4 {
		t.Errorf("since just after %v: %d orders, %v", first, len(since), err)
	}
}
