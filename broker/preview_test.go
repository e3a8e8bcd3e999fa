package broker

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/tradewire/tradewire/transport"
)

// previewVenue serves the trading pair and the estimated price fixtures
// (ask or bid, by the side asked for) and the best bid/ask.
func previewVenue(t *testing.T, pairJSON string) (*Client, *fakeVenue) {
	t.Helper()
	c, v, _ := setup(t)
	if pairJSON == "" {
		v.fixture(http.MethodGet, pathTradingPairs, "trading_pairs.json")
	} else {
		v.reply(http.MethodGet, pathTradingPairs, 200, pairJSON)
	}
	v.fixture(http.MethodGet, pathBestBidAsk, "best_bid_ask.json")
	v.handle(http.MethodGet, pathEstimatedPrice, func(w http.ResponseWriter, r *http.Request) {
		name := "estimated_price.json"
		if r.URL.Query().Get("side") == "bid" {
			name = "estimated_price_bid.json"
		}
		_, _ = w.Write(readFixture(t, name))
	})
	return c, v
}

func violations(p *Preview) string {
	var out []string
	for _, v := range p.Violations {
		s := v.Field + " " + string(v.Code)
		if !v.Limit.IsZero() {
			s += " " + v.Limit.String()
		}
		out = append(out, s)
	}
	return strings.Join(out, "; ")
}

func TestPreview(t *testing.T) {
	t.Parallel()
	d := decimal.RequireFromString
	const (
		pairReq = "GET " + pathTradingPairs + "?symbol=BTC-USD"
		bbaReq  = "GET " + pathBestBidAsk + "?symbol=BTC-USD"
		estAsk  = "GET " + pathEstimatedPrice + "?symbol=BTC-USD&side=ask&quantity="
		estBid  = "GET " + pathEstimatedPrice + "?symbol=BTC-USD&side=bid&quantity="
	)
	tests := []struct {
		name       string
		pair       string
		req        OrderRequest
		violations string
		suggested  string
		qty        string
		price      string
		notional   string
		fee        string
		total      string
		requests   []string
	}{
		{
			name: "valid market buy matches the venue's own estimate",
			req:  OrderRequest{Symbol: "BTC-USD", Side: SideBuy, Type: TypeMarket, AssetQuantity: d("0.001")},
			qty:  "0.001", price: "64975.78", notional: "64.97578", fee: "0.61726991", total: "65.59304991",
			suggested: "null",
			requests:  []string{pairReq, estAsk + "0.001"},
		},
		{
			name:       "sell uses the bid; off-increment quantity gets a rounded-down suggestion",
			req:        OrderRequest{Symbol: "BTC-USD", Side: SideSell, Type: TypeMarket, AssetQuantity: d("0.0010000001")},
			violations: "market_order_config.asset_quantity not_a_multiple_of_increment 0.00000001",
			suggested:  "0.00100000",
			qty:        "0.0010000001", price: "64977.64", notional: "64.977646497764", fee: "0.617287641728758", total: "64.360358856035242",
			requests: []string{pairReq, estBid + "0.0010000001"},
		},
		{
			name: "limit above the maximum, price off the quote increment",
			req:  OrderRequest{Symbol: "BTC-USD", Side: SideBuy, Type: TypeLimit, AssetQuantity: d("25"), LimitPrice: d("36352.785")},
			violations: "limit_order_config.limit_price not_a_multiple_of_increment 0.01; " +
				"limit_order_config.asset_quantity above_max_order_size 20",
			suggested: "20.00000000",
			qty:       "25", price: "36352.785", notional: "908819.625", fee: "8633.7864375", total: "917453.4114375",
			requests: []string{pairReq, estAsk + "20"}, // the venue estimates no size above the maximum
		},
		{
			name:       "below the minimum order amount, no valid suggestion",
			req:        OrderRequest{Symbol: "BTC-USD", Side: SideBuy, Type: TypeMarket, AssetQuantity: d("0.000001")},
			violations: "market_order_config.asset_quantity below_min_order_amount 0.1",
			suggested:  "null",
			qty:        "0.000001", price: "64975.78", notional: "0.06497578", fee: "0.00061726991", total: "0.06559304991",
			requests: []string{pairReq, estAsk + "0.000001"},
		},
		{
			name:       "pair not tradable, not API tradable",
			pair:       `{"next":null,"results":[{"symbol":"BTC-USD","asset_code":"BTC","quote_code":"USD","asset_increment":"0.00000001","quote_increment":"0.01","max_order_size":"20","status":"untradable","is_api_tradable":false}]}`,
			req:        OrderRequest{Symbol: "BTC-USD", Side: SideBuy, Type: TypeMarket, AssetQuantity: d("0.001")},
			violations: "symbol pair_not_tradable; symbol pair_not_api_tradable",
			suggested:  "null",
			qty:        "0.001", price: "64975.78", notional: "64.97578", fee: "0.61726991", total: "65.59304991",
			requests: []string{pairReq, estAsk + "0.001"},
		},
		{
			name:      "quote-sized limit order: converted at the limit price",
			req:       OrderRequest{Symbol: "BTC-USD", Side: SideBuy, Type: TypeLimit, QuoteAmount: d("100"), LimitPrice: d("64000")},
			suggested: "null",
			qty:       "0.0015625", price: "64000", notional: "100", fee: "0.95", total: "100.95",
			requests: []string{pairReq, estAsk + "0.0015625"},
		},
		{
			name: "quote amount off increment and too small to buy one increment",
			req:  OrderRequest{Symbol: "BTC-USD", Side: SideBuy, Type: TypeLimit, QuoteAmount: d("0.0001"), LimitPrice: d("64000")},
			violations: "limit_order_config.quote_amount not_a_multiple_of_increment 0.01; " +
				"limit_order_config.quote_amount below_min_order_amount 0.00000001; " +
				"limit_order_config.quote_amount below_min_order_amount 0.1",
			suggested: "null",
			qty:       "0", price: "64000", notional: "0.0001", fee: "0.00000095", total: "0.00010095",
			requests: []string{pairReq, estAsk + "0.00000001"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, v := previewVenue(t, tt.pair)
			p, err := c.Preview(context.Background(), tt.req)
			if err != nil {
				t.Fatal(err)
			}
			runChecks(t, []check{
				{"estimate", boolStr(p.Estimate), "true"},
				{"violations", violations(p), tt.violations},
				{"ok", boolStr(p.OK()), boolStr(tt.violations == "")},
				{"suggested", exactNull(p.SuggestedQuantity), tt.suggested},
				{"quantity", p.AssetQuantity.String(), tt.qty},
				{"price", p.Price.String(), tt.price},
				{"notional", p.Notional.String(), tt.notional},
				{"fee", p.Fee.String(), tt.fee},
				{"total", p.Total.String(), tt.total},
				{"request unchanged", fmt.Sprint(p.Request), fmt.Sprint(tt.req)},
			})
			wantRequests(t, v, tt.requests...)
		})
	}
}

