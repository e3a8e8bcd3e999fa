package broker

import (
	"errors"
	"strings"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/tradewire/tradewire/transport"
)

func d(s string) decimal.Decimal { return decimal.RequireFromString(s) }

func TestValidate(t *testing.T) {
	ok := OrderRequest{Symbol: "BTC-USD", Side: SideBuy, Type: TypeLimit, AssetQuantity: d("0.001"), LimitPrice: d("60000")}
	tests := []struct {
		name  string
		edit  func(*OrderRequest)
		field string // "" means valid
	}{
		{"valid limit", func(*OrderRequest) {}, ""},
		{"valid market", func(r *OrderRequest) { r.Type, r.LimitPrice = TypeMarket, decimal.Zero }, ""},
		{"valid stop_loss", func(r *OrderRequest) { r.Type, r.LimitPrice, r.StopPrice = TypeStopLoss, decimal.Zero, d("50000") }, ""},
		{"valid stop_limit", func(r *OrderRequest) { r.Type, r.StopPrice = TypeStopLimit, d("50000") }, ""},
		{"valid quote sizing", func(r *OrderRequest) { r.AssetQuantity, r.QuoteAmount = decimal.Zero, d("10") }, ""},
		{"lower-case symbol", func(r *OrderRequest) { r.Symbol = "btc-usd" }, "symbol"},
		{"symbol without quote", func(r *OrderRequest) { r.Symbol = "BTC" }, "symbol"},
		{"symbol with path", func(r *OrderRequest) { r.Symbol = "BTC-USD/../x" }, "symbol"},
		{"bad side", func(r *OrderRequest) { r.Side = "hold" }, "side"},
		{"bad type", func(r *OrderRequest) { r.Type = "iceberg" }, "type"},
		{"no sizing", func(r *OrderRequest) { r.AssetQuantity = decimal.Zero }, "asset_quantity"},
		{"both sizings", func(r *OrderRequest) { r.QuoteAmount = d("10") }, "asset_quantity"},
		{"negative quantity", func(r *OrderRequest) { r.AssetQuantity = d("-1") }, "asset_quantity"},
		{"negative quote", func(r *OrderRequest) { r.AssetQuantity, r.QuoteAmount = decimal.Zero, d("-5") }, "quote_amount"},
		{"market by quote", func(r *OrderRequest) {
			r.Type, r.LimitPrice, r.AssetQuantity, r.QuoteAmount = TypeMarket, decimal.Zero, decimal.Zero, d("10")
		}, "quote_amount"},
		{"market with a limit price", func(r *OrderRequest) { r.Type = TypeMarket }, "limit_price"},
		{"limit without a price", func(r *OrderRequest) { r.LimitPrice = decimal.Zero }, "limit_price"},
		{"limit with a stop", func(r *OrderRequest) { r.StopPrice = d("1") }, "stop_price"},
		{"stop_loss without a stop", func(r *OrderRequest) { r.Type, r.LimitPrice = TypeStopLoss, decimal.Zero }, "stop_price"},
		{"stop_limit without a limit", func(r *OrderRequest) { r.Type, r.LimitPrice, r.StopPrice = TypeStopLimit, decimal.Zero, d("1") }, "limit_price"},
		{"negative limit price", func(r *OrderRequest) { r.LimitPrice = d("-1") }, "limit_price"},
		{"quantity 1e400", func(r *OrderRequest) { r.AssetQuantity = decimal.New(1, 400) }, "asset_quantity"},
		{"quantity 1e-400", func(r *OrderRequest) { r.AssetQuantity = decimal.New(1, -400) }, "asset_quantity"},
		{"quantity of 1000 digits", func(r *OrderRequest) { r.AssetQuantity = d(strings.Repeat("9", 1000)) }, "asset_quantity"},
		{"quantity with 19 places", func(r *OrderRequest) { r.AssetQuantity = d("0.0000000000000000001") }, "asset_quantity"},
		{"quantity with 18 places", func(r *OrderRequest) { r.AssetQuantity = d("0.000000000000000001") }, ""},
		{"quantity with trailing zeros past 18 places", func(r *OrderRequest) { r.AssetQuantity = d("0.00100000000000000000000") }, ""},
		{"quote amount 1e400", func(r *OrderRequest) { r.AssetQuantity, r.QuoteAmount = decimal.Zero, decimal.New(1, 400) }, "quote_amount"},
		{"limit price 1e-400", func(r *OrderRequest) { r.LimitPrice = decimal.New(1, -400) }, "limit_price"},
		{"limit price of 21 digits", func(r *OrderRequest) { r.LimitPrice = decimal.New(1, 20) }, "limit_price"},
		{"stop price 1e400", func(r *OrderRequest) { r.Type, r.StopPrice = TypeStopLimit, decimal.New(1, 400) }, "stop_price"},
		{"time in force gtc", func(r *OrderRequest) { r.TimeInForce = TimeInForceGTC }, ""},
		{"time in force gfd", func(r *OrderRequest) { r.TimeInForce = TimeInForceGFD }, ""},
		{"time in force gfw on a stop_loss", func(r *OrderRequest) {
			r.Type, r.LimitPrice, r.StopPrice, r.TimeInForce = TypeStopLoss, decimal.Zero, d("50000"), TimeInForceGFW
		}, ""},
		{"time in force gfm on a stop_limit", func(r *OrderRequest) { r.Type, r.StopPrice, r.TimeInForce = TypeStopLimit, d("50000"), TimeInForceGFM }, ""},
		{"time in force ioc", func(r *OrderRequest) { r.TimeInForce = "ioc" }, "time_in_force"},
		{"time in force in upper case", func(r *OrderRequest) { r.TimeInForce = "GFD" }, "time_in_force"},
		{"market with gfd", func(r *OrderRequest) { r.Type, r.LimitPrice, r.TimeInForce = TypeMarket, decimal.Zero, TimeInForceGFD }, "time_in_force"},
		{"market with gtc", func(r *OrderRequest) { r.Type, r.LimitPrice, r.TimeInForce = TypeMarket, decimal.Zero, TimeInForceGTC }, "time_in_force"},
	}
	for _, tt := range tests {
		r := ok
		tt.edit(&r)
		err := r.Validate()
		if tt.field == "" {
			if err != nil {
				t.Errorf("%s: %v", tt.name, err)
			}
			continue
		}
		var ve *ArgumentError
		if !errors.As(err, &ve) || ve.Field != tt.field || !errors.Is(err, transport.ErrInvalidRequest) {
			t.Errorf("%s: err = %v, want an ArgumentError on %s", tt.name, err, tt.field)
		}
		if _, berr := r.body("x"); berr == nil {
			t.Errorf("%s: body built bytes for an invalid request", tt.name)
		}
	}
}

