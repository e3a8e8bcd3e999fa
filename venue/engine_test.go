package venue

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
)

func TestSignatureGolden(t *testing.T) {
	var gv struct {
		Seed      string `json:"seed"`
		PublicKey string `json:"public_key"`
		APIKey    string `json:"api_key"`
		Timestamp string `json:"timestamp"`
		Vectors   []struct{ Method, Path, Body, Signature string }
	}
	b, err := os.ReadFile("testdata/signature_vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &gv); err != nil {
		t.Fatal(err)
	}
	seed, _ := base64.StdEncoding.DecodeString(gv.Seed)
	priv := ed25519.NewKeyFromSeed(seed)
	pub := priv.Public().(ed25519.PublicKey)
	if got := base64.StdEncoding.EncodeToString(pub); got != "jPItx4TLjcnSUnmnXQQyAKL4eJj3+oWNNMmmm2vATqk=" {
		t.Fatalf("public key = %s", got)
	}
	secs, _ := strconv.ParseInt(gv.Timestamp, 10, 64)
	h := setup(t, engineConfig{Accounts: []accountConfig{{Number: "AB1", APIKey: gv.APIKey, PublicKey: pub}}})
	h.clock.Advance(time.Unix(secs, 0).Sub(h.clock.Now()))
	// A valid signature reaches the v1 operation: the create (201), the
	// create whose body is the docs' Python dict repr, not JSON (400), the
	// accounts (200). A bad one is 401.
	want := []int{201, 400, 200}
	if len(want) != len(gv.Vectors) {
		t.Fatalf("%d vectors, %d statuses", len(gv.Vectors), len(want))
	}
	for i, vec := range gv.Vectors {
		t.Run(vec.Method+vec.Path+vec.Body[:min(len(vec.Body), 12)], func(t *testing.T) {
			hdr := http.Header{"X-Api-Key": {gv.APIKey}, "X-Timestamp": {gv.Timestamp}, "X-Signature": {vec.Signature}}
			resp, body := h.doHeader(vec.Method, vec.Path, []byte(vec.Body), hdr)
			mustStatus(t, resp, body, want[i])
			sig, _ := base64.StdEncoding.DecodeString(vec.Signature)
			sig[0] ^= 1
			hdr.Set("X-Signature", base64.StdEncoding.EncodeToString(sig))
			resp, body = h.doHeader(vec.Method, vec.Path, []byte(vec.Body), hdr)
			mustStatus(t, resp, body, 401)
			// Same signature, other body: 401.
			hdr.Set("X-Signature", vec.Signature)
			resp, body = h.doHeader(vec.Method, vec.Path, []byte(vec.Body+" "), hdr)
			mustStatus(t, resp, body, 401)
		})
	}
	reqs := h.v.ledger.Requests()
	if !reqs[0].SignatureValid || reqs[1].SignatureValid {
		t.Errorf("ledger signature flags = %v, %v", reqs[0].SignatureValid, reqs[1].SignatureValid)
	}
}

func TestAuthRefusals(t *testing.T) {
	t.Parallel()
	h := setup(t, engineConfig{})
	target := pathAccounts
	good := func(ts time.Time) http.Header { return h.sign("GET", target, nil, ts) }
	tests := []struct {
		name   string
		hdr    http.Header
		target string
		status int
		text   string
	}{
		{"valid", good(h.clock.Now()), target, 200, ""},
		{"no headers", http.Header{}, target, 400, "Request missing required headers: x-api-key, x-signature, x-timestamp"},
		{"no signature", func() http.Header { x := good(h.clock.Now()); x.Del("X-Signature"); return x }(), target, 400, "Request missing required headers: x-signature"},
		{"stale 31s", good(h.clock.Now().Add(-31 * time.Second)), target, 401, ""},
		{"future 31s", good(h.clock.Now().Add(31 * time.Second)), target, 401, ""},
		{"29s old ok", good(h.clock.Now().Add(-29 * time.Second)), target, 200, ""},
		{"unknown key", func() http.Header { x := good(h.clock.Now()); x.Set("X-Api-Key", "rh-api-nope"); return x }(), target, 401, ""},
		{"other target signed", good(h.clock.Now()), target + "?x=1", 401, ""},
		{"bad base64", func() http.Header { x := good(h.clock.Now()); x.Set("X-Signature", "!!"); return x }(), target, 401, ""},
		{"ms timestamp", func() http.Header {
			x := good(h.clock.Now())
			x.Set("X-Timestamp", strconv.FormatInt(h.clock.Now().UnixMilli(), 10))
			return x
		}(), target, 401, ""},
	}
	for _, tc := range tests {
		resp, body := h.doHeader("GET", tc.target, nil, tc.hdr)
		if resp.StatusCode != tc.status {
			t.Errorf("%s: status %d, want %d (%s)", tc.name, resp.StatusCode, tc.status, body)
		}
		if tc.text != "" {
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") || string(body) != tc.text {
				t.Errorf("%s: %q %q", tc.name, ct, body)
			}
		}
		if tc.status == 401 {
			var env errorEnvelope
			if json.Unmarshal(body, &env) != nil || env.Type != "client_error" {
				t.Errorf("%s: 401 body %s", tc.name, body)
			}
		}
	}
	c := h.v.ledger.Counts()
	if c.Unauthorized != 6 || c.ByStatus[400] != 2 || c.ByStatus[200] != 2 || c.Total != len(tests) {
		t.Errorf("counts = %+v", c)
	}
}

// kind names a JSON value's kind for shape comparison.
func kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case json.Number:
		return "number"
	case bool:
		return "bool"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// sameShape checks that got has exactly want's keys, with the same kinds,
