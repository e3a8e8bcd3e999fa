package brokertest

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"testing"
	"time"

	"github.com/shopspring/decimal"
)

// sameAsMarshal fails unless appendFast writes exactly json.Marshal's bytes for v.
func sameAsMarshal(t *testing.T, where string, v any) {
	t.Helper()
	want, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("%s: Marshal: %v", where, err)
	}
	got, ok := appendFast(nil, v)
	if !ok {
		t.Fatalf("%s: appendFast does not handle %T", where, v)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s:\n got %s\nwant %s", where, got, want)
	}
}

// TestEncodersMatchMarshal holds the append encoders to json.Marshal's
// bytes for every order of a seeded history (every type and state), the
// pages of them, and the best bid/ask.
func TestEncodersMatchMarshal(t *testing.T) {
	t.Parallel()
	h := setup(t, engineConfig{History: 300, Seed: 11})
	h.clock.Advance(90 * 60e9)
	bid, _, _ := h.v.quote("SOL-USD")
	h.create(orderBody("31111111-2222-4333-8444-555555555555", "sell", "stop_loss", "SOL-USD",
		`{"asset_quantity":"1","stop_price":"`+bid.Add(decimal.NewFromInt(1)).String()+`","time_in_force":"gtc"}`), 201)
	h.create(orderBody("41111111-2222-4333-8444-555555555555", "sell", "stop_loss", "SOL-USD",
		`{"asset_quantity":"1","stop_price":"1.00","time_in_force":"gfd"}`), 201)
	now := h.clock.Now()
	types, states := map[string]bool{}, map[string]bool{}
	var items []any
	for _, o := range h.v.orders {
		j := h.v.orderJSON(o, now)
		types[o.typ], states[o.state] = true, true
		sameAsMarshal(t, "order "+o.id, j)
		items = append(items, j)
	}
	// The negative control of the walk above: the seeded history must hold
	// every type and the open as well as the final states.
	for _, k := range []string{"market", "limit", "stop_loss", "stop_limit"} {
		if !types[k] {
			t.Errorf("the history has no %s order; types %v", k, types)
		}
	}
	if len(states) < 3 {
		t.Errorf("the history has orders in %d states only: %v", len(states), states)
	}
	next, prev := "https://venue.test/api/v2/crypto/trading/orders/?account_number=X&cursor=a%3Db", "p<>&\"\\"
	raw := withoutClientOrderID(h.v.orderJSON(h.v.orders[0], now))
	for _, pg := range []pageJSON{
		{Results: []any{}},
		{Results: []any(nil)},
		{Results: items[:1], Next: &next},
		{Results: items, Next: &next, Previous: &prev},
		{Results: []any{items[0], raw, items[1]}, Previous: &prev},
	} {
		sameAsMarshal(t, "page", pg)
	}
	if _, ok := appendFast(nil, pageJSON{Results: []bbaJSON{}}); ok {
		t.Error("appendFast took a page of quotes it has no encoder for")
	}
	if _, ok := appendFast(nil, pageJSON{Results: []any{estJSON{}}}); ok {
		t.Error("appendFast took a page of estimates it has no encoder for")
	}
	// Pages of holdings, of every trading pair (with and without a minimum
	// amount) and of accounts (with a next fee tier, and at the top one).
	for _, p := range h.v.pairs {
		sameAsMarshal(t, "pair "+p.symbol, pageJSON{Results: []any{pairJSON{p.symbol, p.asset, p.quote, p.assetIncStr,
			p.quoteIncStr, p.maxSizeStr, p.minAmountStr, p.status, true}, pairJSON{Symbol: "X"}}})
	}
	sameAsMarshal(t, "holding", pageJSON{Results: []any{holdingJSON{"A", "BTC", num(decimal.New(15, -1)), num(decimal.New(2, 0))}}})
	r1, t1 := num(decimal.New(5, -3)), num(decimal.New(1, 5))
	sameAsMarshal(t, "account", pageJSON{Results: []accountJSON{{AccountNumber: "A", Status: "active", BuyingPower: "1.00",
		BuyingPowerCurrency: "USD", AccountType: "individual", IsAPITradable: true,
		FeeTierStatus: feeTierJSON{FeeRatio: num(decimal.New(95, -4)), ThirtyDayVolume: num(decimal.Zero),
			NextFeeTierRatio: &r1, NextFeeTierThreshold: &t1}}}})
	sameAsMarshal(t, "account top tier", pageJSON{Results: []accountJSON{{}}})
	if _, ok := appendFast(nil, pageJSON{Results: []any{json.RawMessage(`{"a": 1}`)}}); ok {
		t.Error("appendFast took a raw result that json.Marshal would compact")
	}
	sameAsMarshal(t, "bba", bbaPage{Results: []bbaJSON{{"BTC-USD", "t", "1.5", "2"}, {"ETH-USD", "u", "3", "4"}}})
	sameAsMarshal(t, "bba empty", bbaPage{Results: []bbaJSON{}})
	sameAsMarshal(t, "bba nil", bbaPage{})
	for _, d := range []string{"0", "1", "-1.5", "123456789012345678901234567890.000000000000000001", "0.000000001"} {
		n := num(decimal.RequireFromString(d))
		sameAsMarshal(t, "num "+d, orderJSON{FeeCharged: n, EstimatedFeeRemaining: n, AveragePrice: &n,
			Executions: []execJSON{}, Limit: &configJSON{LimitPrice: d, TimeInForce: "gtc"}})
	}
	sameAsMarshal(t, "zero order", orderJSON{})

}

