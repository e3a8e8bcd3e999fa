package venue

import (
	"encoding/json"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"testing"

	"github.com/shopspring/decimal"
)

// TestV1SharesTheEngine: an order placed through either version is seen
// through both, a client_order_id is one key across both, and both spend
// one token bucket.
func TestV1SharesTheEngine(t *testing.T) {
	h := setup(t, engineConfig{RatePerMinute: -1})
	limit := `{"asset_quantity":"0.0001","limit_price":"1000.00"}`
	viaV1 := decode(t, mustDo(t, h, "POST", pathV1Orders, orderBody("0c6a3f0e-2b1d-4c59-9e0c-1f2a3b4c5d01", "buy", "limit", "BTC-USD", limit), 201))
	id1 := viaV1["id"].(string)
	if got := h.getOrder(id1); got["client_order_id"] != "0c6a3f0e-2b1d-4c59-9e0c-1f2a3b4c5d01" || got["fee_charged"] == nil {
		t.Errorf("v2 reads the v1 order as %v", got)
	}
	v2 := h.create(orderBody("0c6a3f0e-2b1d-4c59-9e0c-1f2a3b4c5d02", "buy", "limit", "BTC-USD", limit), 201)
	id2 := v2["id"].(string)
	if got := decode(t, mustDo(t, h, "GET", pathV1Orders+id2+"/", nil, 200)); got["id"] != id2 {
		t.Errorf("v1 reads the v2 order as %v", got)
	}
	// Both lists hold both orders.
	for _, target := range []string{pathV1Orders, ordersTarget} {
		pg := decode(t, mustDo(t, h, "GET", target, nil, 200))
		ids := map[string]bool{}
		for _, r := range pg["results"].([]any) {
			ids[r.(map[string]any)["id"].(string)] = true
		}
		if !ids[id1] || !ids[id2] {
			t.Errorf("%s lists %v, want %s and %s", target, ids, id1, id2)
		}
	}
	// The v2 client_order_id sent again through v1 is the same order.
	again := decode(t, mustDo(t, h, "POST", pathV1Orders, orderBody("0c6a3f0e-2b1d-4c59-9e0c-1f2a3b4c5d02", "buy", "limit", "BTC-USD", limit), 200))
	if again["id"] != id2 {
		t.Errorf("a v2 client_order_id through v1 answered %v, want order %s", again, id2)
	}
	if n := len(h.v.ledger.Orders()); n != 2 {
		t.Errorf("ledger holds %d orders, want 2", n)
	}
	// Cancel through v1 settles the order for v2.
	mustDo(t, h, "POST", pathV1Orders+id2+"/cancel/", nil, 200)
	h.clock.Advance(2 * h.v.cancelD)
	if got := h.getOrder(id2); got["state"] != stateCanceled {
		t.Errorf("after a v1 cancel, v2 sees state %v", got["state"])
	}
	// Cash is one account: the v1 account reports what v2 does.
	v1a := decode(t, mustDo(t, h, "GET", pathV1Accounts, nil, 200))
	v2a := decode(t, mustDo(t, h, "GET", pathAccounts, nil, 200))["results"].([]any)[0].(map[string]any)
	if v1a["buying_power"] != v2a["buying_power"] || v1a["account_number"] != v2a["account_number"] {
		t.Errorf("v1 account %v, v2 account %v", v1a, v2a)
	}

	t.Run("one token bucket", func(t *testing.T) {
		h := setup(t, engineConfig{RatePerMinute: 1, Burst: 2})
		mustDo(t, h, "GET", pathV1Accounts, nil, 200)
		mustDo(t, h, "GET", pathAccounts, nil, 200)
		mustDo(t, h, "GET", pathV1BBA, nil, http.StatusTooManyRequests)
		mustDo(t, h, "GET", pathBBA, nil, http.StatusTooManyRequests)
	})
	t.Run("signed over the path as sent", func(t *testing.T) {
		h := setup(t, engineConfig{RatePerMinute: -1})
		// Signed for the v2 path, sent to v1's: the signature does not hold.
		hdr := h.sign("GET", pathAccounts, nil, h.clock.Now())
		resp, b := h.doHeader("GET", pathV1Accounts, nil, hdr)
		mustStatus(t, resp, b, http.StatusUnauthorized)
		if rec := h.v.ledger.Requests(); rec[0].SignatureValid || rec[0].Target != pathV1Accounts {
			t.Errorf("ledger: %+v", rec[0])
		}
	})
}