// recursively (first elements of arrays).
func sameShape(t *testing.T, where string, want, got any) {
	t.Helper()
	if kind(want) != kind(got) {
		t.Errorf("%s: kind %s, want %s (%v)", where, kind(got), kind(want), got)
		return
	}
	switch w := want.(type) {
	case map[string]any:
		g := got.(map[string]any)
		for k := range w {
			if _, ok := g[k]; !ok {
				t.Errorf("%s: missing key %q", where, k)
			}
		}
		for k := range g {
			if _, ok := w[k]; !ok {
				t.Errorf("%s: extra key %q", where, k)
			}
		}
		for k := range w {
			if gv, ok := g[k]; ok {
				sameShape(t, where+"."+k, w[k], gv)
			}
		}
	case []any:
		g := got.([]any)
		if len(w) > 0 && len(g) > 0 {
			sameShape(t, where+"[0]", w[0], g[0])
		}
	}
}

func fixture(t *testing.T, name string) map[string]any {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return decode(t, b)
}

func TestShapesMatchFixtures(t *testing.T) {
	t.Parallel()
	h := setup(t, engineConfig{NoPartialFills: true})
	get := func(target string) map[string]any {
		resp, b := h.do("GET", target, nil)
		mustStatus(t, resp, b, 200)
		return decode(t, b)
	}
	sameShape(t, "accounts", fixture(t, "accounts.json"), get(pathAccounts))
	sameShape(t, "holdings", fixture(t, "holdings.json"), get(pathHoldings+"?account_number="+demoAccountNumber+"&asset_code=BTC"))
	sameShape(t, "pairs", fixture(t, "trading_pairs.json"), get(pathPairs+"?symbol=BTC-USD"))
	sameShape(t, "bba", fixture(t, "best_bid_ask.json"), get(pathBBA+"?symbol=BTC-USD"))
	sameShape(t, "est ask", fixture(t, "estimated_price.json"), get(pathEstimated+"?symbol=BTC-USD&side=ask&quantity=0.001"))
	sameShape(t, "est bid", fixture(t, "estimated_price_bid.json"), get(pathEstimated+"?symbol=BTC-USD&side=bid&quantity=0.001"))

	_, ask, _ := h.v.quote("BTC-USD")
	low := floorTo(ask.Mul(decimal.RequireFromString("0.5")), decimal.RequireFromString("0.01"))
	open := h.create(orderBody("9c8ecd0f-6842-5d7c-a156-fb5db925cc6d", "buy", "limit", "BTC-USD",
		`{"asset_quantity":"0.0001","limit_price":"`+low.String()+`","time_in_force":"gtc"}`), 201)
	sameShape(t, "order_open", fixture(t, "order_open.json"), open)
	if open["filled_asset_quantity"] != "0.000000000000000000" || open["limit_order_config"].(map[string]any)["asset_quantity"] != "0.000100000000000000" {
		t.Errorf("18 dp strings: %v", open)
	}
	filled := h.create(orderBody("9f8e7d6c-5b4a-3c2d-1e0f-9a8b7c6d5e4f", "sell", "market", "BTC-USD", `{"asset_quantity":"0.1"}`), 201)
	sameShape(t, "order_filled", fixture(t, "order_filled.json"), filled)

	resp, b := h.do("POST", pathOrders+open["id"].(string)+"/cancel/", nil)
	mustStatus(t, resp, b, 200)
	h.clock.Advance(2 * time.Second)
	sameShape(t, "order_canceled", fixture(t, "order_canceled.json"), h.getOrder(open["id"].(string)))
	// The list: each fixture order against a listed order of the same type
	// and fill status.
	list := get(ordersTarget)
	sameShape(t, "orders", map[string]any{"next": nil, "previous": nil, "results": []any{}}, map[string]any{"next": list["next"], "previous": list["previous"], "results": []any{}})
	for i, w := range fixture(t, "orders.json")["results"].([]any) {
		wm := w.(map[string]any)
		found := false
		for _, g := range list["results"].([]any) {
			gm := g.(map[string]any)
			if gm["type"] == wm["type"] && kind(gm["average_price"]) == kind(wm["average_price"]) {
				sameShape(t, fmt.Sprintf("orders[%d]", i), wm, gm)
				found = true
				break
			}
		}
		if !found && wm["state"] != "failed" && wm["state"] != "open" && !(wm["type"] == "limit" && wm["average_price"] != nil) {
			t.Errorf("no listed order like fixture orders[%d]", i)
		}
	}
}

func TestMarketFillFeesAndBalances(t *testing.T) {
	t.Parallel()
	h := setup(t, engineConfig{})
	acct := func() (decimal.Decimal, decimal.Decimal) {
		_, b := h.do("GET", pathAccounts, nil)
		a := decode(t, b)["results"].([]any)[0].(map[string]any)
		_, hb := h.do("GET", pathHoldings+"?account_number="+demoAccountNumber+"&asset_code=ETH", nil)
		hold := decode(t, hb)["results"].([]any)[0].(map[string]any)
		return dec(t, a["buying_power"]), dec(t, hold["total_quantity"])
	}
	bp0, eth0 := acct()
	_, ask, _ := h.v.quote("ETH-USD")
	o := h.create(orderBody("11111111-2222-4333-8444-555555555555", "buy", "market", "ETH-USD", `{"asset_quantity":"0.25"}`), 201)
	if o["state"] != "filled" {
		t.Fatalf("state %v", o["state"])
	}
	qty := decimal.RequireFromString("0.25")
	wantFee := ask.Mul(qty).Mul(decimal.RequireFromString("0.0095"))
	if got := dec(t, o["fee_charged"]); !got.Equal(wantFee) {
		t.Errorf("fee_charged = %s, want %s", got, wantFee)
	}
	if got := dec(t, o["average_price"]); !got.Equal(ask) {
		t.Errorf("average_price = %s, want %s", got, ask)
	}
	ex := o["executions"].([]any)[0].(map[string]any)
	if !dec(t, ex["effective_price"]).Equal(ask) || !dec(t, ex["quantity"]).Equal(qty) {
		t.Errorf("execution %v", ex)
	}
	bp1, eth1 := acct()
	wantBP := bp0.Sub(ask.Mul(qty)).Sub(wantFee).RoundFloor(2)
	if !bp1.Equal(wantBP) {
		t.Errorf("buying power %s, want %s", bp1, wantBP)
	}
	if !eth1.Equal(eth0.Add(qty)) {
		t.Errorf("ETH %s, want %s", eth1, eth0.Add(qty))
	}
}

