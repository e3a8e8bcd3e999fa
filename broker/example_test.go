package broker_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/shopspring/decimal"

	"github.com/tradewire/tradewire/broker"
	"github.com/tradewire/tradewire/signing"
	"github.com/tradewire/tradewire/transport"
)

// cannedVenue serves fixed answers, as captured from the live v2 API; the
// orders listing comes in two pages linked by next.
func cannedVenue() *httptest.Server {
	answers := map[string]string{
		"/api/v2/crypto/trading/accounts/": `{"next":null,"results":[{"account_number":"AB1234567890","status":"active",
			"buying_power":"1042.55","buying_power_currency":"USD","fee_tier_status":{"fee_ratio":0.0095,
			"thirty_day_volume":12480.55,"next_fee_tier_ratio":0.0085,"next_fee_tier_threshold":50000.00}}]}`,
		"/api/v2/crypto/marketdata/best_bid_ask/": `{"results":[
			{"symbol":"BTC-USD","timestamp":"2026-08-19T19:20:41.579217945Z","bid":"68329.2","ask":"68324.17"},
			{"symbol":"ETH-USD","timestamp":"2026-08-19T19:20:41.579217945Z","bid":2401.5,"ask":"2402.10"}]}`,
		"/api/v2/crypto/trading/estimated_price/": `{"next":null,"results":[{"symbol":"BTC-USD","side":"ask",
			"quantity":0.001,"timestamp":"2026-08-09T22:42:19.194164275Z","fee_ratio":0.0095,"est_fee":0.61726991,
			"ask":64975.78,"est_total_cost":65.59304991}]}`,
	}
	orderPages := []string{
		`[{"symbol":"BTC-USD","state":"filled","fee_charged":1.6355,"executions":[
			{"effective_price":"65420.750000000000000000","quantity":"0.100000000000000000"}]},
		  {"symbol":"BTC-USD","state":"canceled","fee_charged":0.42,"executions":[
			{"effective_price":"64000.000000000000000000","quantity":"0.026200000000000000"}]}]`,
		`[{"symbol":"ETH-USD","state":"filled","fee_charged":"9.5","executions":[
			{"effective_price":"2500","quantity":"0.4"}]},
		  {"symbol":"ETH-USD","state":"failed","fee_charged":0.0,"executions":[]}]`,
	}
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v2/crypto/trading/orders/" {
			if !r.URL.Query().Has("created_at_end") { // a fee sweep's catch-up: nothing changed
				fmt.Fprint(w, `{"next":null,"previous":null,"results":[]}`)
				return
			}
			next := "null"
			page := orderPages[0]
			if r.URL.Query().Get("cursor") == "2" {
				page = orderPages[1]
			} else {
				next = `"http://` + r.Host + r.URL.RequestURI() + `&cursor=2"`
			}
			fmt.Fprintf(w, `{"next":%s,"previous":null,"results":%s}`, next, page)
			return
		}
		body, ok := answers[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, body)
	}))
}

func newExampleClient(baseURL string) *broker.Client {
	key, err := signing.ParsePrivateKey("xQnTJVeQLmw1/Mg2YimEViSpw/SdJcgNXZ5kQkAXNPU=")
	if err != nil {
		panic(err)
	}
	clk := clockwork.NewFakeClockAt(time.Date(2026, 8, 20, 18, 0, 0, 0, time.UTC))
	c, err := broker.New(broker.Config{
		APIKey:     "rh-api-6148effc-c0b1-486c-8940-a1d099456be6",
		PrivateKey: key,
		BaseURL:    baseURL,
		Transport:  transport.Config{Clock: clk},
	})
	if err != nil {
		panic(err)
	}
	return c
}

// A bot reads the top of the book and asks what a buy would cost. The book
// is returned exactly as the venue sent it, crossed or not.
func ExampleClient_BestBidAsk() {
	srv := cannedVenue()
	defer srv.Close()
	c := newExampleClient(srv.URL)
	ctx := context.Background()

	quotes, err := c.BestBidAsk(ctx, "BTC-USD", "ETH-USD")
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	for _, q := range quotes {
		fmt.Printf("%s bid %s ask %s crossed=%v\n", q.Symbol, q.Bid, q.Ask, q.Crossed())
	}

	est, err := c.EstimatedPrice(ctx, "BTC-USD", broker.PriceAsk, decimal.RequireFromString("0.001"))
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	for _, e := range est {
		price, _ := e.Price()
		fmt.Printf("buy %s %s at %s: fee %s, total %s\n", e.Quantity, e.Symbol, price, e.EstFee, e.EstTotalCost.Decimal)
	}
	// Output:
	// BTC-USD bid 68329.2 ask 68324.17 crossed=true
	// ETH-USD bid 2401.5 ask 2402.1 crossed=false
	// buy 0.001 BTC-USD at 64975.78: fee 0.61726991, total 65.59304991
}

// A batch script sums the fees paid over the last day: one accounts read,
// then every page of orders updated in the window, aggregated page by page,
// and a catch-up read of what changed meanwhile (here nothing: an empty
// page, the third).
func ExampleClient_FeeSummary() {
	srv := cannedVenue()
	defer srv.Close()
	c := newExampleClient(srv.URL)

	r, err := c.FeeSummary(context.Background(), 24*time.Hour,
		broker.Paging{OnProgress: func(p broker.Progress) { fmt.Printf("page %d: %d orders\n", p.Pages, p.Items) }})
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Printf("window %s to %s\n", r.Start.Format(time.RFC3339), r.End.Format(time.RFC3339))
	fmt.Printf("fee tier %s, 30-day volume %s\n", r.FeeRatio, r.ThirtyDayVolume)
	for _, s := range r.BySymbol {
		fmt.Printf("%s: %d orders, fees %s on %s filled\n", s.Symbol, s.Orders, s.TotalFees, s.FilledNotional)
	}
	fmt.Printf("total: %d orders, fees %s on %s filled, effective rate %s (partial=%v)\n",
		r.Orders, r.TotalFees, r.FilledNotional, r.EffectiveFeeRate, r.Partial)
	// Output:
	// page 1: 2 orders
	// page 2: 4 orders
	// page 3: 4 orders
	// window 2026-08-19T18:00:00Z to 2026-08-20T18:00:00Z
	// fee tier 0.0095, 30-day volume 12480.55
	// BTC-USD: 2 orders, fees 2.0555 on 8218.875 filled
	// ETH-USD: 2 orders, fees 9.5 on 1000 filled
	// total: 4 orders, fees 11.5555 on 9218.875 filled, effective rate 0.00125346097 (partial=false)
}