// mustDo serves one request and checks its status.
func mustDo(t *testing.T, h *harness, method, target string, body []byte, want int) []byte {
	t.Helper()
	resp, b := h.do(method, target, body)
	mustStatus(t, resp, b, want)
	return b
}

// TestV1Shapes checks each v1 answer against what the vendor's spec gives
// v1 and v2 does not have, or has otherwise.
func TestV1Shapes(t *testing.T) {
	h := setup(t, engineConfig{RatePerMinute: -1, PageSize: 2, History: 5})
	keys := func(m map[string]any) string {
		var out []string
		for k := range m {
			out = append(out, k)
		}
		sort.Strings(out)
		return strings.Join(out, ",")
	}

	acct := decode(t, mustDo(t, h, "GET", pathV1Accounts, nil, 200))
	if got := keys(acct); got != "account_number,buying_power,buying_power_currency,status" {
		t.Errorf("v1 account is one object with %s", got)
	}

	// Holdings without account_number; links stay on v1 and carry no
	// account_number; following them reaches every holding.
	var codes []string
	next := pathV1Holdings
	for next != "" {
		pg := decode(t, mustDo(t, h, "GET", next, nil, 200))
		for _, r := range pg["results"].([]any) {
			codes = append(codes, r.(map[string]any)["asset_code"].(string))
		}
		next = ""
		if n, ok := pg["next"].(string); ok {
			u, err := url.Parse(n)
			if err != nil || u.Path != pathV1Holdings || u.Query().Has("account_number") {
				t.Fatalf("next link %q", n)
			}
			next = u.RequestURI()
		}
	}
	if strings.Join(codes, ",") != "BTC,DOGE,ETH,SOL" {
		t.Errorf("v1 holdings pages gave %v", codes)
	}

	pairs := decode(t, mustDo(t, h, "GET", pathV1Pairs+"?symbol=BTC-USD", nil, 200))["results"].([]any)
	if got := keys(pairs[0].(map[string]any)); got != "asset_code,asset_increment,max_order_size,min_order_size,quote_code,quote_increment,status,symbol" {
		t.Errorf("v1 pair has %s", got)
	}
	mustDo(t, h, "GET", pathV1Pairs+"?symbol=NOPE-USD", nil, 400)

	// Quotes: the midpoint and the spreads, as numbers, around v2's bid and ask.
	bid, ask, _ := h.v.quote("BTC-USD")
	q := decode(t, mustDo(t, h, "GET", pathV1BBA+"?symbol=BTC-USD", nil, 200))["results"].([]any)[0].(map[string]any)
	mid := bid.Add(ask).Div(decimal.NewFromInt(2))
	for k, want := range map[string]decimal.Decimal{"price": mid, "bid_inclusive_of_sell_spread": bid, "ask_inclusive_of_buy_spread": ask,
		"sell_spread": mid.Sub(bid).DivRound(mid, spreadDigits), "buy_spread": ask.Sub(mid).DivRound(mid, spreadDigits)} {
		if _, isNum := q[k].(json.Number); !isNum || !dec(t, q[k]).Equal(want) {
			t.Errorf("best_bid_ask %s = %#v, want the number %s", k, q[k], want)
		}
	}
	if q["sell_spread"].(json.Number) == "0.0" {
		t.Errorf("spread is zero: %v", q)
	}

	// Estimated price lives under marketdata in v1 and nowhere else.
	est := decode(t, mustDo(t, h, "GET", pathV1Estimated+"?symbol=BTC-USD&side=ask&quantity=0.1,1", nil, 200))["results"].([]any)
	if len(est) != 2 {
		t.Fatalf("two quantities, one side: %d rows", len(est))
	}
	for _, r := range est {
		m := r.(map[string]any)
		if m["side"] != "ask" || m["bid_inclusive_of_sell_spread"] != nil || m["fee_ratio"] != nil || m["ask_inclusive_of_buy_spread"] == nil {
			t.Errorf("ask row %v", m)
		}
	}
	if est := decode(t, mustDo(t, h, "GET", pathV1Estimated+"?symbol=BTC-USD&side=both&quantity=1", nil, 200))["results"].([]any); len(est) != 2 {
		t.Errorf("side both: %v", est)
	}
	mustDo(t, h, "GET", pathV1Estimated+"?symbol=BTC-USD&side=sideways&quantity=1", nil, 400)
	mustDo(t, h, "GET", pathV1Estimated+"?symbol=BTC-USD&side=bid&quantity=21", nil, 400) // above max_order_size
	mustDo(t, h, "GET", "/api/v1/crypto/trading/estimated_price/?symbol=BTC-USD&side=bid&quantity=1", nil, 404)

	// Orders: no fees, numbers where v2 has decimal strings.
	o := decode(t, mustDo(t, h, "POST", pathV1Orders, orderBody("0c6a3f0e-2b1d-4c59-9e0c-1f2a3b4c5d03", "buy", "market", "BTC-USD", `{"asset_quantity":"0.0001"}`), 201))
	if o["fee_charged"] != nil || o["estimated_fee_remaining"] != nil {
		t.Errorf("v1 order carries fees: %v", o)
	}
	if _, ok := o["filled_asset_quantity"].(json.Number); !ok || !dec(t, o["filled_asset_quantity"]).Equal(decimal.RequireFromString("0.0001")) {
		t.Errorf("filled_asset_quantity %#v", o["filled_asset_quantity"])
	}
	if _, ok := o["market_order_config"].(map[string]any)["asset_quantity"].(json.Number); !ok {
		t.Errorf("market_order_config %v", o["market_order_config"])
	}
	if ex := o["executions"].([]any); len(ex) != 1 {
		t.Errorf("executions %v", ex)
	}
	// Errors are v2's envelope.
	b := mustDo(t, h, "POST", pathV1Orders, orderBody("not-a-uuid", "buy", "market", "BTC-USD", `{"asset_quantity":"0.0001"}`), 400)
	if e := decode(t, b); e["type"] != "validation_error" {
		t.Errorf("error %s", b)
	}
	// An account_number, which v1 does not take, is held to v2's rule.
	mustDo(t, h, "GET", pathV1Orders+"?account_number=XX0000000000", nil, 403)

	// Cancel answers text/plain.
	open := decode(t, mustDo(t, h, "POST", pathV1Orders, orderBody("0c6a3f0e-2b1d-4c59-9e0c-1f2a3b4c5d04", "buy", "limit", "BTC-USD", `{"asset_quantity":"0.0001","limit_price":"1000.00"}`), 201))
	resp, cb := h.do("POST", pathV1Orders+open["id"].(string)+"/cancel/", nil)
	mustStatus(t, resp, cb, 200)
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") || string(cb) != "Cancel request was submitted for order "+open["id"].(string) {
		t.Errorf("cancel answered %s %q", ct, cb)
	}
	mustDo(t, h, "POST", pathV1Orders+open["id"].(string)+"/cancel/", nil, 200) // still open: settles in a second
	h.clock.Advance(2 * h.v.cancelD)
	mustDo(t, h, "POST", pathV1Orders+open["id"].(string)+"/cancel/", nil, 400)
	mustDo(t, h, "POST", pathV1Orders+"7b3f3c2e-5d41-4f7a-9a8e-000000000000/cancel/", nil, 404)
	mustDo(t, h, "GET", "/api/v1/crypto/trading/nothing/", nil, 404)

	// The orders list's next link stays on v1.
	pg := decode(t, mustDo(t, h, "GET", pathV1Orders, nil, 200))
	if n, _ := pg["next"].(string); !strings.Contains(n, pathV1Orders+"?cursor=") || strings.Contains(n, "account_number") {
		t.Errorf("orders next %q", n)
	}
}

