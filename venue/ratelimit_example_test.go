package venue_test

import (
	"crypto/ed25519"
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/tradewire/tradewire/venue"
)

// Example_rateLimits gives order reads a bucket of their own, which
// the venue lowers after a minute, and counts from the ledger what each
// class was served and refused in each phase.
//
// Before the step the bucket holds 5 and serves 4; at the step it keeps 2
// of them, and refills at 6 a minute: a 429 says to retry after the 10 s
// the next token takes. Market data shares the account-wide bucket,
// untouched.
func Example_rateLimits() {
	start := time.Date(2026, 8, 20, 12, 0, 0, 0, time.UTC)
	clk := venue.NewClock(start)
	srv, err := newServer(venue.Config{Clock: clk, RateLimits: venue.RateLimits{
		Classes: map[string]venue.RateLimit{"order_reads": {PerMinute: 60, Burst: 5}},
		Schedule: []venue.RateLimit{
			{At: time.Minute, Class: "order_reads", PerMinute: 6, Burst: 2},
		},
		RetryAfter: "bucket",
	}})
	if err != nil {
		panic(err)
	}
	client := &http.Client{Transport: srv.Transport()}
	seed, _ := base64.StdEncoding.DecodeString(srv.PrivateKeyBase64)
	key := ed25519.NewKeyFromSeed(seed)
	get := func(target string) string {
		ts := strconv.FormatInt(clk.Now().Unix(), 10)
		req, _ := http.NewRequest("GET", srv.URL+target, nil)
		req.Header.Set("x-api-key", srv.APIKey)
		req.Header.Set("x-timestamp", ts)
		req.Header.Set("x-signature", base64.StdEncoding.EncodeToString(ed25519.Sign(key, []byte(srv.APIKey+ts+target+"GET"))))
		resp, err := client.Do(req)
		if err != nil {
			panic(err)
		}
		resp.Body.Close()
		if ra := resp.Header.Get("Retry-After"); ra != "" {
			return resp.Status[:3] + " (retry after " + ra + " s)"
		}
		return resp.Status[:3]
	}
	const orders = "/api/v2/crypto/trading/orders/?account_number=TW0000000001"
	const quotes = "/api/v2/crypto/marketdata/best_bid_ask/?symbol=BTC-USD"
	for phase := range 2 {
		clk.Advance(start.Add(time.Duration(phase) * time.Minute).Sub(clk.Now()))
		fmt.Print("phase ", phase, ":")
		for range 4 {
			fmt.Print(" ", get(orders))
		}
		fmt.Println(" quotes", get(quotes))
	}
	count := map[string]map[bool]int{}
	for _, r := range srv.Ledger().Requests() {
		if count[r.Class] == nil {
			count[r.Class] = map[bool]int{}
		}
		count[r.Class][r.Status == http.StatusTooManyRequests]++
	}
	for _, class := range []string{"order_reads", "market_data"} {
		fmt.Printf("%s: %d served, %d answered 429\n", class, count[class][false], count[class][true])
	}
	// Output:
	// phase 0: 200 200 200 200 quotes 200
	// phase 1: 200 200 429 (retry after 10 s) 429 (retry after 10 s) quotes 200
	// order_reads: 6 served, 2 answered 429
	// market_data: 2 served, 0 answered 429
}
