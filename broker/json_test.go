package broker

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/shopspring/decimal"
)

// The types written with the venue's field names read back as they were:
// decode a fixture as the venue's, marshal it, decode that as the venue's
// again, and compare.
func TestMarshalJSON_RoundTrips(t *testing.T) {
	t.Parallel()
	tests := []struct {
		fixture string
		decode  func(b []byte) (any, error)
	}{
		{"holdings.json", decodeRows[wireHolding]},
		{"trading_pairs.json", decodeRows[wireTradingPair]},
		{"best_bid_ask.json", decodeRows[wireQuote]},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			t.Parallel()
			raw, err := os.ReadFile(filepath.Join("testdata", "fixtures", "v2", tt.fixture))
			if err != nil {
				t.Fatal(err)
			}
			var page struct {
				Results json.RawMessage `json:"results"`
			}
			if err := json.Unmarshal(raw, &page); err != nil {
				t.Fatal(err)
			}
			first, err := tt.decode(page.Results)
			if err != nil {
				t.Fatal(err)
			}
			b, err := json.Marshal(first)
			if err != nil {
				t.Fatal(err)
			}
			second, err := tt.decode(b)
			if err != nil {
				t.Fatalf("%s does not decode: %v", b, err)
			}
			if !equalDecoded(first, second) {
				t.Errorf("round trip changed the value:\n%+v\n%+v\nvia %s", first, second, b)
			}
		})
	}
}

// decodeRows decodes a JSON array of the venue's rows W.
func decodeRows[W venueRow[T], T any](b []byte) (any, error) {
	var ws []W
	err := json.Unmarshal(b, &ws)
	return values(ws), err
}

// equalDecoded compares decoded values field by field, decimals by value
// (0.50 equals 0.5) and times by instant.
func equalDecoded(a, b any) bool { return sameValue(reflect.ValueOf(a), reflect.ValueOf(b)) }

func sameValue(a, b reflect.Value) bool {
	if a.Type() != b.Type() {
		return false
	}
	switch v := a.Interface().(type) {
	case decimal.Decimal:
		return v.Equal(b.Interface().(decimal.Decimal))
	case time.Time:
		return v.Equal(b.Interface().(time.Time))
	}
	switch a.Kind() {
	case reflect.Struct:
		for i := range a.NumField() {
			if !sameValue(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	case reflect.Slice:
		if a.Len() != b.Len() {
			return false
		}
		for i := range a.Len() {
			if !sameValue(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a.Interface(), b.Interface())
}

// Every decimal is exact text, never a float or an exponent; an absent one
// is null; a time is UTC RFC 3339 ("" when zero).
func TestMarshalJSON_Shapes(t *testing.T) {
	t.Parallel()
	d := decimal.RequireFromString
	at := time.Date(2026, 3, 2, 9, 30, 0, 123000000, time.FixedZone("EST", -5*3600))
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"account, top tier", Account{AccountNumber: "TW1", Status: "active", AccountType: "individual", IsAPITradable: true,
			BuyingPower: d("0.000100000000000000"), BuyingPowerCurrency: "USD", FeeTier: FeeTier{FeeRatio: d("0.0095"), ThirtyDayVolume: d("1e3")}},
			`{"account_number":"TW1","status":"active","account_type":"individual","is_api_tradable":true,"buying_power":"0.0001",` +
				`"buying_power_currency":"USD","fee_ratio":"0.0095","thirty_day_volume":"1000","next_fee_tier_ratio":null,"next_fee_tier_threshold":null}`},
		{"quote, crossed", Quote{Symbol: "BTC-USD", Timestamp: at, Bid: d("2"), Ask: d("1")},
			`{"symbol":"BTC-USD","bid":"2","ask":"1","crossed":true,"timestamp":"2026-03-02T14:30:00.123Z"}`},
		{"estimate, bid row", PriceEstimate{Symbol: "BTC-USD", Side: PriceBid, Quantity: d("0.1"), Bid: decimal.NewNullDecimal(d("65000.5")),
			FeeRatio: d("0.0095"), EstFee: d("61.75")},
			`{"symbol":"BTC-USD","side":"bid","quantity":"0.1","price":"65000.5","fee_ratio":"0.0095","est_fee":"61.75","est_total_cost":null,"timestamp":""}`},
		{"fee report, nothing filled", FeeReport{Start: at, End: at, Pages: 1},
			`{"partial":false,"window_start":"2026-03-02T14:30:00.123Z","window_end":"2026-03-02T14:30:00.123Z","fee_ratio":"0",` +
				`"thirty_day_volume":"0","total_fees":"0","orders":0,"filled_notional":"0","effective_fee_rate":null,"pages":1,"requests":2,"by_symbol":[]}`},
		{"symbol fees", SymbolFees{Symbol: "ETH-USD", Orders: 3, TotalFees: d("1"), FilledNotional: d("3")},
			`{"symbol":"ETH-USD","orders":3,"total_fees":"1","filled_notional":"3","effective_fee_rate":"0.333333333333"}`},
		{"violation", Violation{Field: "symbol", Code: ViolationNotTradable, Detail: "halted"},
			`{"field":"symbol","code":"pair_not_tradable","limit":null,"detail":"halted"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, err := json.Marshal(tt.v)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.want {
				t.Errorf("got  %s\nwant %s", b, tt.want)
			}
		})
	}
}

// The read types have no UnmarshalJSON: their JSON is tradewire's output
// shape, and the venue's answers are decoded inside the package, so
// json.Unmarshal cannot mistake the one for the other.
func TestReadTypesAreNotUnmarshalers(t *testing.T) {
	t.Parallel()
	for _, v := range []any{&Account{}, &Holding{}, &TradingPair{}, &Quote{}, &PriceEstimate{}, &Order{}} {
		if _, ok := v.(json.Unmarshaler); ok {
			t.Errorf("%T implements json.Unmarshaler", v)
		}
	}
}