// TestV1Faults: faults match v1 paths as they match v2's, and the ledger
// records v1 requests as sent; a bad-body fault writes v1's shape.
// TestV1MinOrderSize: every v1 pair's min_order_size is the least
// multiple of asset_increment worth min_order_amount at the bid of the
// second answered, and a v1 market buy of that size is accepted.
func TestV1MinOrderSize(t *testing.T) {
	h := setup(t, engineConfig{RatePerMinute: -1})
	withMin := 0
	for _, p := range h.v.pairs {
		rows := decode(t, mustDo(t, h, "GET", pathV1Pairs+"?symbol="+p.symbol, nil, 200))["results"].([]any)
		raw, ok := rows[0].(map[string]any)["min_order_size"].(string)
		if !ok {
			t.Fatalf("%s: min_order_size %v, want a decimal string", p.symbol, rows[0].(map[string]any)["min_order_size"])
		}
		least, err := decimal.NewFromString(raw)
		if err != nil || !least.IsPositive() || !isMultiple(least, p.assetInc) {
			t.Errorf("%s: min_order_size %q, want a positive multiple of %s", p.symbol, raw, p.assetIncStr)
			continue
		}
		if !p.minAmount.IsPositive() {
			if !least.Equal(p.assetInc) {
				t.Errorf("%s has no min_order_amount: min_order_size %s, want asset_increment %s", p.symbol, least, p.assetInc)
			}
			continue
		}
		withMin++
		bid, _, _ := h.v.quote(p.symbol)
		if least.Mul(bid).LessThan(p.minAmount) {
			t.Errorf("%s: %s at the bid %s is worth less than min_order_amount %s", p.symbol, least, bid, p.minAmount)
		}
		if less := least.Sub(p.assetInc); less.IsPositive() && !less.Mul(bid).LessThan(p.minAmount) {
			t.Errorf("%s: min_order_size %s is not the least: %s is worth %s at the bid", p.symbol, least, less, less.Mul(bid))
		}
	}
	if withMin == 0 {
		t.Fatal("no pair has a min_order_amount: the test checks nothing")
	}
	rows := decode(t, mustDo(t, h, "GET", pathV1Pairs+"?symbol=BTC-USD", nil, 200))["results"].([]any)
	size := rows[0].(map[string]any)["min_order_size"].(string)
	mustDo(t, h, "POST", pathV1Orders, orderBody("0c6a3f0e-2b1d-4c59-9e0c-1f2a3b4c5d31", "buy", "market", "BTC-USD", `{"asset_quantity":"`+size+`"}`), 201)
}

