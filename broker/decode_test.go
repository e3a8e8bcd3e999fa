package broker

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
)

// exact prints d with the exponent it was decoded with, so that
// "0.000100000000000000" prints as sent: decoding kept every digit.
func exact(d decimal.Decimal) string {
	if d.Exponent() < 0 {
		return d.StringFixed(-d.Exponent())
	}
	return d.String()
}

func exactNull(d decimal.NullDecimal) string {
	if !d.Valid {
		return "null"
	}
	return exact(d.Decimal)
}

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "fixtures", "v2", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

type check struct {
	name      string
	got, want string
}

func runChecks(t *testing.T, checks []check) {
	t.Helper()
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %s, want %s", c.name, c.got, c.want)
		}
	}
}

func orderOpenChecks(t *testing.T, o Order, state OrderState, updated string, feeRemaining string) []check {
	return []check{
		{"id", o.ID, "6a8738ba-836d-4afd-abd8-483d7e4d01c9"},
		{"client_order_id", o.ClientOrderID, "9c8ecd0f-6842-5d7c-a156-fb5db925cc6d"},
		{"account_number", o.AccountNumber, "AB1234567890"},
		{"symbol", o.Symbol, "BTC-USD"},
		{"side", string(o.Side), "buy"},
		{"type", string(o.Type), "limit"},
		{"state", string(o.State), string(state)},
		{"filled_asset_quantity", exact(o.FilledAssetQuantity), "0.000000000000000000"},
		{"executions", strings.Repeat("x", len(o.Executions)), ""},
		{"average_price", exactNull(o.AveragePrice), "null"},
		{"created_at", o.CreatedAt.Format(time.RFC3339Nano), "2026-08-20T13:26:18.409035-04:00"},
		{"updated_at", o.UpdatedAt.Format(time.RFC3339Nano), updated},
		{"fee_charged", exact(o.FeeCharged), "0.0"},
		{"estimated_fee_remaining", exact(o.EstimatedFeeRemaining), feeRemaining},
		{"limit.asset_quantity", exactNull(o.LimitOrderConfig.AssetQuantity), "0.000100000000000000"},
		{"limit.limit_price", exactNull(o.LimitOrderConfig.LimitPrice), "36352.780000000000000000"},
		{"limit.quote_amount", exactNull(o.LimitOrderConfig.QuoteAmount), "null"},
		{"config is limit", boolStr(o.Config() == o.LimitOrderConfig && o.MarketOrderConfig == nil), "true"},
	}
}

