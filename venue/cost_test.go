package venue

import (
	"bytes"
	"crypto/ed25519"
	"fmt"
	"io"
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
// stored history of 1k, 10k, 100k and 1M orders (Config.History: a sixth of
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
//	go test -run '^$' -bench VenueCost -benchtime 2000x ./venue/
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

// BenchmarkVenueRequest times the venue's whole answer to one request of
// the saturated simulation's mix (accounts, holdings, pairs, best bid/ask,
// order lists, an order by id, limit and market creates, cancels), served
// through the handler, in memory, at the run's pace with its signature checked (the client's
// signing is left out of the time), against the
// floor of that check in the same iteration: one ed25519.Verify of a
// message of the same size. It reports us/request (the venue's), and
// x-verify, the venue's time over the verify's: 1 would be a venue that
// does nothing but check signatures.
//
//	go test -run '^$' -bench VenueRequest -count 5 ./venue/
func BenchmarkVenueRequest(b *testing.B) {
	h := setup(b, engineConfig{History: 200, Seed: 5, RatePerMinute: -1})
	pub := demoPrivateKey().Public().(ed25519.PublicKey)
	acct := "account_number=" + demoAccountNumber
	var (
		open          []string
		venue, verify time.Duration
	)
	n := 0
	send := func(method, target string, body []byte) []byte {
		n++
		r, _ := http.NewRequest(method, "https://venue.invalid"+target, bytes.NewReader(body))
		r.Header = h.sign(method, target, body, h.clock.Now())
		start := time.Now()
		rec := httptest.NewRecorder()
		h.v.ServeHTTP(rec, r)
		resp := rec.Result()
		out, _ := io.ReadAll(resp.Body)
		venue += time.Since(start)
		if resp.StatusCode >= 500 || resp.StatusCode == http.StatusUnauthorized {
			b.Fatalf("%s %s: %d %s", method, target, resp.StatusCode, out)
		}
		return out
	}
	since := func(d time.Duration) string { return h.clock.Now().Add(-d).UTC().Format(time.RFC3339) }
	msg := []byte(demoAPIKey + "1786000000" + ordersTarget + "&symbol=BTC-USD" + http.MethodGet)
	sig := ed25519.Sign(demoPrivateKey(), msg)
	i := 0
	for b.Loop() {
		h.clock.Advance(6 * time.Second) // 10 requests: the 100 a minute of the saturated run
		n = 0
		send(http.MethodGet, pathAccounts, nil)
		send(http.MethodGet, pathHoldings+"?"+acct, nil)
		send(http.MethodGet, pathPairs, nil)
		send(http.MethodGet, pathBBA+"?symbol=BTC-USD&symbol=ETH-USD", nil)
		send(http.MethodGet, ordersTarget+"&symbol=BTC-USD&created_at_start="+since(time.Minute), nil)
		send(http.MethodGet, ordersTarget+"&state=open&created_at_start="+since(time.Hour), nil)
		cid := newID(9, 0x62656e6368, uint64(i))
		i++
		created := decode(b, send(http.MethodPost, ordersTarget, orderBody(cid, "buy", "limit", "BTC-USD",
			`{"asset_quantity":"0.001","limit_price":"1000.00","time_in_force":"gtc"}`)))
		if id, ok := created["id"].(string); ok {
			open = append(open, id)
		}
		send(http.MethodPost, ordersTarget, orderBody(newID(9, 0x6d6b74, uint64(i)), "sell", "market", "BTC-USD",
			`{"asset_quantity":"0.00001"}`))
		send(http.MethodGet, pathOrders+open[0]+"/?"+acct, nil)
		send(http.MethodPost, pathOrders+open[0]+"/cancel/", nil)
		open = open[1:]
		mid := time.Now()
		for range n {
			if !ed25519.Verify(pub, msg, sig) {
				b.Fatal("verify")
			}
		}
		verify += time.Since(mid)
	}
	reqs := float64(b.N * 10)
	b.ReportMetric(float64(venue.Microseconds())/reqs, "us/request")
	b.ReportMetric(float64(venue)/float64(verify), "x-verify")
}