func TestV1Faults(t *testing.T) {
	h := setup(t, engineConfig{RatePerMinute: -1})
	if err := h.v.inject(Fault{Kind: faultRespond, Path: pathV1Accounts, Status: 503}); err != nil {
		t.Fatal(err)
	}
	mustDo(t, h, "GET", pathAccounts, nil, 200) // a v2 request does not match
	mustDo(t, h, "GET", pathV1Accounts, nil, 503)
	mustDo(t, h, "GET", pathV1Accounts, nil, 200)
	rec := h.v.ledger.Requests()
	if rec[1].Target != pathV1Accounts || rec[1].Fault != string(faultRespond) || rec[1].Status != 503 {
		t.Errorf("ledger: %+v", rec[1])
	}

	if err := h.v.inject(Fault{Kind: faultWrongClientOrderID, Method: "POST", Path: pathV1Orders}); err != nil {
		t.Fatal(err)
	}
	cid := "0c6a3f0e-2b1d-4c59-9e0c-1f2a3b4c5d05"
	o := decode(t, mustDo(t, h, "POST", pathV1Orders, orderBody(cid, "buy", "market", "BTC-USD", `{"asset_quantity":"0.0001"}`), 201))
	if o["client_order_id"] == cid || o["fee_charged"] != nil {
		t.Errorf("wrong_client_order_id on v1 answered %v", o)
	}
	if got := h.v.ledger.OrdersByClientID(cid); len(got) != 1 {
		t.Errorf("the create was not committed once: %v", got)
	}

	if err := h.v.inject(Fault{Kind: faultLoseResponse, Method: "POST", Path: pathV1Orders}); err != nil {
		t.Fatal(err)
	}
	resp, _ := h.do("POST", pathV1Orders, orderBody("0c6a3f0e-2b1d-4c59-9e0c-1f2a3b4c5d06", "buy", "market", "BTC-USD", `{"asset_quantity":"0.0001"}`))
	if resp.StatusCode != 0 || len(h.v.ledger.OrdersByClientID("0c6a3f0e-2b1d-4c59-9e0c-1f2a3b4c5d06")) != 1 {
		t.Errorf("lose_response on v1: status %d", resp.StatusCode)
	}
}