// TestOrderTextCache: an order printed from its cached text, as it fills
// in parts, prints as it does afresh.
func TestOrderTextCache(t *testing.T) {
	t.Parallel()
	h := setup(t, engineConfig{Seed: 3})
	_, ask, _ := h.v.quote("BTC-USD") // marketable for a while: fills in parts (TestLimitPartialFills)
	id := h.create(orderBody("21111111-2222-4333-8444-555555555555", "buy", "limit", "BTC-USD",
		`{"asset_quantity":"0.004","limit_price":"`+ask.Add(decimal.NewFromInt(5000)).String()+`"}`), 201)["id"].(string)
	o := h.v.byID[id]
	// printedAsIs fails unless the answer prints the order's own fields.
	printedAsIs := func() {
		t.Helper()
		j := h.v.orderJSON(o, h.clock.Now())
		if j.FilledAssetQuantity != fix18(o.filled) || j.UpdatedAt != orderStamp(o.updated) ||
			j.CreatedAt != orderStamp(o.created) || len(j.Executions) != len(o.execs) {
			t.Fatalf("answer %+v for an order filled %s, updated %v, with %d executions", j, o.filled, o.updated, len(o.execs))
		}
	}
	grew := 0
	for range 12 {
		printed := len(o.text.execs)
		h.clock.Advance(time.Second)
		h.getOrder(id) // advances the book and prints from the cache
		if len(o.execs) > printed {
			grew++
		}
		printedAsIs()
		cached, _ := json.Marshal(h.v.orderJSON(o, h.clock.Now()))
		o.text = orderText{}
		fresh, _ := json.Marshal(h.v.orderJSON(o, h.clock.Now()))
		if !bytes.Equal(cached, fresh) {
			t.Fatalf("from its cached text:\n got %s\nwant %s", cached, fresh)
		}
	}
	if grew == 0 || o.state != stateFilled {
		t.Errorf("the order filled %d times after its first answer, now %s: the cache's growth is not tested", grew, o.state)
	}

	// A resting order canceled after its first answer: its update time
	// moves without an execution.
	id = h.create(orderBody("51111111-2222-4333-8444-555555555555", "buy", "limit", "BTC-USD",
		`{"asset_quantity":"0.5","limit_price":"1.00"}`), 201)["id"].(string)
	o = h.v.byID[id]
	first := h.getOrder(id)["updated_at"]
	resp, b := h.do("POST", pathOrders+id+"/cancel/", nil)
	mustStatus(t, resp, b, http.StatusOK)
	h.clock.Advance(time.Minute)
	got := h.getOrder(id)
	printedAsIs()
	cached, _ := json.Marshal(h.v.orderJSON(o, h.clock.Now()))
	o.text = orderText{}
	fresh, _ := json.Marshal(h.v.orderJSON(o, h.clock.Now()))
	if !bytes.Equal(cached, fresh) {
		t.Fatalf("canceled, from its cached text:\n got %s\nwant %s", cached, fresh)
	}
	if got["state"] != stateCanceled || got["updated_at"] == first {
		t.Errorf("the canceled order is %v, updated %v (first %v): the update's cache is not tested", got["state"], got["updated_at"], first)
	}
}