func boolStr(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

func filledChecks(o Order) []check {
	return []check{
		{"id", o.ID, "1a2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d"},
		{"side", string(o.Side), "sell"},
		{"type", string(o.Type), "market"},
		{"state", string(o.State), "filled"},
		{"filled_asset_quantity", exact(o.FilledAssetQuantity), "0.100000000000000000"},
		{"executions", string(rune('0' + len(o.Executions))), "1"},
		{"exec.effective_price", exact(o.Executions[0].EffectivePrice), "65420.750000000000000000"},
		{"exec.quantity", exact(o.Executions[0].Quantity), "0.100000000000000000"},
		{"exec.timestamp", o.Executions[0].Timestamp.Format(time.RFC3339Nano), "2026-08-20T11:55:01-04:00"},
		{"average_price", exactNull(o.AveragePrice), "65420.75"},
		{"fee_charged", exact(o.FeeCharged), "1.6355"},
		{"estimated_fee_remaining", exact(o.EstimatedFeeRemaining), "0.0"},
		{"market.asset_quantity", exactNull(o.MarketOrderConfig.AssetQuantity), "0.100000000000000000"},
		{"filled notional", o.FilledNotional().String(), "6542.075"},
	}
}

// TestGolden decodes every captured v2 fixture and checks every field,
// decimals digit for digit.
func TestGolden(t *testing.T) {
	golden := map[string]func(t *testing.T, b []byte){
		"accounts.json": func(t *testing.T, b []byte) {
			p := mustPage[wireAccount](t, b)
			if p.Next != nil || len(p.Results) != 1 {
				t.Fatalf("next %v, %d results", p.Next, len(p.Results))
			}
			a := p.Results[0]
			runChecks(t, []check{
				{"account_number", a.AccountNumber, "AB1234567890"},
				{"status", a.Status, "active"},
				{"buying_power", exact(a.BuyingPower), "1042.55"},
				{"buying_power_currency", a.BuyingPowerCurrency, "USD"},
				{"account_type", a.AccountType, "individual"},
				{"is_api_tradable", boolStr(a.IsAPITradable), "true"},
				{"fee_ratio", exact(a.FeeTier.FeeRatio), "0.0095"},
				{"thirty_day_volume", exact(a.FeeTier.ThirtyDayVolume), "12480.55"},
				{"next_fee_tier_ratio", exactNull(a.FeeTier.NextFeeTierRatio), "0.0085"},
				{"next_fee_tier_threshold", exactNull(a.FeeTier.NextFeeTierThreshold), "50000.00"},
			})
		},
		"best_bid_ask.json": func(t *testing.T, b []byte) {
			p := mustPage[wireQuote](t, b)
			q := p.Results[0]
			runChecks(t, []check{
				{"symbol", q.Symbol, "BTC-USD"},
				{"timestamp", q.Timestamp.Format(time.RFC3339Nano), "2026-08-19T19:20:41.579217945Z"},
				{"bid", exact(q.Bid), "68329.2"},
				{"ask", exact(q.Ask), "68324.17"},
				{"crossed (kept as sent)", boolStr(q.Crossed()), "true"},
			})
		},
		"estimated_price.json": func(t *testing.T, b []byte) {
			p := mustPage[wirePriceEstimate](t, b)
			e := p.Results[0]
			price, _ := e.Price()
			runChecks(t, []check{
				{"symbol", e.Symbol, "BTC-USD"},
				{"side", string(e.Side), "ask"},
				{"quantity", exact(e.Quantity), "0.001"},
				{"timestamp", e.Timestamp.Format(time.RFC3339Nano), "2026-08-09T22:42:19.194164275Z"},
				{"fee_ratio", exact(e.FeeRatio), "0.0095"},
				{"est_fee", exact(e.EstFee), "0.61726991"},
				{"ask", exactNull(e.Ask), "64975.78"},
				{"bid", exactNull(e.Bid), "null"},
				{"est_total_cost", exactNull(e.EstTotalCost), "65.59304991"},
				{"price", exact(price), "64975.78"},
			})
		},
		"estimated_price_bid.json": func(t *testing.T, b []byte) {
			p := mustPage[wirePriceEstimate](t, b)
			e := p.Results[0]
			price, _ := e.Price()
			runChecks(t, []check{
				{"side", string(e.Side), "bid"},
				{"quantity", exact(e.Quantity), "0.001"},
				{"est_fee", exact(e.EstFee), "0.61728758"},
				{"ask", exactNull(e.Ask), "null"},
				{"bid", exactNull(e.Bid), "64977.64"},
				{"est_total_cost", exactNull(e.EstTotalCost), "null"},
				{"price", exact(price), "64977.64"},
			})
		},
		"holdings.json": func(t *testing.T, b []byte) {
			p := mustPage[wireHolding](t, b)
			h := p.Results[0]
			runChecks(t, []check{
				{"account_number", h.AccountNumber, "AB1234567890"},
				{"asset_code", h.AssetCode, "BTC"},
				{"total_quantity", exact(h.TotalQuantity), "0.53219871"},
				{"quantity_available_for_trading", exact(h.QuantityAvailableForTrading), "0.50000000"},
			})
		},
		"trading_pairs.json": func(t *testing.T, b []byte) {
			p := mustPage[wireTradingPair](t, b)
			tp := p.Results[0]
			runChecks(t, []check{
				{"symbol", tp.Symbol, "BTC-USD"},
				{"asset_code", tp.AssetCode, "BTC"},
				{"quote_code", tp.QuoteCode, "USD"},
				{"asset_increment", exact(tp.AssetIncrement), "0.00000001"},
				{"quote_increment", exact(tp.QuoteIncrement), "0.01"},
				{"max_order_size", exact(tp.MaxOrderSize), "20.0000000000000000"},
				{"min_order_amount", exactNull(tp.MinOrderAmount), "0.1"},
				{"status", tp.Status, "tradable"},
				{"is_api_tradable", boolStr(tp.IsAPITradable), "true"},
			})
		},
		"order_open.json": func(t *testing.T, b []byte) {
			o := mustOrder(t, b)
			runChecks(t, orderOpenChecks(t, o, StateOpen, "2026-08-20T13:26:18.858613-04:00", "0.034535141"))
		},
		"order_canceled.json": func(t *testing.T, b []byte) {
			o := mustOrder(t, b)
			runChecks(t, orderOpenChecks(t, o, StateCanceled, "2026-08-20T13:26:20.89189-04:00", "0.0"))
		},
		"order_filled.json": func(t *testing.T, b []byte) {
			o := mustOrder(t, b)
			runChecks(t, filledChecks(o))
		},
		"orders.json": func(t *testing.T, b []byte) {
			p := mustPage[wireOrder](t, b)
			if len(p.Results) != 5 {
				t.Fatalf("%d orders, want 5", len(p.Results))
			}
			var states, fees []string
			for _, o := range p.Results {
				states = append(states, string(o.State))
				fees = append(fees, exact(o.FeeCharged))
			}
			runChecks(t, []check{
				{"states", strings.Join(states, ","), "canceled,filled,canceled,open,failed"},
				{"fees", strings.Join(fees, ","), "0.0,1.6355,0.42,0.0,0.0"},
				{"partly filled then canceled: notional", p.Results[2].FilledNotional().String(), "1676.8"},
				{"partly filled then canceled: average_price", exactNull(p.Results[2].AveragePrice), "64000.0"},
				{"ETH symbol", p.Results[4].Symbol, "ETH-USD"},
			})
			runChecks(t, filledChecks(p.Results[1]))
		},
	}
	files, err := filepath.Glob(filepath.Join("testdata", "fixtures", "v2", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, f := range files {
		name := filepath.Base(f)
		fn, ok := golden[name]
		if !ok {
			t.Errorf("fixture %s has no golden test", name)
			continue
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fn(t, readFixture(t, name))
		})
	}
}

// mustPage decodes a page of the venue's rows W as a listing does.
func mustPage[W venueRow[T], T any](t *testing.T, b []byte) page[T] {
	t.Helper()
	var p page[W]
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	return page[T]{Next: p.Next, Results: values(p.Results)}
}

// mustOrder decodes an order in the venue's shape as Order and Place do.
func mustOrder(t *testing.T, b []byte) Order {
	t.Helper()
	o, err := decodeOrder(b)
	if err != nil {
		t.Fatal(err)
	}
	return *o
}

func TestDecodeOrderLenient(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body string
		check      func(t *testing.T, o Order)
	}{
		{"unknown state kept, unknown fields ignored", `{"id":"o-1","state":"expired","brand_new":{"x":[1,2]},"type":"trailing"}`, func(t *testing.T, o Order) {
			if o.State != "expired" || o.Type != "trailing" || o.State.Final() {
				t.Errorf("state %q type %q", o.State, o.Type)
			}
		}},
		{"pending and partially_filled", `{"id":"o-1","state":"pending"}`, func(t *testing.T, o Order) {
			if o.State != StatePending {
				t.Errorf("state %q", o.State)
			}
		}},
		{"bare and quoted in one object, exponent form", `{"id":"o-1","state":"open","fee_charged":1e-05,"estimated_fee_remaining":"2.5E+2","average_price":"123456789012345678.123456789012345678"}`, func(t *testing.T, o Order) {
			if exact(o.FeeCharged) != "0.00001" || o.EstimatedFeeRemaining.String() != "250" || exactNull(o.AveragePrice) != "123456789012345678.123456789012345678" {
				t.Errorf("fee %s remaining %s avg %s", exact(o.FeeCharged), o.EstimatedFeeRemaining, exactNull(o.AveragePrice))
			}
		}},
		{"null and empty money", `{"id":"o-1","state":"open","fee_charged":null,"average_price":"","executions":null}`, func(t *testing.T, o Order) {
			if !o.FeeCharged.IsZero() || o.AveragePrice.Valid || o.Executions != nil {
				t.Errorf("%+v", o)
			}
		}},
		{"offset and nanosecond timestamps", `{"id":"o-1","state":"open","created_at":"2026-08-20T13:26:18.409035-04:00","updated_at":"2026-08-19T19:20:41.579217945Z"}`, func(t *testing.T, o Order) {
			if o.CreatedAt.UTC().Format(time.RFC3339Nano) != "2026-08-20T17:26:18.409035Z" || o.UpdatedAt.Nanosecond() != 579217945 {
				t.Errorf("%v %v", o.CreatedAt, o.UpdatedAt)
			}
		}},
		{"one instant in the offset forms", `{"id":"o-1","state":"open","created_at":"2026-08-20T17:26:18.409035+00:00","updated_at":"2026-08-20T17:26:18.409035Z","executions":[{"effective_price":"1","quantity":"1","timestamp":"2026-01-20T12:26:18.409035-05:00"}]}`, func(t *testing.T, o Order) {
			want := time.Date(2026, 8, 20, 17, 26, 18, 409035000, time.UTC)
			if !o.CreatedAt.Equal(want) || !o.UpdatedAt.Equal(want) || len(o.Executions) != 1 ||
				!o.Executions[0].Timestamp.Equal(time.Date(2026, 1, 20, 17, 26, 18, 409035000, time.UTC)) {
				t.Errorf("%v %v %v", o.CreatedAt, o.UpdatedAt, o.Executions)
			}
		}},
		{"stop_limit config", `{"id":"o-1","state":"open","type":"stop_limit","stop_limit_order_config":{"quote_amount":"10.00","limit_price":"1.5","stop_price":1.4,"time_in_force":"gtc"}}`, func(t *testing.T, o Order) {
			c := o.Config()
			if c == nil || exactNull(c.QuoteAmount) != "10.00" || exactNull(c.StopPrice) != "1.4" || c.TimeInForce != "gtc" || c.AssetQuantity.Valid {
				t.Errorf("%+v", c)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.check(t, mustOrder(t, []byte(tt.body)))
		})
	}
}

func FuzzDecodeOrder(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "fixtures", "v2", "order*.json"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"fee_charged":1e-05,"state":"weird","executions":[{"quantity":"1e64","effective_price":null}]}`))
	f.Add([]byte(`{"results":[{"id":1}],"next":"x"}`))
	f.Add([]byte(`{"id":"a","state":"open","st\u0061te":"failed","executions":[{"quantity":"1","Quantity":"-1"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if o, err := decodeAs[wireOrder](b); err == nil {
			_ = o.FilledNotional() // bounded decimals: cheap, never panics
			_ = o.Config()
			for _, d := range []decimal.Decimal{o.FeeCharged, o.FilledAssetQuantity, o.EstimatedFeeRemaining, o.AveragePrice.Decimal} {
				if d.Exponent() > 64 {
					t.Fatalf("exponent %d", d.Exponent())
				}
			}
		}
		var p page[wireOrder]
		if json.Unmarshal(b, &p) == nil {
			_ = values(p.Results)
		}
		var a page[wireAccount]
		if json.Unmarshal(b, &a) == nil {
			_ = values(a.Results)
		}
		var e page[wirePriceEstimate]
		if json.Unmarshal(b, &e) == nil {
			_ = values(e.Results)
		}
	})
}

// TestDecodeOrderStrict: an order that contradicts itself is unreadable,
// never a fact: json.Unmarshal alone would keep the last of a repeated
// key and read a key whatever its case, so a "failed" could hide in an
// open order's JSON.
func TestDecodeOrderStrict(t *testing.T) {
	t.Parallel()
	open := string(readFixture(t, "order_open.json"))
	edit := func(old, new string) string {
		if !strings.Contains(open, old) {
			t.Fatalf("the fixture lacks %s", old)
		}
		return strings.Replace(open, old, new, 1)
	}
	tests := []struct{ name, body, want string }{
		{"state twice", edit(`"state": "open"`, `"state": "open", "state": "failed"`), "twice"},
		{"state twice, escaped", edit(`"state": "open"`, `"state": "open", "st\u0061te": "failed"`), "twice"},
		{"STATE", edit(`"state": "open"`, `"state": "open", "STATE": "failed"`), "case"},
		{"State with a long s", edit(`"state": "open"`, `"state": "open", "ſtate": "failed"`), "case"},
		{"ID", edit(`"id": "6a8738ba`, `"ID": "00000000-0000-4000-8000-000000000000", "id": "6a8738ba`), "case"},
		{"id twice", edit(`"id": "6a8738ba`, `"id": "00000000-0000-4000-8000-000000000000", "id": "6a8738ba`), "twice"},
		{"no id", edit(`"id": "6a8738ba-836d-4afd-abd8-483d7e4d01c9"`, `"order_id": "6a8738ba-836d-4afd-abd8-483d7e4d01c9"`), "no id"},
		{"null id", edit(`"id": "6a8738ba-836d-4afd-abd8-483d7e4d01c9"`, `"id": null`), "no id"},
		{"no state", edit(`"state": "open"`, `"status": "open"`), "no state"},
		{"a config key twice", edit(`"limit_price"`, `"limit_price": "1", "limit_price"`), "twice"},
		{"a config key in upper case", edit(`"limit_price"`, `"LIMIT_PRICE": "1", "limit_price"`), "case"},
		{"negative filled_asset_quantity", edit(`"filled_asset_quantity": "0.000000000000000000"`, `"filled_asset_quantity": "-0.5"`), "negative"},
		{"negative asset_quantity", edit(`"asset_quantity": "0.000100000000000000"`, `"asset_quantity": "-0.0001"`), "negative"},
		{"negative execution quantity", edit(`"executions": []`, `"executions": [{"effective_price": "1", "quantity": -1, "timestamp": "2026-08-20T13:26:18Z"}]`), "negative"},
		{"an execution key twice", edit(`"executions": []`, `"executions": [{"quantity": "1", "quantity": "2"}]`), "twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o, err := decodeOrder([]byte(tt.body))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("decodeOrder = %+v, %v; want an error saying %q", o, err, tt.want)
			}
			if _, err := (orderCodec{}).Facts([]byte(tt.body)); err == nil {
				t.Fatal("the engine's codec read it")
			}
		})
	}
	// Repeated keys in different objects, and keys the order does not
	// read, are not contradictions.
	for _, body := range []string{
		open,
		edit(`"executions": []`, `"executions": [{"quantity": "1", "effective_price": "2"}, {"quantity": "1", "effective_price": "2"}]`),
		edit(`"state": "open"`, `"state": "open", "extra": {"state": 1, "id": [{"id": 2}]}`),
	} {
		if _, err := decodeOrder([]byte(body)); err != nil {
			t.Errorf("decodeOrder refused a consistent order: %v\n%s", err, body)
		}
	}
}
