package broker_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/shopspring/decimal"

	"github.com/tradewire/tradewire/broker"
	"github.com/tradewire/tradewire/broker/brokertest"
	"github.com/tradewire/tradewire/signing"
	"github.com/tradewire/tradewire/transport"
)

// simulated returns a client on an in-memory simulated venue sharing one
// fake clock with it.
func simulated(t testing.TB, opts ...brokertest.Option) (*broker.Client, *brokertest.Server, *clockwork.FakeClock) {
	t.Helper()
	clk := clockwork.NewFakeClockAt(time.Date(2026, 8, 20, 18, 0, 0, 0, time.UTC))
	srv, err := brokertest.New(append([]brokertest.Option{brokertest.WithClock(clk)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	key, err := signing.ParsePrivateKey(srv.PrivateKeyBase64)
	if err != nil {
		t.Fatal(err)
	}
	c, err := broker.New(
		broker.WithCredentials(srv.APIKey, key),
		broker.WithBaseURL(srv.URL),
		broker.WithRoundTripper(srv.Transport()),
		broker.WithClock(clk),
	)
	if err != nil {
		t.Fatal(err)
	}
	return c, srv, clk
}

// TestAgainstSimulatedVenue reads every endpoint of the simulated venue,
// an oracle written independently of this package.
func TestAgainstSimulatedVenue(t *testing.T) {
	t.Parallel()
	c, srv, _ := simulated(t, brokertest.WithHistory(60), brokertest.WithPageSize(7))
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
		srv, err := brokertest.New(brokertest.WithBulkOrders(pages*10), brokertest.WithPageSize(10))
		if err != nil {
			t.Fatal(err)
		}
		key, err := signing.ParsePrivateKey(srv.PrivateKeyBase64)
		if err != nil {
			t.Fatal(err)
		}
		c, err := broker.New(broker.WithCredentials(srv.APIKey, key), broker.WithBaseURL(srv.URL),
			broker.WithRoundTripper(srv.Transport()), broker.WithPageCap(pages))
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
		minimum := time.Duration(requests-transport.DefaultBurst) * time.Minute / transport.DefaultRatePerMinute
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