// TestAppendJSONStringMatchesMarshal compares the string encoder with
// json.Marshal on random strings of the characters that need escaping,
// control characters, non-ASCII and invalid UTF-8.
func TestAppendJSONStringMatchesMarshal(t *testing.T) {
	t.Parallel()
	alphabet := []string{"a", "Z", "0", " ", "\"", "\\", "/", "<", ">", "&", "\b", "\f", "\n", "\r", "\t", "\x00",
		"\x1f", "\x7f", "é", "\u2028", "\u2029", "\xff", "\xe2\x80", "😀"}
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		var s string
		for range r.IntN(12) {
			s += alphabet[r.IntN(len(alphabet))]
		}
		checkString(t, s)
	}
}

func checkString(t *testing.T, s string) {
	t.Helper()
	want, _ := json.Marshal(s)
	if got := appendJSONString([]byte("x"), s); !bytes.Equal(got[1:], want) || got[0] != 'x' {
		t.Fatalf("appendJSONString(%q) = %s, want %s", s, got[1:], want)
	}
}

func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "plain", "a<b>&c", "\"\\\b\f\n\r\t\x01", "é\u2028\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkString(t, s) })
}

// TestDateCache: the cached Date header is the time printed afresh, as
// the clock moves within a second, on to the next, and back (a venue
// clock offset can move it back).
func TestDateCache(t *testing.T) {
	t.Parallel()
	var d dateCache
	base := time.Date(2026, 8, 20, 17, 0, 0, 0, time.FixedZone("EDT", -4*3600))
	for _, off := range []time.Duration{0, 999 * time.Millisecond, time.Second, 1500 * time.Millisecond, -time.Hour, 0, 61 * time.Second} {
		at := base.Add(off)
		if got, want := d.format(at), at.UTC().Format(http.TimeFormat); got != want {
			t.Fatalf("at %v: %q, want %q", off, got, want)
		}
	}
}

// FuzzPlainString: whatever plainString reads, json.Unmarshal reads the
// same; and it reads the plain strings a create body carries.
func FuzzPlainString(f *testing.F) {
	for _, s := range []string{`"buy"`, `"0.001"`, `"11111111-2222-4333-8444-555555555555"`, `""`, `"a\"b"`, `"\u0041"`,
		`"é"`, `1.5`, `null`, `"`, `"x\u007f"`} {
		f.Add(s)
	}
	if s, ok := plainString(json.RawMessage(`"buy"`)); !ok || s != "buy" {
		f.Fatalf(`plainString("buy") = %q, %v`, s, ok)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		got, ok := plainString(json.RawMessage(raw))
		if !ok {
			return
		}
		var want string
		if err := json.Unmarshal([]byte(raw), &want); err != nil || got != want {
			t.Fatalf("plainString(%s) = %q, json.Unmarshal: %q, %v", raw, got, want, err)
		}
	})
}
