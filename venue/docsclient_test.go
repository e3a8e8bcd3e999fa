package venue_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tradewire/tradewire/venue"
)

// docsClient is a client of the venue written only from the vendor's
// documentation (the OpenAPI document in testdata/openapi and its
// info.description), with crypto/ed25519 and net/http and nothing of
// tradewire's: sign api_key + timestamp + path + method + body with the
// Ed25519 key, send x-api-key, x-timestamp and x-signature.
type docsClient struct {
	base, apiKey string
	key          ed25519.PrivateKey
	now          func() time.Time
	hc           *http.Client
	calls        []string // "METHOD path -> status", every call made
}

// call sends one request; body, if not nil, is sent as JSON.
func (c *docsClient) call(method, path string, body any) (int, string, []byte, error) {
	var raw []byte
	if body != nil {
		var err error
		if raw, err = json.Marshal(body); err != nil {
			return 0, "", nil, err
		}
	}
	ts := strconv.FormatInt(c.now().Unix(), 10)
	msg := c.apiKey + ts + path + method + string(raw)
	req, err := http.NewRequest(method, c.base+path, bytes.NewReader(raw))
	if err != nil {
		return 0, "", nil, err
	}
	req.Header.Set("x-api-key", c.apiKey)
	req.Header.Set("x-timestamp", ts)
	req.Header.Set("x-signature", base64.StdEncoding.EncodeToString(ed25519.Sign(c.key, []byte(msg))))
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	c.calls = append(c.calls, fmt.Sprintf("%s %s -> %d", method, path, resp.StatusCode))
	return resp.StatusCode, resp.Header.Get("Content-Type"), b, err
}

// must makes a call that has to succeed with a JSON body and decodes it.
func (c *docsClient) must(t *testing.T, method, path string, body, out any) {
	t.Helper()
	st, ct, b, err := c.call(method, path, body)
	if err != nil || st/100 != 2 || !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("%s %s: status %d %s, err %v; body %s", method, path, st, ct, err, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: decode %s: %v", method, path, b, err)
		}
	}
}

// all follows a list's next links (the docs: "next ... includes the next
// cursor query parameter") and returns every result.
func (c *docsClient) all(t *testing.T, path string) []json.RawMessage {
	t.Helper()
	var out []json.RawMessage
	for page := 0; path != ""; page++ {
		if page == 100 {
			t.Fatalf("more than 100 pages at %s", path)
		}
		var pg struct {
			Next    *string           `json:"next"`
			Results []json.RawMessage `json:"results"`
		}
		c.must(t, "GET", path, nil, &pg)
		out = append(out, pg.Results...)
		path = ""
		if pg.Next != nil {
			u, err := url.Parse(*pg.Next)
			if err != nil || u.Scheme+"://"+u.Host != c.base {
				t.Fatalf("next link %q leaves %s", *pg.Next, c.base)
			}
			path = u.RequestURI()
		}
	}
	return out
}

// docsNumber is a decimal the docs type as a number; it takes a JSON
// number or, as the live venue sends some (see testdata/openapi/
// corrections.md, C1, C2, C5), a decimal string.
type docsNumber float64

func (n *docsNumber) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	f, err := strconv.ParseFloat(s, 64)
	*n = docsNumber(f)
	return err
}

// The shapes the docs give (only the fields these clients read).
type (
	docsV1Account struct {
		AccountNumber string `json:"account_number"`
		Status        string `json:"status"`
		BuyingPower   string `json:"buying_power"`
	}
	docsPair struct {
		Symbol string `json:"symbol"`
		Status string `json:"status"`
	}
	docsHolding struct {
		AssetCode     string     `json:"asset_code"`
		TotalQuantity docsNumber `json:"total_quantity"`
	}
	docsV1Quote struct {
		Symbol string     `json:"symbol"`
		Price  docsNumber `json:"price"`
		Bid    docsNumber `json:"bid_inclusive_of_sell_spread"`
		Ask    docsNumber `json:"ask_inclusive_of_buy_spread"`
	}
	docsV2Quote struct {
		Symbol string     `json:"symbol"`
		Bid    docsNumber `json:"bid"`
		Ask    docsNumber `json:"ask"`
	}
	docsOrder struct {
		ID            string     `json:"id"`
		ClientOrderID string     `json:"client_order_id"`
		AccountNumber string     `json:"account_number"`
		Symbol        string     `json:"symbol"`
		Side          string     `json:"side"`
		Type          string     `json:"type"`
		State         string     `json:"state"`
		Filled        docsNumber `json:"filled_asset_quantity"`
		FeeCharged    *float64   `json:"fee_charged"` // v2 only
	}
	docsResults[T any] struct {
		Results []T `json:"results"`
	}
)