func TestLimitPartialFills(t *testing.T) {
	t.Parallel()
	h := setup(t, engineConfig{Seed: 3})
	_, ask, _ := h.v.quote("BTC-USD")
	limit := ask.Add(decimal.NewFromInt(5000)) // marketable for a long while
	o := h.create(orderBody("21111111-2222-4333-8444-555555555555", "buy", "limit", "BTC-USD",
		`{"asset_quantity":"0.004","limit_price":"`+limit.String()+`"}`), 201)
	id := o["id"].(string)
	h.clock.Advance(10 * time.Second)
	got := h.getOrder(id)
	if got["state"] != "filled" {
		t.Fatalf("state %v", got["state"])
	}
	execs := got["executions"].([]any)
	sumQ, notional := decimal.Zero, decimal.Zero
	for _, e := range execs {
		m := e.(map[string]any)
		p, q := dec(t, m["effective_price"]), dec(t, m["quantity"])
		if p.GreaterThan(limit) {
			t.Errorf("fill at %s above limit %s", p, limit)
		}
		sumQ, notional = sumQ.Add(q), notional.Add(p.Mul(q))
	}
	if len(execs) < 2 {
		t.Errorf("want partial fills with seed 3, got %d executions", len(execs))
	}
	if !sumQ.Equal(decimal.RequireFromString("0.004")) || !dec(t, got["filled_asset_quantity"]).Equal(sumQ) {
		t.Errorf("filled %v, sum %s", got["filled_asset_quantity"], sumQ)
	}
	if fee := dec(t, got["fee_charged"]); !fee.Equal(notional.Mul(decimal.RequireFromString("0.0095"))) {
		t.Errorf("fee %s, want %s", fee, notional.Mul(decimal.RequireFromString("0.0095")))
	}
	if !dec(t, got["estimated_fee_remaining"]).IsZero() {
		t.Errorf("estimated_fee_remaining %v", got["estimated_fee_remaining"])
	}
}

func TestStopLossTriggers(t *testing.T) {
	t.Parallel()
	h := setup(t, engineConfig{})
	bid, _, _ := h.v.quote("SOL-USD")
	// A sell stop above the bid triggers at once and fills at the bid.
	stop := bid.Add(decimal.NewFromInt(1))
	o := h.create(orderBody("31111111-2222-4333-8444-555555555555", "sell", "stop_loss", "SOL-USD",
		`{"asset_quantity":"1","stop_price":"`+stop.String()+`","time_in_force":"gtc"}`), 201)
	if o["state"] != "filled" || !dec(t, o["average_price"]).Equal(bid) {
		t.Errorf("stop_loss: %v at %v, bid %s", o["state"], o["average_price"], bid)
	}
	// A sell stop far below rests.
	far := h.create(orderBody("41111111-2222-4333-8444-555555555555", "sell", "stop_limit", "SOL-USD",
		`{"asset_quantity":"1","stop_price":"1.00","limit_price":"1.00"}`), 201)
	h.clock.Advance(time.Minute)
	if s := h.getOrder(far["id"].(string))["state"]; s != "open" {
		t.Errorf("far stop_limit state %v", s)
	}
}

func TestCancelSettlesLater(t *testing.T) {
	t.Parallel()
	h := setup(t, engineConfig{})
	o := h.create(orderBody("51111111-2222-4333-8444-555555555555", "buy", "limit", "DOGE-USD",
		`{"asset_quantity":"100","limit_price":"0.01"}`), 201)
	id := o["id"].(string)
	resp, b := h.do("POST", pathOrders+id+"/cancel/", nil)
	mustStatus(t, resp, b, 200)
	if s := decode(t, b)["state"]; s != "open" {
		t.Errorf("cancel answered %v, want open", s)
	}
	h.clock.Advance(500 * time.Millisecond)
	if s := h.getOrder(id)["state"]; s != "open" {
		t.Errorf("after 0.5s: %v", s)
	}
	h.clock.Advance(600 * time.Millisecond)
	got := h.getOrder(id)
	if got["state"] != "canceled" || !dec(t, got["estimated_fee_remaining"]).IsZero() {
		t.Errorf("after 1.1s: %v", got)
	}
	resp, b = h.do("POST", pathOrders+id+"/cancel/", nil)
	mustStatus(t, resp, b, 400)
	if string(b) != `{"type":"validation_error","errors":[{"detail":"This order cannot be canceled.","attr":"non_field_errors"}]}` {
		t.Errorf("body %s", b)
	}
	resp, b = h.do("GET", pathOrders+"6a8738ba-836d-4afd-abd8-483d7e4d01c9/", nil)
	mustStatus(t, resp, b, 404)
	if string(b) != `{"type":"client_error","errors":[{"detail":"Not found.","attr":null}]}` {
		t.Errorf("404 body %s", b)
	}
}

