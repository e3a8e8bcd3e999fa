package cli

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/tradewire/tradewire/broker"
)

// Every decimal is exact text, never a float or an exponent; an absent one
// is null; a time is UTC RFC 3339 ("" when zero).
func TestBrokerJSONShapes(t *testing.T) {
	t.Parallel()
	d := decimal.RequireFromString
	at := time.Date(2026, 3, 2, 9, 30, 0, 123000000, time.FixedZone("EST", -5*3600))
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"account, top tier", broker.Account{AccountNumber: "TW1", Status: "active", AccountType: "individual", IsAPITradable: true,
			BuyingPower: d("0.000100000000000000"), BuyingPowerCurrency: "USD", FeeTier: broker.FeeTier{FeeRatio: d("0.0095"), ThirtyDayVolume: d("1e3")}},
			`{"account_number":"TW1","status":"active","account_type":"individual","is_api_tradable":true,"buying_power":"0.0001",` +
				`"buying_power_currency":"USD","fee_ratio":"0.0095","thirty_day_volume":"1000","next_fee_tier_ratio":null,"next_fee_tier_threshold":null}`},
		{"quote, crossed", broker.Quote{Symbol: "BTC-USD", Timestamp: at, Bid: d("2"), Ask: d("1")},
			`{"symbol":"BTC-USD","bid":"2","ask":"1","crossed":true,"timestamp":"2026-03-02T14:30:00.123Z"}`},
		{"estimate, bid row", broker.PriceEstimate{Symbol: "BTC-USD", Side: broker.PriceBid, Quantity: d("0.1"), Bid: decimal.NewNullDecimal(d("65000.5")),
			FeeRatio: d("0.0095"), EstFee: d("61.75")},
			`{"symbol":"BTC-USD","side":"bid","quantity":"0.1","price":"65000.5","fee_ratio":"0.0095","est_fee":"61.75","est_total_cost":null,"timestamp":""}`},
		{"fee report, nothing filled", broker.FeeReport{Start: at, End: at, Pages: 1},
			`{"partial":false,"window_start":"2026-03-02T14:30:00.123Z","window_end":"2026-03-02T14:30:00.123Z","fee_ratio":"0",` +
				`"thirty_day_volume":"0","total_fees":"0","orders":0,"filled_notional":"0","effective_fee_rate":null,"pages":1,"requests":2,"by_symbol":[]}`},
		{"fee report by symbol", broker.FeeReport{Start: at, End: at, Pages: 1, BySymbol: []broker.SymbolFees{{Symbol: "ETH-USD", Orders: 3, TotalFees: d("1"), FilledNotional: d("3")}}},
			`{"partial":false,"window_start":"2026-03-02T14:30:00.123Z","window_end":"2026-03-02T14:30:00.123Z","fee_ratio":"0",` +
				`"thirty_day_volume":"0","total_fees":"0","orders":0,"filled_notional":"0","effective_fee_rate":null,"pages":1,"requests":2,` +
				`"by_symbol":[{"symbol":"ETH-USD","orders":3,"total_fees":"1","filled_notional":"3","effective_fee_rate":"0.333333333333"}]}`},
		{"preview with a violation", broker.Preview{Violations: []broker.Violation{{Field: "symbol", Code: "pair_not_tradable", Detail: "halted"}}},
			`{"estimate":true,"valid":false,"symbol":"","side":"","type":"","asset_quantity":null,"quote_amount":null,"limit_price":null,` +
				`"stop_price":null,"estimated_asset_quantity":"0","market_price":"0","price":"0","notional":"0","fee_ratio":"0","fee":"0",` +
				`"total":"0","suggested_quantity":null,"violations":[{"field":"symbol","code":"pair_not_tradable","limit":null,"detail":"halted"}],"estimated_at":""}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, err := json.Marshal(jsonShape(tt.v))
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.want {
				t.Errorf("got  %s\nwant %s", b, tt.want)
			}
		})
	}
}

// A pointer to a broker read type prints as the value, a slice of them as
// a list of their shapes (empty, never null), and anything else as it is.
func TestBrokerJSONPointersAndSlices(t *testing.T) {
	t.Parallel()
	d := decimal.RequireFromString
	q := broker.Quote{Symbol: "BTC-USD", Bid: d("1"), Ask: d("2")}
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"pointer", &q, `{"symbol":"BTC-USD","bid":"1","ask":"2","crossed":false,"timestamp":""}`},
		{"slice", []broker.Quote{q}, `[{"symbol":"BTC-USD","bid":"1","ask":"2","crossed":false,"timestamp":""}]`},
		{"nil slice", []broker.Order(nil), `[]`},
		{"nil pointer", (*broker.Order)(nil), `null`},
		{"other slice", []string{"a"}, `["a"]`},
		{"nil", nil, `null`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, err := json.Marshal(jsonShape(tt.v))
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.want {
				t.Errorf("got  %s\nwant %s", b, tt.want)
			}
		})
	}
}