func TestBodyBytes(t *testing.T) {
	const cid = "ae6ec0cf-288b-51fc-ba4f-34c2c5b23ed0"
	tests := []struct {
		req  OrderRequest
		want string
	}{
		{OrderRequest{Symbol: "BTC-USD", Side: SideBuy, Type: TypeLimit, AssetQuantity: d("0.0001"), LimitPrice: d("36352.78")},
			`{"client_order_id":"` + cid + `","side":"buy","type":"limit","symbol":"BTC-USD","limit_order_config":{"asset_quantity":"0.0001","limit_price":"36352.78","time_in_force":"gtc"}}`},
		{OrderRequest{Symbol: "BTC-USD", Side: SideSell, Type: TypeMarket, AssetQuantity: d("1E-8")},
			`{"client_order_id":"` + cid + `","side":"sell","type":"market","symbol":"BTC-USD","market_order_config":{"asset_quantity":"0.00000001"}}`},
		{OrderRequest{Symbol: "ETH-USD", Side: SideBuy, Type: TypeStopLimit, QuoteAmount: d("2.5e2"), LimitPrice: d("3000"), StopPrice: d("2990.5")},
			`{"client_order_id":"` + cid + `","side":"buy","type":"stop_limit","symbol":"ETH-USD","stop_limit_order_config":{"quote_amount":"250","limit_price":"3000","stop_price":"2990.5","time_in_force":"gtc"}}`},
		{OrderRequest{Symbol: "BTC-USD", Side: SideBuy, Type: TypeLimit, AssetQuantity: d("0.0001"), LimitPrice: d("36352.78"), TimeInForce: TimeInForceGFD},
			`{"client_order_id":"` + cid + `","side":"buy","type":"limit","symbol":"BTC-USD","limit_order_config":{"asset_quantity":"0.0001","limit_price":"36352.78","time_in_force":"gfd"}}`},
		{OrderRequest{Symbol: "BTC-USD", Side: SideSell, Type: TypeStopLoss, AssetQuantity: d("0.5"), StopPrice: d("50000"), TimeInForce: TimeInForceGFW},
			`{"client_order_id":"` + cid + `","side":"sell","type":"stop_loss","symbol":"BTC-USD","stop_loss_order_config":{"asset_quantity":"0.5","stop_price":"50000","time_in_force":"gfw"}}`},
		{OrderRequest{Symbol: "ETH-USD", Side: SideBuy, Type: TypeStopLimit, AssetQuantity: d("1"), LimitPrice: d("3000"), StopPrice: d("2990.5"), TimeInForce: TimeInForceGFM},
			`{"client_order_id":"` + cid + `","side":"buy","type":"stop_limit","symbol":"ETH-USD","stop_limit_order_config":{"asset_quantity":"1","limit_price":"3000","stop_price":"2990.5","time_in_force":"gfm"}}`},
	}
	for _, tt := range tests {
		got, err := tt.req.body(cid)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tt.want {
			t.Errorf("body =\n%s\nwant\n%s", got, tt.want)
		}
		again, _ := tt.req.body(cid)
		if string(again) != string(got) {
			t.Error("the same request gave different bytes")
		}
	}
}