func TestCreateValidation(t *testing.T) {
	t.Parallel()
	h := setup(t, engineConfig{})
	cid := "61111111-2222-4333-8444-555555555555"
	tests := []struct {
		name, body, attr, detail string
	}{
		{"bad uuid", `{"client_order_id":"abc","side":"buy","type":"market","symbol":"BTC-USD","market_order_config":{"asset_quantity":"0.1"}}`, "client_order_id", "Must be a valid UUID."},
		{"bad symbol", string(orderBody(cid, "buy", "market", "ETH-US", `{"asset_quantity":"0.1"}`)), "symbol", "Invalid symbol: ETH-US"},
		{"not a number", string(orderBody(cid, "buy", "market", "BTC-USD", `{"asset_quantity":true}`)), "market_order_config.asset_quantity", "A valid number is required."},
		{"negative number", string(orderBody(cid, "buy", "market", "BTC-USD", `{"asset_quantity":-0.1}`)), "market_order_config.asset_quantity", "Ensure this value is greater than 0."},
		{"exponent", string(orderBody(cid, "buy", "market", "BTC-USD", `{"asset_quantity":"1E-2"}`)), "market_order_config.asset_quantity", ""},
		{"negative", string(orderBody(cid, "buy", "market", "BTC-USD", `{"asset_quantity":"-1"}`)), "market_order_config.asset_quantity", ""},
		{"off increment", string(orderBody(cid, "buy", "market", "BTC-USD", `{"asset_quantity":"0.000000001"}`)), "market_order_config.asset_quantity", ""},
		{"too big", string(orderBody(cid, "buy", "market", "BTC-USD", `{"asset_quantity":"21"}`)), "market_order_config.asset_quantity", ""},
		{"too small", string(orderBody(cid, "buy", "market", "BTC-USD", `{"asset_quantity":"0.00000001"}`)), "market_order_config.asset_quantity", ""},
		{"price increment", string(orderBody(cid, "buy", "limit", "BTC-USD", `{"asset_quantity":"0.1","limit_price":"100.001"}`)), "limit_order_config.limit_price", ""},
		{"no limit price", string(orderBody(cid, "buy", "limit", "BTC-USD", `{"asset_quantity":"0.1"}`)), "limit_order_config.limit_price", ""},
		{"market quote_amount", string(orderBody(cid, "buy", "market", "BTC-USD", `{"quote_amount":"10"}`)), "market_order_config.quote_amount", ""},
		{"both amounts", string(orderBody(cid, "buy", "limit", "BTC-USD", `{"asset_quantity":"0.1","quote_amount":"10","limit_price":"100"}`)), "limit_order_config", ""},
		{"bad tif", string(orderBody(cid, "buy", "limit", "BTC-USD", `{"asset_quantity":"0.1","limit_price":"100","time_in_force":"ioc"}`)), "limit_order_config.time_in_force", ""},
		{"wrong config", `{"client_order_id":"` + cid + `","side":"buy","type":"market","symbol":"BTC-USD","limit_order_config":{"asset_quantity":"0.1"}}`, "limit_order_config", ""},
		{"bad side", string(orderBody(cid, "hold", "market", "BTC-USD", `{"asset_quantity":"0.1"}`)), "side", ""},
		{"unknown field", `{"client_order_id":"` + cid + `","side":"buy","type":"market","symbol":"BTC-USD","market_order_config":{"asset_quantity":"0.1"},"x":1}`, "x", ""},
		{"not json", `{'client_order_id': 'x'}`, "non_field_errors", ""},
	}
	for _, tc := range tests {
		resp, b := h.do("POST", ordersTarget, []byte(tc.body))
		if resp.StatusCode != 400 {
			t.Errorf("%s: status %d %s", tc.name, resp.StatusCode, b)
			continue
		}
		var env errorEnvelope
		if err := json.Unmarshal(b, &env); err != nil || env.Type != "validation_error" || len(env.Errors) != 1 ||
			env.Errors[0].Attr == nil || *env.Errors[0].Attr != tc.attr || (tc.detail != "" && env.Errors[0].Detail != tc.detail) {
			t.Errorf("%s: body %s", tc.name, b)
		}
	}
	resp, b := h.do("POST", "/api/v2/crypto/trading/orders/", orderBody(cid, "buy", "market", "BTC-USD", `{"asset_quantity":"0.1"}`))
	mustStatus(t, resp, b, 400)
	if h.v.ledger.Counts().Creates != 0 {
		t.Error("a rejected create was recorded")
	}
	// quote_amount on a limit converts at the limit price; funds failures are 201 failed.
	o := h.create(orderBody(cid, "buy", "limit", "BTC-USD", `{"quote_amount":"10.00","limit_price":"1000.00"}`), 201)
	if o["limit_order_config"].(map[string]any)["quote_amount"] != "10.000000000000000000" {
		t.Errorf("quote_amount echo %v", o["limit_order_config"])
	}
	o = h.create(orderBody("71111111-2222-4333-8444-555555555555", "buy", "market", "BTC-USD", `{"asset_quantity":"19"}`), 201)
	if o["state"] != "failed" {
		t.Errorf("unaffordable order state %v", o["state"])
	}
}

