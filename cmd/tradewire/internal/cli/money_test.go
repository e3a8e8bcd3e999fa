package cli

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/tradewire/tradewire/broker"
)

func TestRoundToIncrement(t *testing.T) {
	t.Parallel()
	tests := []struct{ d, inc, want string }{
		{"72.49055800562515", "0.01", "72.49"},
		{"72.495", "0.01", "72.50"}, // half away from zero
		{"-72.495", "0.01", "-72.50"},
		{"65923.2", "0.01", "65923.20"},
		{"0", "0.01", "0.00"},
		{"1.2345", "0.05", "1.25"},
		{"1234.5", "1", "1235"},
		{"0.00001234", "0.00000001", "0.00001234"},
		{"1.2345", "0.010", "1.23"}, // trailing zeros of the increment do not add places
		{"1.2345", "0", "1.2345"},   // no increment: exact
	}
	for _, tt := range tests {
		t.Run(tt.d+"/"+tt.inc, func(t *testing.T) {
			t.Parallel()
			got := roundToIncrement(decimal.RequireFromString(tt.d), decimal.RequireFromString(tt.inc))
			if got != tt.want {
				t.Errorf("roundToIncrement(%s, %s) = %s, want %s", tt.d, tt.inc, got, tt.want)
			}
		})
	}
}

func TestMoney(t *testing.T) {
	t.Parallel()
	cents, whole := decimal.RequireFromString("0.01"), decimal.RequireFromString("1")
	m := money{pairs: map[string]broker.TradingPair{
		"BTC-USD":  {Symbol: "BTC-USD", QuoteCode: "USD", QuoteIncrement: cents},
		"ETH-USD":  {Symbol: "ETH-USD", QuoteCode: "USD", QuoteIncrement: cents},
		"BTC-JPY":  {Symbol: "BTC-JPY", QuoteCode: "JPY", QuoteIncrement: whole},
		"DOGE-USD": {Symbol: "DOGE-USD", QuoteCode: "USD", QuoteIncrement: decimal.RequireFromString("0.000001")},
	}}
	d := decimal.RequireFromString("10.456")
	for _, tt := range []struct{ name, got, want string }{
		{"a known symbol", m.cell("BTC-USD", d), "10.46"},
		{"an unknown symbol is exact", m.cell("SOL-USD", d), "10.456"},
		{"a finer increment", m.cell("DOGE-USD", d), "10.456000"},
		{"a total over increments in one currency takes the coarsest", m.totalCell(d, "DOGE-USD", "BTC-USD"), "10.46"},
		{"null", m.nullCell("BTC-USD", decimal.NullDecimal{}), ""},
		{"a total in one currency", m.totalCell(d, "BTC-USD", "ETH-USD"), "10.46"},
		{"a total across currencies is exact", m.totalCell(d, "BTC-USD", "BTC-JPY"), "10.456"},
		{"a total with an unknown symbol is exact", m.totalCell(d, "BTC-USD", "SOL-USD"), "10.456"},
		{"a currency", m.currencyCell("USD", d), "10.46"},
		{"a currency no pair is quoted in", m.currencyCell("EUR", d), "10.456"},
		{"no pairs known", money{}.cell("BTC-USD", d), "10.456"},
	} {
		if tt.got != tt.want {
			t.Errorf("%s: %s, want %s", tt.name, tt.got, tt.want)
		}
	}
}

// fixture reads one of broker's v2 fixtures.
func fixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "broker", "testdata", "fixtures", "v2", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Only the table reads the trading pair, with one request after the
// command's own; JSON and CSV print the venue's digits and read nothing
// more. When the pair cannot be read the table prints exact amounts and
// the command still succeeds.
func TestMoney_PairReadForTheTableOnly(t *testing.T) {
	t.Parallel()
	quote, pairs := fixture(t, "best_bid_ask.json"), fixture(t, "trading_pairs.json")
	tests := []struct {
		name, format string
		pairStatus   int
		wantReqs     int
		wantBid      string
	}{
		{"table", "table", 200, 2, "68329.20"},
		{"json", "json", 200, 1, `"68329.2"`},
		{"csv", "csv", 200, 1, "68329.2"},
		{"table, pair unreadable", "table", 403, 2, "68329.2 "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := newFakeVenue(t, func(w http.ResponseWriter, n int) {
				if n == 1 {
					answer(200, quote)(w, n)
				} else {
					answer(tt.pairStatus, pairs)(w, n)
				}
			})
			r := runCLI(t, credEnv(v.srv.URL), "", "--account-number", "TW0000000001", "quote", "BTC-USD", "-o", tt.format)
			if r.code != 0 || r.stderr != "" {
				t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
			}
			if got := len(v.requests()); got != tt.wantReqs {
				t.Errorf("%d requests, want %d", got, tt.wantReqs)
			}
			if !strings.Contains(r.stdout, tt.wantBid) {
				t.Errorf("stdout does not show the bid as %q:\n%s", tt.wantBid, r.stdout)
			}
		})
	}
}
