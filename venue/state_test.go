package venue_test

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/shopspring/decimal"
	"github.com/tradewire/tradewire/venue"
)

// call sends a signed request to s in memory and returns status and body.
func call(t *testing.T, s *testServer, method, target, body string) (int, map[string]any) {
	t.Helper()
	resp, err := (&http.Client{Transport: s.Transport()}).Do(signedRequest(t, s, method, target, body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	json.Unmarshal(b, &m)
	return resp.StatusCode, m
}

// TestStateFile saves a venue's book, starts a new venue from the file,
// and checks that the orders read the same there and go on behaving the
// same: a resting order fills when the first venue's copy does, a cancel
// settles, the balances match, and new ids follow on from the saved ones.
func TestStateFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "venue.json")
	clk := clockwork.NewFakeClockAt(time.Date(2026, 8, 20, 12, 0, 0, 0, time.UTC))
	opts := venue.Config{Clock: clk, Seed: 4, History: 20, StateFile: path}
	a, err := newServer(opts) // no file yet: a fresh venue
	if err != nil {
		t.Fatal(err)
	}
	orders := "/api/v2/crypto/trading/orders/?account_number=" + a.AccountNumber
	bid, ask, _ := a.Quote("BTC-USD")
	cent := decimal.New(1, -2)
	var ids []string
	for i, cfg := range []string{
		// A buy a little under the ask: rests, then fills within the hour.
		`{"client_order_id":"5b8e1f0e-2b61-4a52-9a56-1b2b3c4d5e60","side":"buy","type":"limit","symbol":"BTC-USD","limit_order_config":{"asset_quantity":"0.001","limit_price":"` + ask.Mul(decimal.RequireFromString("0.9995")).Div(cent).Floor().Mul(cent).String() + `"}}`,
		// A sell far above the market: rests; it is canceled below.
		`{"client_order_id":"5b8e1f0e-2b61-4a52-9a56-1b2b3c4d5e61","side":"sell","type":"limit","symbol":"BTC-USD","limit_order_config":{"asset_quantity":"0.001","limit_price":"` + bid.Mul(decimal.NewFromInt(2)).Floor().String() + `"}}`,
	} {
		st, m := call(t, a, "POST", orders, cfg)
		if st != 201 || m["state"] != "open" {
			t.Fatalf("create %d: %d %v", i, st, m)
		}
		ids = append(ids, m["id"].(string))
	}
	if err := a.SaveState(path); err != nil {
		t.Fatal(err)
	}
	b, err := newServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	same := func(when string) {
		t.Helper()
		for _, target := range []string{"/api/v2/crypto/trading/orders/" + ids[0] + "/", "/api/v2/crypto/trading/orders/" + ids[1] + "/",
			orders, "/api/v2/crypto/trading/accounts/", "/api/v2/crypto/trading/holdings/?account_number=" + a.AccountNumber} {
			sa, ma := call(t, a, "GET", target, "")
			sb, mb := call(t, b, "GET", target, "")
			ja, _ := json.Marshal(ma)
			jb, _ := json.Marshal(mb)
			if sa != 200 || sa != sb || string(ja) != string(jb) {
				t.Fatalf("%s, GET %s: %d %s\nrestored venue: %d %s", when, target, sa, ja, sb, jb)
			}
		}
	}
	same("just restored")
	if st, _ := call(t, b, "POST", "/api/v2/crypto/trading/orders/"+ids[1]+"/cancel/", ""); st != 200 {
		t.Fatalf("cancel on the restored venue: %d", st)
	}
	call(t, a, "POST", "/api/v2/crypto/trading/orders/"+ids[1]+"/cancel/", "")
	filled := false
	for range 60 {
		clk.Advance(time.Minute)
		same("after " + clk.Now().Format(time.TimeOnly))
		_, m := call(t, b, "GET", "/api/v2/crypto/trading/orders/"+ids[0]+"/", "")
		filled = filled || m["state"] == "filled" || m["state"] == "partially_filled"
	}
	if _, m := call(t, b, "GET", "/api/v2/crypto/trading/orders/"+ids[1]+"/", ""); m["state"] != "canceled" {
		t.Errorf("the canceled order is %v", m["state"])
	}
	if !filled {
		t.Errorf("the resting buy never filled in an hour: the test shows nothing of fills")
	}
	// Ids follow on: the next create on each venue gets the same id.
	body := `{"client_order_id":"5b8e1f0e-2b61-4a52-9a56-1b2b3c4d5e62","side":"buy","type":"market","symbol":"BTC-USD","market_order_config":{"asset_quantity":"0.0001"}}`
	_, ma := call(t, a, "POST", orders, body)
	_, mb := call(t, b, "POST", orders, body)
	if ma["id"] == nil || ma["id"] != mb["id"] {
		t.Errorf("next ids %v and %v", ma["id"], mb["id"])
	}
	// A file from another seed is refused; so is a file that is not one.
	if _, err := newServer(venue.Config{Clock: clk, Seed: 5, StateFile: path}); err == nil {
		t.Error("a state file of seed 4 loaded into a venue of seed 5")
	}
	os.WriteFile(path, []byte("{"), 0o600)
	if _, err := newServer(opts); err == nil {
		t.Error("a broken state file loaded")
	}
}