func TestDuplicateModes(t *testing.T) {
	t.Parallel()
	cid := "81111111-2222-4333-8444-555555555555"
	body := orderBody(cid, "buy", "limit", "DOGE-USD", `{"asset_quantity":"100","limit_price":"0.01"}`)
	for _, tc := range []struct {
		mode    DuplicateMode
		status  int
		creates int
	}{{"", 200, 1}, {ReturnOriginal, 200, 1}, {Reject400, 400, 1}, {CreateSecond, 201, 2}} {
		t.Run(string(tc.mode), func(t *testing.T) {
			t.Parallel()
			h := setup(t, engineConfig{Duplicate: tc.mode})
			first := h.create(body, 201)
			resp, b := h.do("POST", ordersTarget, body)
			mustStatus(t, resp, b, tc.status)
			if tc.status == 200 && decode(t, b)["id"] != first["id"] {
				t.Errorf("duplicate returned another order: %s", b)
			}
			if tc.status == 400 && !strings.Contains(string(b), `"attr":"client_order_id"`) {
				t.Errorf("body %s", b)
			}
			if n := len(h.v.ledger.OrdersByClientID(cid)); n != tc.creates {
				t.Errorf("orders for client id = %d, want %d", n, tc.creates)
			}
			if dups := h.v.ledger.DuplicateClientIDs(); (len(dups) > 0) != (tc.creates > 1) {
				t.Errorf("DuplicateClientIDs = %v", dups)
			}
		})
	}
}

func TestRateLimit(t *testing.T) {
	t.Parallel()
	h := setup(t, engineConfig{RatePerMinute: 60, Burst: 5, Limits: RateLimits{RetryAfter: "bucket"}})
	for i := 0; i < 5; i++ {
		resp, b := h.do("GET", pathAccounts, nil)
		mustStatus(t, resp, b, 200)
	}
	resp, b := h.do("GET", pathAccounts, nil)
	mustStatus(t, resp, b, 429)
	if string(b) != `{"type":"client_error","errors":[{"detail":"Request was throttled.","attr":null}]}` || resp.Header.Get("Retry-After") != "1" {
		t.Errorf("429: %q %s", resp.Header.Get("Retry-After"), b)
	}
	h.clock.Advance(time.Second)
	resp, b = h.do("GET", pathAccounts, nil)
	mustStatus(t, resp, b, 200)
	if c := h.v.ledger.Counts(); c.Throttled != 1 || c.Total != 7 {
		t.Errorf("counts %+v", c)
	}

	// Defaults: burst 300, then 429 without Retry-After.
	d := setup(t, engineConfig{})
	for i := 0; i < defaultBurst; i++ {
		if resp, b := d.do("GET", pathPairs, nil); resp.StatusCode != 200 {
			t.Fatalf("request %d: %d %s", i, resp.StatusCode, b)
		}
	}
	resp, _ = d.do("GET", pathPairs, nil)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "" {
		t.Errorf("request 301: %d %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}

	off := setup(t, engineConfig{RatePerMinute: -1, Burst: 1})
	for i := 0; i < 20; i++ {
		if resp, _ := off.do("GET", pathPairs, nil); resp.StatusCode != 200 {
			t.Fatalf("disabled limiter answered %d", resp.StatusCode)
		}
	}
}

// walk follows next links from target and returns every order id, checking
// each link is absolute on wantBase.
func walk(t *testing.T, h *harness, target, wantBase string) []string {
	t.Helper()
	var ids []string
	for pages := 0; target != ""; pages++ {
		if pages > 1000 {
			t.Fatal("too many pages")
		}
		resp, b := h.do("GET", target, nil)
		mustStatus(t, resp, b, 200)
		m := decode(t, b)
		for _, r := range m["results"].([]any) {
			ids = append(ids, r.(map[string]any)["id"].(string))
		}
		target = ""
		if n, ok := m["next"].(string); ok {
			if !strings.HasPrefix(n, wantBase+"/") {
				t.Fatalf("next %q not on %s", n, wantBase)
			}
			u, _ := url.Parse(n)
			target = u.RequestURI()
		}
	}
	return ids
}

func TestOrdersPaginationAndFilters(t *testing.T) {
	t.Parallel()
	h := setup(t, engineConfig{PageSize: 7, History: 30, BulkOrders: 100, RatePerMinute: -1})
	// Two new orders arrive after the history.
	h.create(orderBody("91111111-2222-4333-8444-555555555555", "buy", "market", "BTC-USD", `{"asset_quantity":"0.001"}`), 201)
	h.clock.Advance(time.Second)
	h.create(orderBody("91111111-2222-4333-8444-555555555556", "buy", "limit", "ETH-USD", `{"asset_quantity":"0.2","limit_price":"1.00"}`), 201)

	ids := walk(t, h, ordersTarget, "https://venue.test")
	if len(ids) != 132 {
		t.Fatalf("got %d orders, want 132", len(ids))
	}
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			t.Fatalf("duplicate id %s", id)
		}
		seen[id] = true
	}
	// Newest first, stable while new orders arrive mid-walk.
	resp, b := h.do("GET", ordersTarget, nil)
	mustStatus(t, resp, b, 200)
	first := decode(t, b)
	res := first["results"].([]any)
	if len(res) != 7 || res[0].(map[string]any)["symbol"] != "ETH-USD" {
		t.Fatalf("first page %v", res[0])
	}
	prev := ""
	for _, r := range res {
		c := r.(map[string]any)["created_at"].(string)
		if prev != "" && c > prev {
			t.Errorf("not newest first: %s after %s", c, prev)
		}
		prev = c
	}
	next, _ := url.Parse(first["next"].(string))
	if next.Query().Get("account_number") != demoAccountNumber || next.Query().Get("cursor") == "" {
		t.Errorf("next lost params: %s", next)
	}
	h.create(orderBody("91111111-2222-4333-8444-555555555557", "buy", "market", "BTC-USD", `{"asset_quantity":"0.001"}`), 201)
	resp, b = h.do("GET", next.RequestURI(), nil)
	mustStatus(t, resp, b, 200)
	if got := decode(t, b)["results"].([]any)[0].(map[string]any)["id"]; got != ids[7] {
		t.Errorf("page 2 shifted: %v, want %v", got, ids[7])
	}

	// Filters, each across every page.
	since := h.clock.Now().Add(-10 * 24 * time.Hour).Format(time.RFC3339)
	for _, f := range []struct{ q, field, want string }{
		{"symbol=BTC-USD", "symbol", "BTC-USD"},
		{"state=filled", "state", "filled"},
		{"side=sell", "side", "sell"},
		{"type=limit", "type", "limit"},
	} {
		ids := walk(t, h, ordersTarget+"&"+f.q, "https://venue.test")
		if len(ids) == 0 {
			t.Errorf("%s: no results", f.q)
		}
		for _, id := range ids[:min(3, len(ids))] {
			if got := h.getOrder(id)[f.field]; got != f.want {
				t.Errorf("%s: order %s has %v", f.q, id, got)
			}
		}
	}
	all := walk(t, h, ordersTarget+"&created_at_start="+url.QueryEscape(since), "https://venue.test")
	if len(all) == 0 || len(all) >= 133 {
		t.Errorf("created_at_start kept %d", len(all))
	}
	for _, id := range all {
		if c, _ := time.Parse(time.RFC3339Nano, h.getOrder(id)["created_at"].(string)); c.Before(h.clock.Now().Add(-10 * 24 * time.Hour)) {
			t.Fatalf("order %s created %s before filter", id, c)
		}
	}
	one := walk(t, h, ordersTarget+"&id="+ids[50], "https://venue.test")
	if len(one) != 1 || one[0] != ids[50] {
		t.Errorf("id filter: %v", one)
	}
	upd := walk(t, h, ordersTarget+"&updated_at_start="+url.QueryEscape(h.clock.Now().Add(-30*time.Second).Format(time.RFC3339Nano)), "https://venue.test")
	if len(upd) != 3 {
		t.Errorf("updated_at_start last hour: %d orders, want 3", len(upd))
	}
	for _, bad := range []string{"&created_at_start=yesterday", "&state=done", "&cursor=zzzz"} {
		resp, b := h.do("GET", ordersTarget+bad, nil)
		if resp.StatusCode != 400 && resp.StatusCode != 404 {
			t.Errorf("%s: %d %s", bad, resp.StatusCode, b)
		}
	}
	// Bulk orders can be fetched by id but not canceled.
	bulkID := fmt.Sprintf("%s%012x", bulkIDPrefix, 5)
	h.getOrder(bulkID)
	resp, b = h.do("POST", pathOrders+bulkID+"/cancel/", nil)
	mustStatus(t, resp, b, 400)
}

