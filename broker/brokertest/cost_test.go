package brokertest

import (
	"bytes"
	"crypto/ed25519"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"github.com/shopspring/decimal"
)

// costSizes are the order histories BenchmarkVenueCost places against.
var costSizes = []int{1_000, 10_000, 100_000, 1_000_000}

// BenchmarkVenueCost times the venue's own work per order placed against a
// stored history of 1k, 10k, 100k and 1M orders (WithHistory: a sixth of
// them still open, resting far from the market), one simulated second
// apart: each op advances the clock a second and routes one create, a
// limit order at the touch, buy and sell in turn, so the book keeps
// filling and resting orders of its own, as a bot's does. Routing is
// timed without the signature check (a constant ed25519 verify) and the
// socket, with the making of the request (constant too): what is left is
// what grows with the history, if anything does.
// Each history=N sub-benchmark reports us/order and, when the 1k case ran
// first in the same run, its ratio to it (x-1k; goal: at most 1.5 at 1M).
//
//	go test -run '^$' -bench VenueCost -benchtime 2000x ./broker/brokertest/
func BenchmarkVenueCost(b *testing.B) {
	perOrder := map[int]float64{}
	for _, n := range costSizes {
		b.Run(fmt.Sprintf("history=%d", n), func(b *testing.B) {
			h := setup(b, engineConfig{History: n, Seed: 3, RatePerMinute: -1, Accounts: []accountConfig{{
				Number: demoAccountNumber, APIKey: demoAPIKey, PublicKey: demoPrivateKey().Public().(ed25519.PublicKey),
				BuyingPower: decimal.NewFromInt(1_000_000_000),
				Holdings:    map[string]decimal.Decimal{"BTC": decimal.NewFromInt(1_000_000)},
			}}})
			a := h.v.accounts[0]
			cent := decimal.New(1, -2)
			b.ReportAllocs()
			runtime.GC() // the history's garbage is the setup's, not the loop's
			b.ResetTimer()
			i := 0
			for b.Loop() {
				h.clock.Advance(time.Second)
				now := h.clock.Now()
				bid, ask := h.v.bySymbol["BTC-USD"].quoteAt(h.v.seed, now)
				side, price := "buy", floorTo(bid, cent)
				if i%2 == 1 {
					side, price = "sell", ceilTo(ask, cent)
				}
				body := orderBody(newID(7, 0x62656e6368, uint64(i)), side, "limit", "BTC-USD",
					`{"asset_quantity":"0.0001","limit_price":"`+price.String()+`"}`)
				r := httptest.NewRequest(http.MethodPost, "https://venue.test"+ordersTarget, bytes.NewReader(body))
				i++
				h.v.mu.Lock()
				rep, _ := h.v.route(r, a, body, now, "")
				h.v.mu.Unlock()
				if rep.status != http.StatusCreated {
					b.Fatalf("create: %d %s", rep.status, rep.body)
				}
			}
			us := float64(b.Elapsed().Nanoseconds()) / 1e3 / float64(b.N)
			perOrder[n] = us
			b.ReportMetric(us, "us/order")
			if base := perOrder[costSizes[0]]; base > 0 {
				b.ReportMetric(us/base, "x-1k")
			}
		})
	}
}