// TestClientsFromTheDocs runs a v1 client and a v2 client, each written
// only from the vendor's docs, against the venue served over HTTP: every
// call succeeds, and an order placed through either version is read back
// through the other.
func TestClientsFromTheDocs(t *testing.T) {
	clk := venue.NewClock(time.Date(2026, 8, 20, 17, 0, 0, 0, time.UTC))
	srv := newLoopbackServer(venue.Config{Clock: clk, Seed: 5, History: 12, PageSize: 5})
	defer srv.Close()
	if !strings.HasPrefix(srv.URL, "http://127.0.0.1:") {
		t.Fatalf("not served over loopback HTTP: %s", srv.URL)
	}
	key := ed25519.NewKeyFromSeed(mustB64(t, srv.PrivateKeyBase64))
	newClient := func() *docsClient {
		return &docsClient{base: srv.URL, apiKey: srv.APIKey, key: key, now: clk.Now, hc: &http.Client{Timeout: 10 * time.Second}}
	}
	v1, v2 := newClient(), newClient()

	// v1, every operation.
	var acct docsV1Account
	v1.must(t, "GET", "/api/v1/crypto/trading/accounts/", nil, &acct)
	if acct.AccountNumber == "" || acct.Status != "active" || acct.BuyingPower == "" {
		t.Fatalf("v1 account %+v", acct)
	}
	if n := len(v1.all(t, "/api/v1/crypto/trading/trading_pairs/")); n == 0 {
		t.Fatal("v1: no trading pairs")
	}
	var pairs docsResults[docsPair]
	v1.must(t, "GET", "/api/v1/crypto/trading/trading_pairs/?symbol=BTC-USD&symbol=ETH-USD", nil, &pairs)
	if len(pairs.Results) != 2 {
		t.Errorf("v1 pairs for two symbols: %+v", pairs)
	}
	if n := len(v1.all(t, "/api/v1/crypto/trading/holdings/")); n == 0 {
		t.Error("v1: no holdings")
	}
	var hold docsResults[docsHolding]
	v1.must(t, "GET", "/api/v1/crypto/trading/holdings/?asset_code=BTC", nil, &hold)
	if len(hold.Results) != 1 || hold.Results[0].AssetCode != "BTC" || hold.Results[0].TotalQuantity <= 0 {
		t.Errorf("v1 BTC holding %+v", hold)
	}
	var q1 docsResults[docsV1Quote]
	v1.must(t, "GET", "/api/v1/crypto/marketdata/best_bid_ask/?symbol=BTC-USD", nil, &q1)
	if len(q1.Results) != 1 || q1.Results[0].Bid <= 0 || q1.Results[0].Ask <= q1.Results[0].Bid || q1.Results[0].Price <= 0 {
		t.Errorf("v1 best bid/ask %+v", q1)
	}
	var est1 docsResults[docsV1Quote]
	v1.must(t, "GET", "/api/v1/crypto/marketdata/estimated_price/?symbol=BTC-USD&side=both&quantity=0.1,1", nil, &est1)
	if len(est1.Results) != 4 {
		t.Errorf("v1 estimates: %+v", est1)
	}
	cid1 := "2d6a3f0e-2b1d-4c59-9e0c-1f2a3b4c5d01"
	var placed1 docsOrder
	v1.must(t, "POST", "/api/v1/crypto/trading/orders/", map[string]any{
		"client_order_id": cid1, "side": "buy", "type": "limit", "symbol": "BTC-USD",
		"limit_order_config": map[string]string{"asset_quantity": "0.0001", "limit_price": "1000.00"},
	}, &placed1)
	if placed1.ID == "" || placed1.State != "open" || placed1.FeeCharged != nil {
		t.Fatalf("v1 placed %+v", placed1)
	}
	var market1 docsOrder
	v1.must(t, "POST", "/api/v1/crypto/trading/orders/", map[string]any{
		"client_order_id": "2d6a3f0e-2b1d-4c59-9e0c-1f2a3b4c5d02", "side": "sell", "type": "market", "symbol": "ETH-USD",
		"market_order_config": map[string]string{"asset_quantity": "0.01"},
	}, &market1)
	if market1.State != "filled" || market1.Filled != 0.01 {
		t.Errorf("v1 market order %+v", market1)
	}
	var got1 docsOrder
	v1.must(t, "GET", "/api/v1/crypto/trading/orders/"+placed1.ID+"/", nil, &got1)
	if got1.ClientOrderID != cid1 {
		t.Errorf("v1 get order %+v", got1)
	}
	if n := len(v1.all(t, "/api/v1/crypto/trading/orders/")); n < 14 {
		t.Errorf("v1 lists %d orders, want the 12 seeded and 2 placed", n)
	}

	// v2, every operation, on the same account.
	var accts docsResults[struct {
		AccountNumber string `json:"account_number"`
		FeeTierStatus struct {
			FeeRatio float64 `json:"fee_ratio"`
		} `json:"fee_tier_status"`
	}]
	v2.must(t, "GET", "/api/v2/crypto/trading/accounts/", nil, &accts)
	if len(accts.Results) != 1 || accts.Results[0].AccountNumber != acct.AccountNumber || accts.Results[0].FeeTierStatus.FeeRatio <= 0 {
		t.Fatalf("v2 accounts %+v, v1 account %s", accts, acct.AccountNumber)
	}
	an := "?account_number=" + acct.AccountNumber
	if n := len(v2.all(t, "/api/v2/crypto/trading/trading_pairs/")); n == 0 {
		t.Error("v2: no trading pairs")
	}
	if n := len(v2.all(t, "/api/v2/crypto/trading/holdings/"+an)); n == 0 {
		t.Error("v2: no holdings")
	}
	var q2 docsResults[docsV2Quote]
	v2.must(t, "GET", "/api/v2/crypto/marketdata/best_bid_ask/?symbol=BTC-USD&symbol=ETH-USD", nil, &q2)
	if len(q2.Results) != 2 || q2.Results[0].Bid <= 0 {
		t.Errorf("v2 best bid/ask %+v", q2)
	}
	v2.must(t, "GET", "/api/v2/crypto/trading/estimated_price/?symbol=BTC-USD&side=ask&quantity=0.01", nil, nil)

	// The order placed through v1, read back through v2: by id and in the list.
	var back docsOrder
	v2.must(t, "GET", "/api/v2/crypto/trading/orders/"+placed1.ID+"/"+an, nil, &back)
	if back.ID != placed1.ID || back.ClientOrderID != cid1 || back.AccountNumber != acct.AccountNumber || back.State != "open" || back.FeeCharged == nil {
		t.Errorf("v2 reads the v1 order as %+v", back)
	}
	var listed docsResults[docsOrder]
	v2.must(t, "GET", "/api/v2/crypto/trading/orders/"+an+"&id="+placed1.ID, nil, &listed)
	if len(listed.Results) != 1 || listed.Results[0].ClientOrderID != cid1 {
		t.Errorf("v2 list by id: %+v", listed)
	}

	// And the other way: placed through v2, read and canceled through v1.
	var placed2 docsOrder
	v2.must(t, "POST", "/api/v2/crypto/trading/orders/"+an, map[string]any{
		"client_order_id": "2d6a3f0e-2b1d-4c59-9e0c-1f2a3b4c5d03", "side": "buy", "type": "limit", "symbol": "BTC-USD",
		"limit_order_config": map[string]string{"asset_quantity": "0.0001", "limit_price": "1000.00", "time_in_force": "gtc"},
	}, &placed2)
	var viaV1 docsOrder
	v1.must(t, "GET", "/api/v1/crypto/trading/orders/"+placed2.ID+"/", nil, &viaV1)
	if viaV1.ClientOrderID != "2d6a3f0e-2b1d-4c59-9e0c-1f2a3b4c5d03" {
		t.Errorf("v1 reads the v2 order as %+v", viaV1)
	}
	// v1's cancel answers text/plain, as its docs say.
	st, ct, b, err := v1.call("POST", "/api/v1/crypto/trading/orders/"+placed2.ID+"/cancel/", nil)
	if err != nil || st != 200 || !strings.HasPrefix(ct, "text/plain") || !strings.Contains(string(b), placed2.ID) {
		t.Errorf("v1 cancel: %d %s %q %v", st, ct, b, err)
	}
	v2.must(t, "POST", "/api/v2/crypto/trading/orders/"+placed1.ID+"/cancel/", nil, nil)
	clk.Advance(2 * time.Second) // cancels settle in about a second
	for _, id := range []string{placed1.ID, placed2.ID} {
		var o docsOrder
		v2.must(t, "GET", "/api/v2/crypto/trading/orders/"+id+"/"+an, nil, &o)
		if o.State != "canceled" {
			t.Errorf("order %s: state %s after its cancel", id, o.State)
		}
	}
	v2.all(t, "/api/v2/crypto/trading/orders/"+an)

	// Every call of both clients succeeded, and the venue saw each once.
	for _, c := range append(append([]string{}, v1.calls...), v2.calls...) {
		if !strings.HasSuffix(c, "-> 200") && !strings.HasSuffix(c, "-> 201") {
			t.Errorf("call %s", c)
		}
	}
	reqs := srv.Ledger().Requests()
	if len(reqs) != len(v1.calls)+len(v2.calls) {
		t.Errorf("venue saw %d requests, clients made %d", len(reqs), len(v1.calls)+len(v2.calls))
	}
	for _, r := range reqs {
		if !r.SignatureValid || r.Status/100 != 2 {
			t.Errorf("venue: %s %s signature %v status %d", r.Method, r.Target, r.SignatureValid, r.Status)
		}
	}
	t.Logf("v1 client: %d calls, v2 client: %d calls, all 2xx", len(v1.calls), len(v2.calls))
}

func mustB64(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