func TestPublicBaseURLAndOffsetPages(t *testing.T) {
	t.Parallel()
	h := setup(t, engineConfig{PageSize: 3, PublicBaseURL: "https://public.example/"})
	resp, b := h.do("GET", pathPairs, nil)
	mustStatus(t, resp, b, 200)
	m := decode(t, b)
	if n := m["next"].(string); !strings.HasPrefix(n, "https://public.example/api/v2/crypto/trading/trading_pairs/?cursor=") {
		t.Errorf("next %s", n)
	}
	pages, seen := 1, len(m["results"].([]any))
	for m["next"] != nil {
		n := m["next"].(string)
		if !strings.HasPrefix(n, "https://public.example/api/v2/crypto/trading/trading_pairs/?cursor=") {
			t.Fatalf("next %s", n)
		}
		u, _ := url.Parse(n)
		resp, b = h.do("GET", u.RequestURI(), nil)
		mustStatus(t, resp, b, 200)
		m = decode(t, b)
		pages++
		seen += len(m["results"].([]any))
	}
	if want := (len(h.v.pairs) + 2) / 3; pages != want || seen != len(h.v.pairs) {
		t.Errorf("%d pairs over %d pages, want %d over %d", seen, pages, len(h.v.pairs), want)
	}
}

func TestEstimatedPrice(t *testing.T) {
	t.Parallel()
	h := setup(t, engineConfig{})
	resp, b := h.do("GET", pathEstimated+"?symbol=BTC-USD&side=both&quantity=0.1,1", nil)
	mustStatus(t, resp, b, 200)
	rows := decode(t, b)["results"].([]any)
	if len(rows) != 4 {
		t.Fatalf("rows %d", len(rows))
	}
	bid, ask, _ := h.v.quote("BTC-USD")
	for _, r := range rows {
		m := r.(map[string]any)
		q := dec(t, m["quantity"])
		fr := decimal.RequireFromString("0.0095")
		if m["side"] == "ask" {
			fee := ask.Mul(q).Mul(fr)
			if !dec(t, m["est_fee"]).Equal(fee) || !dec(t, m["est_total_cost"]).Equal(ask.Mul(q).Add(fee)) {
				t.Errorf("ask row %v", m)
			}
		} else if !dec(t, m["bid"]).Equal(bid) || m["est_total_cost"] != nil {
			t.Errorf("bid row %v", m)
		}
	}
	resp, b = h.do("GET", pathEstimated+"?symbol=BTC-USD&side=ask&quantity=1,2,3,4,5,6,7,8,9,10,11", nil)
	mustStatus(t, resp, b, 400)
	if !strings.Contains(string(b), `"validation_error"`) {
		t.Errorf("body %s", b)
	}
}

