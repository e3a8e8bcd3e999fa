package broker_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/tradewire/tradewire/broker"
	"github.com/tradewire/tradewire/venue"
)

// budgetRun is what a default watch spent over a run with 100 open orders.
type budgetRun struct {
	reads      int           // GETs of the orders list and of orders
	minutes    float64       // simulated minutes watched
	ratio      float64       // reads a minute over the venue's 100 a minute
	maxLatency time.Duration // from an order's updated_at to its event
	events     int
}

// watchBudget runs a watch with the default WatchConfig for minutes
// simulated minutes over 100 resting limit orders, some of which fill in
// parts as the market moves, and a market order placed each 30 s just after a poll, on a
// venue with its real budget (100 a minute, bursts of 300).
func watchBudget(tb testing.TB, minutes int) budgetRun {
	ctx := context.Background()
	w := newWatchWorld(tb, venue.Config{Seed: 11})
	c := w.client(w.store)
	for i := range 100 {
		sym := []string{"BTC-USD", "ETH-USD"}[i%2]
		bid, _, err := w.srv.Quote(sym)
		if err != nil {
			tb.Fatal(err)
		}
		// Buys from 0.05 % to 5 % under the bid: the nearest fill now
		// and then, the furthest never.
		price := bid.Mul(decimal.NewFromFloat(1 - 0.0005*float64(1+i))).Round(2)
		if _, err := c.Place(ctx, fmt.Sprintf("rest-%d", i), broker.OrderRequest{Symbol: sym, Side: broker.SideBuy, Type: broker.TypeLimit,
			AssetQuantity: decimal.RequireFromString("0.01"), LimitPrice: price}); err != nil {
			tb.Fatal(err)
		}
	}
	var (
		r      budgetRun
		latest time.Duration
	)
	wc := w.client(w.store)
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev, err := range wc.Watch(wctx, broker.WatchConfig{}) {
			if err != nil {
				tb.Errorf("watch: %v", err)
				continue
			}
			r.events++
			latest = max(latest, w.clk.Since(ev.Order.UpdatedAt))
		}
	}()
	if err := w.clk.BlockUntilContext(ctx, 1); err != nil {
		tb.Fatal(err)
	}
	isRead := func(rq venue.Request) bool {
		return rq.Method == http.MethodGet && strings.HasPrefix(rq.Target, "/api/v2/crypto/trading/orders/")
	}
	from := len(w.srv.Ledger().Requests())
	for s := 1; s <= minutes*60; s++ {
		if s%30 == 1 { // just after a poll: the longest wait for the next
			if _, err := c.Place(ctx, fmt.Sprintf("mkt-%d", s), broker.OrderRequest{Symbol: "BTC-USD", Side: broker.SideBuy,
				Type: broker.TypeMarket, AssetQuantity: decimal.RequireFromString("0.001")}); err != nil {
				tb.Fatal(err)
			}
		}
		w.clk.Advance(time.Second)
		if err := w.clk.BlockUntilContext(ctx, 1); err != nil {
			tb.Fatal(err)
		}
	}
	cancel()
	<-done
	for _, rq := range w.srv.Ledger().Requests()[from:] {
		if isRead(rq) {
			r.reads++
		}
	}
	r.minutes = float64(minutes)
	r.ratio = float64(r.reads) / r.minutes / 100
	r.maxLatency = latest
	return r
}

// TestWatchBudget: with 100 open orders a default watch spends at most
// 10 % of the venue's 100 requests a minute, and yields each event within
// the poll interval plus one second of its updated_at.
func TestWatchBudget(t *testing.T) {
	r := watchBudget(t, 10)
	t.Logf("%d reads in %.0f simulated minutes: %.3f of the budget; %d events, latency at most %v", r.reads, r.minutes, r.ratio, r.events, r.maxLatency)
	if r.ratio > 0.10 {
		t.Errorf("the watch spent %.3f of the budget; want at most 0.10", r.ratio)
	}
	if r.events < 20 {
		t.Errorf("%d events: the run does not exercise the watch", r.events)
	}
	if r.maxLatency > 11*time.Second || r.maxLatency < 5*time.Second {
		t.Errorf("an event came %v after its updated_at; want at most the poll interval plus 1 s, 11s (and orders placed just after a poll wait most of it)", r.maxLatency)
	}
}

// BenchmarkWatchBudget reports the share of the venue's rate budget a
// default watch spends with 100 open orders (x-budget, goal at most 0.10)
// over 30 simulated minutes, and its worst event latency.
//
//	go test -run '^$' -bench WatchBudget -benchtime 1x ./broker/
func BenchmarkWatchBudget(b *testing.B) {
	var r budgetRun
	for range b.N {
		r = watchBudget(b, 30)
	}
	b.ReportMetric(r.ratio, "x-budget")
	b.ReportMetric(r.maxLatency.Seconds(), "max-latency-s")
	b.ReportMetric(float64(r.reads)/r.minutes, "reads/min")
}