func TestPreviewCachesPairs(t *testing.T) {
	t.Parallel()
	c, v := previewVenue(t, "")
	req := OrderRequest{Symbol: "BTC-USD", Side: SideBuy, Type: TypeMarket, AssetQuantity: decimal.RequireFromString("0.001")}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.Preview(context.Background(), req); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	before := v.count(pathTradingPairs)
	for range 3 {
		if _, err := c.Preview(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	if after := v.count(pathTradingPairs); after != before || before > 4 {
		t.Errorf("trading pairs read %d times, then %d more", before, after-before)
	}
}

func TestPreviewRefused(t *testing.T) {
	t.Parallel()
	d := decimal.RequireFromString
	c, v := previewVenue(t, `{"next":null,"results":[]}`)
	ok := OrderRequest{Symbol: "BTC-USD", Side: SideBuy, Type: TypeMarket, AssetQuantity: d("1")}
	tests := []struct {
		name  string
		edit  func(r *OrderRequest)
		field string
	}{
		{"no size", func(r *OrderRequest) { r.AssetQuantity = decimal.Zero }, "asset_quantity"},
		{"two sizes", func(r *OrderRequest) { r.QuoteAmount = d("1") }, "asset_quantity"},
		{"negative", func(r *OrderRequest) { r.AssetQuantity = d("-1") }, "asset_quantity"},
		{"negative price", func(r *OrderRequest) { r.LimitPrice = d("-1") }, "limit_price"},
		{"side", func(r *OrderRequest) { r.Side = "ask" }, "side"},
		{"type", func(r *OrderRequest) { r.Type = "trailing_stop" }, "type"},
		{"symbol", func(r *OrderRequest) { r.Symbol = "btc-usd" }, "symbol"},
		{"quantity 1e400", func(r *OrderRequest) { r.AssetQuantity = decimal.New(1, 400) }, "asset_quantity"},
		{"quantity 1e-400", func(r *OrderRequest) { r.AssetQuantity = decimal.New(1, -400) }, "asset_quantity"},
		{"quantity of 1000 digits", func(r *OrderRequest) { r.AssetQuantity = d(strings.Repeat("9", 1000)) }, "asset_quantity"},
		{"quote amount with 19 places", func(r *OrderRequest) {
			r.AssetQuantity, r.QuoteAmount = decimal.Zero, d("0.0000000000000000001")
		}, "quote_amount"},
		{"limit price 1e400", func(r *OrderRequest) { r.LimitPrice = decimal.New(1, 400) }, "limit_price"},
		{"stop price 1e-400", func(r *OrderRequest) { r.StopPrice = decimal.New(1, -400) }, "stop_price"},
		// The rules Place refuses offline are Preview's too (one check).
		{"stop_limit without prices", func(r *OrderRequest) { r.Type = TypeStopLimit }, "limit_price"},
		{"market with a stop price", func(r *OrderRequest) { r.StopPrice = d("1") }, "stop_price"},
		{"quote-sized market order", func(r *OrderRequest) { r.AssetQuantity, r.QuoteAmount = decimal.Zero, d("100") }, "quote_amount"},
		{"symbol with a path", func(r *OrderRequest) { r.Symbol = "BTC-USD/../x" }, "symbol"},
		{"time in force on a market order", func(r *OrderRequest) { r.TimeInForce = TimeInForceGTC }, "time_in_force"},
	}
	for _, tt := range tests {
		req := ok
		tt.edit(&req)
		_, err := c.Preview(context.Background(), req)
		var ae *ArgumentError
		if !errors.As(err, &ae) || ae.Field != tt.field || !errors.Is(err, transport.ErrInvalidRequest) {
			t.Errorf("%s: err = %v, want an *ArgumentError on %s", tt.name, err, tt.field)
		}
	}
	wantRequests(t, v)
	if _, err := c.Preview(context.Background(), ok); !errors.Is(err, ErrUnknownSymbol) {
		t.Errorf("unknown pair: %v", err)
	}
}
