package broker

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/shopspring/decimal"

	"github.com/tradewire/tradewire/broker/brokertest"
	"github.com/tradewire/tradewire/signing"
	"github.com/tradewire/tradewire/transport"
	"github.com/tradewire/tradewire/venue"
)

// liveSweep runs a fee sweep with catchUps catch-up reads on a simulated
// venue where the account trades while the sweep reads: after each page
// of the first read, one resting order is canceled, one marketable limit
// order is placed, and a few seconds pass, so fills and cancels land
// between pages. It returns the report, a snapshot of the same window
// read once everything is still (the sum of every order updated since
// the report's Start), and the most orders the sweep remembered at once.
func liveSweep(t *testing.T, catchUps int) (got, snapshot *FeeReport, remembered, open int) {
	t.Helper()
	ctx := context.Background()
	clk := clockwork.NewFakeClockAt(time.Date(2026, 8, 20, 14, 0, 0, 0, time.UTC))
	srv, err := brokertest.New(venue.Config{Clock: clk, RateLimits: venue.RateLimits{Account: venue.RateLimit{PerMinute: math.Inf(1)}}, History: 120, PageSize: 10, Seed: 7, BuyingPower: decimal.NewFromInt(1_000_000)})
	if err != nil {
		t.Fatal(err)
	}
	key, err := signing.ParsePrivateKey(srv.PrivateKeyBase64)
	if err != nil {
		t.Fatal(err)
	}
	dir, clients := t.TempDir(), 0
	client := func() *Client {
		clients++
		c, err := New(Config{
			APIKey:          srv.APIKey,
			PrivateKey:      key,
			BaseURL:         srv.URL,
			IntentStoreFile: filepath.Join(dir, fmt.Sprint(clients)+".db"),
			Transport:       transport.Config{RoundTripper: srv.Client().Transport, Clock: clk, RatePerMinute: -1},
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	trader, sweeper := client(), client()
	quotes, err := trader.BestBidAsk(ctx, "BTC-USD")
	if err != nil {
		t.Fatal(err)
	}
	ask := quotes[0].Ask
	place := func(key string, limit decimal.Decimal) *Order {
		o, err := trader.Place(ctx, key, OrderRequest{Symbol: "BTC-USD", Side: SideBuy, Type: TypeLimit,
			AssetQuantity: decimal.RequireFromString("0.0004"), LimitPrice: limit.Round(2)})
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	// Resting orders to cancel mid-sweep, and orders that fill mid-sweep.
	var resting []*Order
	for i := range 12 {
		resting = append(resting, place(fmt.Sprintf("rest-%d", i), ask.Mul(decimal.RequireFromString("0.5"))))
	}
	// The first read has 13 pages or more (the history and the orders
	// placed); trading lands after each of its first 8.
	const tradedPages = 8
	cb := func(p Progress) {
		if p.Pages > tradedPages {
			return
		}
		if _, err := trader.CancelOrder(ctx, resting[0].ID); err != nil {
			t.Fatal(err)
		}
		resting = resting[1:]
		place(fmt.Sprintf("fill-%d", p.Pages), ask.Mul(decimal.RequireFromString("1.2")))
		clk.Advance(3 * time.Second)
	}
	cc, err := sweeper.callConfig([]Paging{{OnProgress: cb, MaxPages: 100}})
	if err != nil {
		t.Fatal(err)
	}
	tally := newFeeTally()
	got, err = sweeper.feeSweep(ctx, 31*24*time.Hour, cc, tally, catchUps)
	if err != nil {
		t.Fatal(err)
	}
	if got.Pages < tradedPages+3 {
		t.Fatalf("%d pages read: trading did not land within the first read", got.Pages)
	}

	// The snapshot: everything is still now.
	snap := newFeeTally()
	for o, err := range client().Orders(ctx, OrderFilter{UpdatedAtStart: got.Start}) {
		if err != nil {
			t.Fatal(err)
		}
		snap.count(o, false)
		if !o.State.Final() {
			open++
		}
	}
	snapshot = &FeeReport{}
	snap.report(snapshot)
	return got, snapshot, tally.maxLive, open
}

func feeTotals(r *FeeReport) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d orders, fees %s, notional %s;", r.Orders, r.TotalFees, r.FilledNotional)
	for _, s := range r.BySymbol {
		fmt.Fprintf(&b, " %s:%d:%s:%s", s.Symbol, s.Orders, s.TotalFees, s.FilledNotional)
	}
	return b.String()
}

// TestFeeSummaryExactWhileTrading: with fills and cancels landing between
// every page of the sweep, its totals equal a snapshot of the window taken
// at its end, and it remembers only the orders that could still change.
// Without the catch-up read (the negative control) the same run's totals
// are stale.
func TestFeeSummaryExactWhileTrading(t *testing.T) {
	t.Parallel()
	got, snapshot, remembered, open := liveSweep(t, feeCatchUps)
	if g, w := feeTotals(got), feeTotals(snapshot); g != w {
		t.Errorf("sweep:    %s\nsnapshot: %s", g, w)
	}
	if got.Orders < 120 {
		t.Errorf("%d orders counted, want the history and the orders placed", got.Orders)
	}
	// Remembered: the orders open at some point of the sweep (those still
	// open, and those it saw open that filled or were canceled since).
	if remembered > open+40 || remembered >= got.Orders/2 {
		t.Errorf("remembered %d orders at once (of %d counted, %d still open)", remembered, got.Orders, open)
	}
	t.Logf("sweep: %s; %d pages; remembered at most %d of %d", feeTotals(got), got.Pages, remembered, got.Orders)

	stale, snapshot, _, _ := liveSweep(t, 0)
	if feeTotals(stale) == feeTotals(snapshot) {
		t.Errorf("without the catch-up read the totals match the snapshot too (%s): the scenario does not trade mid-sweep", feeTotals(stale))
	}
}