func TestPricesDeterministic(t *testing.T) {
	t.Parallel()
	a, b, c := setup(t, engineConfig{Seed: 42}), setup(t, engineConfig{Seed: 42}), setup(t, engineConfig{Seed: 43})
	differs := false
	prevMid := decimal.Zero
	moved := false
	for i := 0; i < 500; i++ {
		ts := epoch.Add(time.Duration(i) * 7 * time.Second)
		for _, s := range a.v.symbols() {
			b1, a1, _ := a.v.quoteAt(s, ts)
			b2, a2, _ := b.v.quoteAt(s, ts)
			b3, _, _ := c.v.quoteAt(s, ts)
			if !b1.Equal(b2) || !a1.Equal(a2) {
				t.Fatalf("%s at %s: seeds disagree", s, ts)
			}
			p := a.v.bySymbol[s]
			if crossed := p.crossedAt(a.v.seed, p.bookTime(a.v.seed, ts).Unix()); b1.LessThan(a1) == crossed || !b1.IsPositive() || !a1.IsPositive() {
				t.Fatalf("%s at %s: bid %s ask %s, crossed second %v", s, ts, b1, a1, crossed)
			}
			differs = differs || !b1.Equal(b3)
			if s == "BTC-USD" {
				moved = moved || (!prevMid.IsZero() && !prevMid.Equal(b1))
				prevMid = b1
			}
		}
	}
	if !differs || !moved {
		t.Errorf("differs=%v moved=%v", differs, moved)
	}
	x, _ := a.do("GET", pathBBA+"?symbol=BTC-USD&symbol=ETH-USD", nil)
	if x.StatusCode != 200 {
		t.Errorf("bba %d", x.StatusCode)
	}
}

func TestHistory(t *testing.T) {
	t.Parallel()
	h := setup(t, engineConfig{History: 200, Seed: 9, RatePerMinute: -1})
	states := map[string]int{}
	fees := decimal.Zero
	resp, b := h.do("GET", ordersTarget, nil)
	mustStatus(t, resp, b, 200)
	for _, id := range walk(t, h, ordersTarget, "https://venue.test") {
		o := h.getOrder(id)
		st := o["state"].(string)
		if st == "canceled" && dec(t, o["filled_asset_quantity"]).IsPositive() {
			st = "partly_filled_canceled"
		}
		states[st]++
		fees = fees.Add(dec(t, o["fee_charged"]))
		c, _ := time.Parse(time.RFC3339Nano, o["created_at"].(string))
		if c.After(epoch) || c.Before(epoch.Add(-historyWindow)) {
			t.Errorf("created %s outside the window", c)
		}
	}
	for _, s := range []string{"filled", "canceled", "partly_filled_canceled", "failed", "open"} {
		if states[s] == 0 {
			t.Errorf("no %s orders in history: %v", s, states)
		}
	}
	if !fees.IsPositive() {
		t.Error("history paid no fees")
	}
}

func TestFaults(t *testing.T) {
	t.Parallel()
	t.Run("respond N times", func(t *testing.T) {
		t.Parallel()
		h := setup(t, engineConfig{})
		if err := h.v.inject(Fault{Kind: faultRespond, Method: "GET", Path: "/api/v2/crypto/trading/", Times: 2,
			Status: 503, Header: map[string]string{"Retry-After": "2"}, Body: `{"type":"server_error","errors":[]}`}); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 2; i++ {
			resp, _ := h.do("GET", pathAccounts, nil)
			if resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "2" {
				t.Errorf("attempt %d: %d", i, resp.StatusCode)
			}
		}
		if resp, _ := h.do("GET", pathBBA, nil); resp.StatusCode != 200 {
			t.Errorf("non-matching path got %d", resp.StatusCode)
		}
		if resp, _ := h.do("GET", pathAccounts, nil); resp.StatusCode != 200 {
			t.Errorf("third attempt got %d", resp.StatusCode)
		}
		if h.v.pendingFaults() != 0 {
			t.Error("fault not consumed")
		}
	})
	t.Run("lost create is committed", func(t *testing.T) {
		t.Parallel()
		for _, st := range []int{500, 503} {
			h := setup(t, engineConfig{})
			h.v.inject(Fault{Kind: faultLoseResponse, Method: "POST", Path: pathOrders, Status: st})
			cid := "a1111111-2222-4333-8444-555555555555"
			resp, b := h.do("POST", ordersTarget, orderBody(cid, "buy", "market", "BTC-USD", `{"asset_quantity":"0.001"}`))
			mustStatus(t, resp, b, st)
			if recs := h.v.ledger.OrdersByClientID(cid); len(recs) != 1 {
				t.Fatalf("orders %v", recs)
			}
			resp, b = h.do("GET", ordersTarget, nil)
			if !strings.Contains(string(b), cid) {
				t.Errorf("committed order not listed: %s", b)
			}
		}
	})
	t.Run("dropped connection over loopback", func(t *testing.T) {
		t.Parallel()
		h := setup(t, engineConfig{})
		srv := httptest.NewServer(h.v)
		defer srv.Close()
		h.v.inject(Fault{Kind: faultLoseResponse, Method: "POST", Path: pathOrders})
		cid := "b1111111-2222-4333-8444-555555555555"
		body := orderBody(cid, "buy", "market", "BTC-USD", `{"asset_quantity":"0.001"}`)
		req, _ := http.NewRequest("POST", srv.URL+ordersTarget, strings.NewReader(string(body)))
		req.Header = h.sign("POST", ordersTarget, body, h.clock.Now())
		resp, err := srv.Client().Do(req)
		if err == nil {
			resp.Body.Close()
			t.Fatalf("want a transport error, got %d", resp.StatusCode)
		}
		if len(h.v.ledger.OrdersByClientID(cid)) != 1 {
			t.Error("dropped create not committed")
		}
		if c := h.v.ledger.Counts(); c.Dropped != 1 || c.Creates != 1 {
			t.Errorf("counts %+v", c)
		}
	})
	t.Run("latency uses the venue clock", func(t *testing.T) {
		t.Parallel()
		h := setup(t, engineConfig{})
		h.v.inject(Fault{Kind: faultLatency, Path: pathAccounts, Delay: 5 * time.Second})
		done := make(chan int)
		go func() {
			resp, _ := h.do("GET", pathAccounts, nil)
			done <- resp.StatusCode
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := h.clock.BlockUntilContext(ctx, 1); err != nil {
			t.Fatal(err)
		}
		select {
		case <-done:
			t.Fatal("answered before the delay")
		default:
		}
		h.clock.Advance(5 * time.Second)
		// The signature was made 5s before the venue's clock: still in window.
		if st := <-done; st != 200 {
			t.Errorf("status %d", st)
		}
	})
	t.Run("redirect to another host", func(t *testing.T) {
		t.Parallel()
		h := setup(t, engineConfig{})
		h.v.inject(Fault{Kind: faultRedirect, Location: "https://elsewhere.example", Status: 302})
		resp, _ := h.do("GET", pathPairs+"?symbol=BTC-USD", nil)
		if resp.StatusCode != 302 || resp.Header.Get("Location") != "https://elsewhere.example"+pathPairs+"?symbol=BTC-USD" {
			t.Errorf("%d %q", resp.StatusCode, resp.Header.Get("Location"))
		}
	})
	t.Run("foreign next link", func(t *testing.T) {
		t.Parallel()
		h := setup(t, engineConfig{PageSize: 2})
		h.v.inject(Fault{Kind: faultForeignNext, Path: pathPairs, Location: "https://evil.example"})
		_, b := h.do("GET", pathPairs, nil)
		if n := decode(t, b)["next"].(string); !strings.HasPrefix(n, "https://evil.example/api/v2/") {
			t.Errorf("next %s", n)
		}
		_, b = h.do("GET", pathPairs, nil)
		if n := decode(t, b)["next"].(string); !strings.HasPrefix(n, "https://venue.test/") {
			t.Errorf("second next %s", n)
		}
	})
	t.Run("mix is seeded", func(t *testing.T) {
		t.Parallel()
		run := func() []int {
			h := setup(t, engineConfig{RatePerMinute: -1, Mix: &Mix{Seed: 5, Rate429: 0.2, Rate5xx: 0.2, RateLost: 0.1}})
			var out []int
			for i := 0; i < 60; i++ {
				resp, _ := h.do("GET", pathPairs, nil)
				out = append(out, resp.StatusCode)
			}
			return out
		}
		a, b := run(), run()
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("mix not deterministic")
		}
		seen := map[int]bool{}
		for _, s := range a {
			seen[s] = true
		}
		if !seen[200] || !seen[429] || !seen[503] {
			t.Errorf("statuses %v", a)
		}
	})
	t.Run("invalid faults refused", func(t *testing.T) {
		t.Parallel()
		h := setup(t, engineConfig{})
		for _, f := range []Fault{{}, {Kind: faultRespond}, {Kind: faultLatency}, {Kind: faultRedirect, Location: "evil"},
			{Kind: faultLoseResponse, Status: 404}} {
			if err := h.v.inject(f); err == nil {
				t.Errorf("Inject(%+v) accepted", f)
			}
		}
	})
}

