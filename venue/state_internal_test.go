package venue

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/shopspring/decimal"
)

var updateState = flag.Bool("update-state", false, "rewrite testdata/state.golden.json from the current output")

// TestStateRoundTrip saves an order that sets every saved field, checks
// the file against testdata/state.golden.json byte for byte (the format
// other venues' files are in), loads it into a new venue and saves again:
// the same bytes, so no field is lost either way.
func TestStateRoundTrip(t *testing.T) {
	t.Parallel()
	h := setup(t, engineConfig{Seed: 4})
	at := func(s int) time.Time { return epoch.Add(time.Duration(s) * time.Second) }
	d := decimal.RequireFromString
	o := &order{id: "0198a1b2-0000-7000-8000-000000000001", clientID: "5b8e1f0e-2b61-4a52-9a56-1b2b3c4d5e60",
		account: h.v.accounts[0].Number, symbol: "BTC-USD", side: "buy", typ: "stop_limit", pair: h.v.bySymbol["BTC-USD"],
		qty: d("0.002"), quoteAmt: d("130.5"), hasQuote: true, limit: d("65000.01"), stop: d("64000.02"),
		hasLimit: true, hasStop: true, feeRatio: d("0.0025"), state: stateFilled, created: at(1), updated: at(9),
		seq: 7, execs: []execution{{d("64999.5"), d("0.0015"), d("0.24374813"), at(5)}, {d("65000"), d("0.0005"), d("0.08125"), at(9)}},
		filled: d("0.002"), notional: d("129.99925"), fee: d("0.32499813"), triggered: true,
		cancelAt: at(20), tif: "gtd", expiresAt: at(3600), lastEval: at(8)}
	h.v.mu.Lock()
	h.v.seq = 7
	h.v.accounts[0].volume.days = map[int64]decimal.Decimal{epoch.Unix() / 86400: d("129.99925")}
	h.v.insertOrder(o)
	st := h.v.state()
	h.v.mu.Unlock()
	so := reflect.ValueOf(st.Orders[0])
	for i := range so.NumField() {
		if so.Field(i).IsZero() {
			t.Errorf("the test order leaves %s zero: set it, so the round trip covers it", so.Type().Field(i).Name)
		}
	}
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "state.golden.json")
	if *updateState {
		if err := os.WriteFile(golden, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, want) {
		t.Errorf("saved state differs from %s:\n got %s\nwant %s", golden, b, want)
	}
	path := filepath.Join(t.TempDir(), "venue.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	h2 := setup(t, engineConfig{Seed: 4})
	h2.v.mu.Lock()
	defer h2.v.mu.Unlock()
	if err := h2.v.loadStateFile(path); err != nil {
		t.Fatal(err)
	}
	b2, err := json.Marshal(h2.v.state())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b2, b) {
		t.Errorf("loaded and saved again:\n got %s\nwant %s", b2, b)
	}
}