func TestParseFaultPlan(t *testing.T) {
	t.Parallel()
	plan := `{
	  "faults": [
	    {"kind": "respond", "method": "GET", "path": "/api/v2/crypto/trading/accounts/", "times": 2, "status": 503, "headers": {"Retry-After": "1"}, "body": "{}"},
	    {"kind": "lose_response", "method": "POST", "path": "/api/v2/crypto/trading/orders/", "status": 0},
	    {"kind": "latency", "path": "/api/v2/crypto/marketdata/*/", "delay": "1.5s", "times": 3},
	    {"kind": "redirect", "status": 302, "location": "https://elsewhere.example"},
	    {"kind": "foreign_next", "path": "/api/v2/crypto/trading/orders/", "location": "https://evil.example"}
	  ],
	  "mix": {"seed": 7, "rate_429": 0.05, "rate_5xx": 0.02, "rate_lost": 0.01, "rate_latency": 0.1, "latency": "250ms"},
	  "duplicate": "create_second"
	}`
	p, err := ParseFaultPlan([]byte(plan))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Faults) != 5 || p.Faults[2].Delay != 1500*time.Millisecond || p.Mix.Latency != 250*time.Millisecond || p.Duplicate != CreateSecond {
		t.Errorf("plan %+v", p)
	}
	h := setup(t, engineConfig{})
	if err := h.v.apply(p); err != nil {
		t.Fatal(err)
	}
	if h.v.pendingFaults() != 8 {
		t.Errorf("pending %d", h.v.pendingFaults())
	}
	for _, bad := range []string{`{"faults":[{"kind":"respond","status":500,"stauts":1}]}`, `{"faults":[{"kind":"latency","delay":"soon"}]}`, `{"duplicate":"maybe"}`, `[`} {
		if _, err := ParseFaultPlan([]byte(bad)); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	for _, cfg := range []engineConfig{{PageSize: -1}, {Burst: -1}, {Duplicate: "x"}, {Accounts: []accountConfig{{Number: "A"}}}, {History: -1}} {
		if _, err := newEngine(cfg); err == nil {
			t.Errorf("newEngine(%+v) accepted", cfg)
		}
	}
}

func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	h := setup(t, engineConfig{RatePerMinute: -1})
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		go func() {
			for i := 0; i < 20; i++ {
				cid := fmt.Sprintf("c%07d-2222-4333-8444-555555555555", g*100+i)
				resp, b := h.do("POST", ordersTarget, orderBody(cid, "buy", "limit", "DOGE-USD", `{"asset_quantity":"10","limit_price":"0.01"}`))
				if resp.StatusCode != 201 {
					errs <- errors.New(string(b))
					return
				}
				h.do("GET", ordersTarget, nil)
			}
			errs <- nil
		}()
	}
	for g := 0; g < 8; g++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if c := h.v.ledger.Counts(); c.Creates != 160 || c.Total != 320 {
		t.Errorf("counts %+v", c)
	}
}
