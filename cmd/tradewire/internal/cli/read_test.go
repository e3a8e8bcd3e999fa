package cli

import (
	"encoding/csv"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/shopspring/decimal"

	"github.com/tradewire/tradewire/broker/brokertest"
	"github.com/tradewire/tradewire/transport"
	"github.com/tradewire/tradewire/venue"
)

// simNow is the instant the --sim tests run at, on a fake clock, so that
// the seeded history and prices are the same on every run.
var simNow = time.Date(2026, time.March, 2, 14, 30, 0, 0, time.UTC)

// runSim runs tradewire --sim args on a fake clock stopped at simNow.
func runSim(t *testing.T, args ...string) result {
	t.Helper()
	return runWith(t, Options{
		Clock:           clockwork.NewFakeClockAt(simNow),
		TransportConfig: transport.Config{Retry: fastRetries},
	}, append([]string{"--sim"}, args...)...)
}

// ok fails the test unless r exited 0 with nothing on stderr.
func ok(t *testing.T, r result) {
	t.Helper()
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("exit %d, stderr %q; want 0 and nothing\nstdout:\n%s", r.code, r.stderr, r.stdout)
	}
}

// decodeJSON decodes stdout into v.
func decodeJSON(t *testing.T, stdout string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(stdout), v); err != nil {
		t.Fatalf("stdout is not the JSON expected: %v\n%s", err, stdout)
	}
}

// readCSV parses stdout as CSV, header first.
func readCSV(t *testing.T, stdout string) [][]string {
	t.Helper()
	rows, err := csv.NewReader(strings.NewReader(stdout)).ReadAll()
	if err != nil || len(rows) == 0 {
		t.Fatalf("stdout is not CSV with a header (%v):\n%s", err, stdout)
	}
	return rows
}

// isDecimal reports whether v is a JSON string holding a plain decimal:
// no exponent, no float artefacts.
func isDecimal(v any) bool {
	s, ok := v.(string)
	if !ok || strings.ContainsAny(s, "eE") {
		return false
	}
	_, err := decimal.NewFromString(s)
	return err == nil
}

func TestRead_JSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		args     []string
		n        int      // items in the array; -1 for an object
		decimals []string // keys that must be decimal strings
		check    func(t *testing.T, items []map[string]any)
	}{
		{"account", []string{"account"}, -1, []string{"buying_power", "fee_ratio", "thirty_day_volume", "next_fee_tier_ratio"},
			func(t *testing.T, items []map[string]any) {
				if items[0]["account_number"] != "TW0000000001" || items[0]["fee_ratio"] != "0.0095" {
					t.Errorf("account %v", items[0])
				}
			}},
		{"holdings", []string{"holdings"}, 4, []string{"total_quantity", "quantity_available_for_trading"},
			func(t *testing.T, items []map[string]any) {
				if items[0]["asset_code"] != "BTC" || items[0]["total_quantity"] != "0.5" {
					t.Errorf("first holding %v", items[0])
				}
			}},
		{"holdings of one asset", []string{"holdings", "eth"}, 1, nil, func(t *testing.T, items []map[string]any) {
			if items[0]["asset_code"] != "ETH" {
				t.Errorf("holding %v", items[0])
			}
		}},
		{"pairs", []string{"pairs"}, 42, []string{"asset_increment", "quote_increment", "max_order_size"},
			func(t *testing.T, items []map[string]any) {
				// The catalogue spans several pages; some pairs have no minimum.
				noMin := 0
				for _, p := range items {
					if p["min_order_amount"] == nil {
						noMin++
					} else if !isDecimal(p["min_order_amount"]) {
						t.Errorf("%v min_order_amount %#v", p["symbol"], p["min_order_amount"])
					}
				}
				if noMin == 0 || noMin == len(items) {
					t.Errorf("%d of %d pairs without min_order_amount", noMin, len(items))
				}
			}},
		{"pairs of one symbol", []string{"pairs", "BTC-USD"}, 1, nil, func(t *testing.T, items []map[string]any) {
			if items[0]["asset_increment"] != "0.00000001" || items[0]["min_order_amount"] != "0.1" {
				t.Errorf("pair %v", items[0])
			}
		}},
		{"quote, lower case", []string{"quote", "btc-usd", "ETH-USD"}, 2, []string{"bid", "ask"}, func(t *testing.T, items []map[string]any) {
			if items[0]["symbol"] != "BTC-USD" || items[0]["crossed"] != false {
				t.Errorf("quote %v", items[0])
			}
		}},
		{"estimate", []string{"estimate", "BTC-USD", "--side", "ask", "--quantity", "0.1,1"}, 2,
			[]string{"quantity", "price", "fee_ratio", "est_fee", "est_total_cost"},
			func(t *testing.T, items []map[string]any) {
				if items[0]["side"] != "ask" || items[0]["quantity"] != "0.1" || items[1]["quantity"] != "1" {
					t.Errorf("estimates %v", items)
				}
			}},
		{"estimate both sides", []string{"estimate", "BTC-USD", "--quantity", "0.5"}, 2, nil, nil},
		{"orders", []string{"orders"}, simHistory, []string{"filled_asset_quantity", "fee_charged", "filled_notional"}, nil},
		{"orders filled", []string{"orders", "--state", "filled"}, -2, nil, func(t *testing.T, items []map[string]any) {
			for _, o := range items {
				if o["state"] != "filled" {
					t.Errorf("--state filled listed a %v order", o["state"])
				}
			}
		}},
		{"orders since 7d", []string{"orders", "--since", "7d"}, -2, nil, func(t *testing.T, items []map[string]any) {
			checkSince(t, items, simNow.Add(-7*24*time.Hour))
		}},
		{"orders since a time", []string{"orders", "--since", "2026-02-25T00:00:00Z", "--symbol", "btc-usd", "--side", "buy"}, -2, nil,
			func(t *testing.T, items []map[string]any) {
				checkSince(t, items, time.Date(2026, 2, 25, 0, 0, 0, 0, time.UTC))
				for _, o := range items {
					if o["symbol"] != "BTC-USD" || o["side"] != "buy" {
						t.Errorf("filter let through %v %v", o["symbol"], o["side"])
					}
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := runSim(t, tt.args...)
			ok(t, r)
			var items []map[string]any
			if tt.n == -1 {
				var obj map[string]any
				decodeJSON(t, r.stdout, &obj)
				items = []map[string]any{obj}
			} else {
				decodeJSON(t, r.stdout, &items)
				if tt.n >= 0 && len(items) != tt.n {
					t.Fatalf("%d items, want %d:\n%s", len(items), tt.n, r.stdout)
				}
				if tt.n == -2 && (len(items) == 0 || len(items) >= simHistory) {
					t.Fatalf("%d items: the filter kept none or all of the %d", len(items), simHistory)
				}
			}
			for _, it := range items {
				for _, k := range tt.decimals {
					if !isDecimal(it[k]) {
						t.Errorf("%s = %#v: want a decimal as a JSON string", k, it[k])
					}
				}
			}
			if tt.check != nil {
				tt.check(t, items)
			}
		})
	}
}

func checkSince(t *testing.T, items []map[string]any, since time.Time) {
	t.Helper()
	for _, o := range items {
		created, err := time.Parse(time.RFC3339Nano, o["created_at"].(string))
		if err != nil || created.Before(since) {
			t.Errorf("order created %v, before %v (%v)", o["created_at"], since, err)
		}
	}
}

// The decimals printed are the venue's values exactly: compared as
// decimals with the raw answer, every one is equal.
func TestRead_DecimalsAreTheVenuesExactly(t *testing.T) {
	t.Parallel()
	raw := runSim(t, "api", "GET", "/api/v2/crypto/trading/orders/?account_number=TW0000000001")
	ok(t, raw)
	var page struct {
		Results []map[string]json.RawMessage `json:"results"`
	}
	decodeJSON(t, raw.stdout, &page)
	ours := runSim(t, "orders")
	ok(t, ours)
	var items []map[string]any
	decodeJSON(t, ours.stdout, &items)
	if len(items) != len(page.Results) {
		t.Fatalf("%d orders, the venue sent %d", len(items), len(page.Results))
	}
	venueDecimal := func(m json.RawMessage) decimal.Decimal {
		s := strings.Trim(string(m), `"`)
		return decimal.RequireFromString(s)
	}
	for i, o := range items {
		v := page.Results[i]
		for _, k := range []string{"filled_asset_quantity", "fee_charged", "estimated_fee_remaining"} {
			if got := decimal.RequireFromString(o[k].(string)); !got.Equal(venueDecimal(v[k])) {
				t.Errorf("order %d %s: printed %s, venue sent %s", i, k, o[k], v[k])
			}
		}
	}
}

func TestRead_TableAndCSV(t *testing.T) {
	t.Parallel()
	r := runSim(t, "-o", "table", "account")
	ok(t, r)
	for _, want := range []string{"account_number           TW0000000001\n", "fee_ratio                0.0095\n"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("account table lacks %q:\n%s", want, r.stdout)
		}
	}

	r = runSim(t, "holdings", "--output=csv")
	ok(t, r)
	rows := readCSV(t, r.stdout)
	want := []string{"asset_code", "total_quantity", "quantity_available_for_trading", "account_number"}
	if strings.Join(rows[0], ",") != strings.Join(want, ",") || len(rows) != 5 || rows[1][0] != "BTC" || rows[1][1] != "0.5" {
		t.Errorf("holdings CSV:\n%s", r.stdout)
	}

	r = runSim(t, "orders", "-o", "table")
	ok(t, r)
	if lines := strings.Split(strings.TrimSpace(r.stdout), "\n"); len(lines) != 1+simHistory || !strings.HasPrefix(lines[0], "CREATED_AT") {
		t.Errorf("orders table: %d lines, want a header and %d rows:\n%s", len(lines), simHistory, r.stdout)
	}
	r = runSim(t, "orders", "-o", "csv")
	ok(t, r)
	if rows := readCSV(t, r.stdout); len(rows) != 1+simHistory || len(rows[0]) != len(orderCSVHeader) {
		t.Errorf("orders CSV: %d rows of %d columns", len(rows), len(rows[0]))
	}
}

// Off a terminal (tests write to a buffer) the default output is JSON.
func TestRead_DefaultOutputOffATerminalIsJSON(t *testing.T) {
	t.Parallel()
	r := runSim(t, "quote", "BTC-USD")
	ok(t, r)
	if !json.Valid([]byte(r.stdout)) {
		t.Errorf("default output is not JSON:\n%s", r.stdout)
	}
}

func TestOrderGet(t *testing.T) {
	t.Parallel()
	list := runSim(t, "orders", "--state", "filled")
	ok(t, list)
	var orders []map[string]any
	decodeJSON(t, list.stdout, &orders)
	id := orders[0]["id"].(string)

	r := runSim(t, "order", "get", id)
	ok(t, r)
	var o map[string]any
	decodeJSON(t, r.stdout, &o)
	if o["id"] != id || o["state"] != "filled" || len(o["executions"].([]any)) == 0 {
		t.Errorf("order get %s: %v", id, o)
	}
	r = runSim(t, "order", "get", id, "-o", "table")
	ok(t, r)
	if !strings.Contains(r.stdout, "id                       "+id) || !strings.Contains(r.stdout, "EFFECTIVE_PRICE") {
		t.Errorf("order table:\n%s", r.stdout)
	}
	r = runSim(t, "order", "get", id, "-o", "csv")
	ok(t, r)
	if rows := readCSV(t, r.stdout); len(rows) != 2 || rows[1][0] != id {
		t.Errorf("order CSV:\n%s", r.stdout)
	}
}

// TestExitCodes_ReadCommands runs the read commands into each outcome.
func TestExitCodes_ReadCommands(t *testing.T) {
	t.Parallel()
	const missing = "00000000-0000-4000-8000-000000000000"
	tests := []struct {
		name string
		args []string
		want int
		line string // in the one stderr line
	}{
		{"no such order", []string{"order", "get", missing}, exitNotFound, "no such order"},
		{"not an order id", []string{"order", "get", "nope"}, exitUsage, "order_id"},
		{"order get without an id", []string{"order", "get"}, exitUsage, "want one order ID"},
		{"unknown order subcommand", []string{"order", "frob"}, exitUsage, "unknown command"},
		{"bad output", []string{"-o", "yaml", "account"}, exitUsage, "--output"},
		{"quote without a symbol", []string{"quote"}, exitUsage, "SYMBOL"},
		{"bad symbol", []string{"quote", "BTCUSD"}, exitUsage, "symbol"},
		{"estimate without a quantity", []string{"estimate", "BTC-USD"}, exitUsage, "quantity"},
		{"estimate, a quantity not a number", []string{"estimate", "BTC-USD", "--quantity", "0.1,x"}, exitUsage, "--quantity"},
		{"estimate, a bad side", []string{"estimate", "BTC-USD", "--side", "sideways", "--quantity", "1"}, exitUsage, "--side"},
		{"estimate, 11 quantities", []string{"estimate", "BTC-USD", "--quantity", "1,2,3,4,5,6,7,8,9,10,11"}, exitUsage, "at most 10"},
		{"estimate, a zero quantity", []string{"estimate", "BTC-USD", "--quantity", "0"}, exitUsage, "positive"},
		{"orders, a bad side", []string{"orders", "--side", "hold"}, exitUsage, "side"},
		{"orders, a bad since", []string{"orders", "--since", "yesterday"}, exitUsage, "--since"},
		{"orders, max pages 0", []string{"orders", "--max-pages", "0"}, exitUsage, "--max-pages"},
		{"fees, a bad window", []string{"fees", "--window", "30x"}, exitUsage, "--window"},
		{"fees, a zero window", []string{"fees", "--window", "0d"}, exitUsage, "positive"},
		{"fees, max pages 0", []string{"fees", "--max-pages", "0"}, exitUsage, "--max-pages"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := runSim(t, tt.args...)
			if r.code != tt.want || r.stdout != "" || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, tt.line) {
				t.Errorf("exit %d, stdout %q, stderr %q; want %d, nothing, one line with %q", r.code, r.stdout, r.stderr, tt.want, tt.line)
			}
		})
	}
}

// Usage errors send nothing, even with working credentials.
func TestExitCodes_UsageSendsNothing(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"-o", "xml", "account"},
		{"orders", "--side", "hold"},
		{"orders", "--state", "Filled!"},
		{"estimate", "BTC-USD", "--quantity", "-1"},
		{"order", "get", "nope"},
		{"fees", "--window", "-3d"},
		{"preview", "--symbol", "BTC-USD", "--side", "buy", "--type", "market"},
		{"preview", "--symbol", "BTC-USD", "--side", "hold", "--type", "market", "--quantity", "1"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			t.Parallel()
			rt := &countingRoundTripper{}
			env := credEnv("https://trading.robinhood.com")
			r := runWith(t, Options{
				Getenv:          func(k string) string { return env[k] },
				TransportConfig: transport.Config{RoundTripper: rt},
			}, args...)
			if r.code != exitUsage || rt.count() != 0 || r.stdout != "" {
				t.Errorf("exit %d, %d requests sent, stdout %q; want 2, none, nothing (stderr %q)", r.code, rt.count(), r.stdout, r.stderr)
			}
		})
	}
}

// The venue's failures map to the same exit codes as for tradewire api.
func TestExitCodes_FromTheVenue(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		status int
		body   string
		want   int
	}{
		{"503 on every attempt", http.StatusServiceUnavailable, `{"type":"server_error","errors":[{"detail":"down","attr":null}]}`, exitGaveUp},
		{"429 on every attempt", http.StatusTooManyRequests, `{"type":"client_error","errors":[{"detail":"throttled","attr":null}]}`, exitGaveUp},
		{"401", http.StatusUnauthorized, `{"type":"client_error","errors":[{"detail":"bad key","attr":null}]}`, exitRejected},
		{"404", http.StatusNotFound, `{"type":"client_error","errors":[{"detail":"Not found.","attr":null}]}`, exitNotFound},
	}
	for _, tt := range tests {
		for _, cmd := range [][]string{{"account"}, {"fees"}, {"orders"}, {"quote", "BTC-USD"}} {
			t.Run(tt.name+" "+cmd[0], func(t *testing.T) {
				t.Parallel()
				v := newFakeVenue(t, answer(tt.status, tt.body))
				r := runCLI(t, credEnv(v.srv.URL), "", cmd...)
				if r.code != tt.want || r.stdout != "" || strings.Count(r.stderr, "\n") != 1 {
					t.Errorf("exit %d, stdout %q, stderr %q; want %d, nothing and one line", r.code, r.stdout, r.stderr, tt.want)
				}
			})
		}
	}
}

// A listing past --max-pages fails (exit 1) with nothing on stdout, on a
// venue served over loopback with small pages.
func TestOrders_PageCap(t *testing.T) {
	t.Parallel()
	env := pagedVenue(t)
	r := runCLI(t, env, "", "orders", "--max-pages", "2")
	if r.code != exitFailure || r.stdout != "" || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, "raise --max-pages") {
		t.Errorf("exit %d, stdout %q, stderr %q; want 1, nothing, and a line saying raise --max-pages", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, env, "", "orders", "--max-pages", "100")
	ok(t, r)
	var items []map[string]any
	decodeJSON(t, r.stdout, &items)
	if len(items) != simHistory {
		t.Errorf("%d orders over %d pages, want %d", len(items), simHistory/pagedVenueSize, simHistory)
	}
}

const pagedVenueSize = 5

// pagedVenue starts a simulated venue on loopback with pages of 5 and the
// --sim history, and returns the environment that points the CLI at it.
func pagedVenue(t *testing.T) map[string]string {
	t.Helper()
	srv := brokertest.NewServer(venue.Config{Seed: simSeed, History: simHistory, PageSize: pagedVenueSize})
	t.Cleanup(srv.Close)
	return map[string]string{envBaseURL: srv.URL, envAPIKey: srv.APIKey, envPrivateKey: srv.PrivateKeyBase64}
}

func TestParseWindow(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"30d", 30 * 24 * time.Hour},
		{"1d12h", 36 * time.Hour},
		{"36h", 36 * time.Hour},
		{"90m", 90 * time.Minute},
		{" 7d ", 7 * 24 * time.Hour},
		{"1h30m", 90 * time.Minute},
	}
	for _, tt := range tests {
		if got, err := parseWindow(tt.in); err != nil || got != tt.want {
			t.Errorf("parseWindow(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "0", "0d", "-1d", "d", "1.5d", "30x", "1d-25h", "-5m", "100001d", "7days", "1d1d"} {
		if got, err := parseWindow(bad); err == nil {
			t.Errorf("parseWindow(%q) = %v, want an error", bad, got)
		}
	}
}

func TestParseSince(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 2, 14, 30, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Time
	}{
		{"7d", now.Add(-7 * 24 * time.Hour)},
		{"90m", now.Add(-90 * time.Minute)},
		{"2026-03-01T00:00:00Z", time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)},
		{"2026-03-01T00:00:00.5-04:00", time.Date(2026, 3, 1, 4, 0, 0, 5e8, time.UTC)},
	}
	for _, tt := range tests {
		if got, err := parseSince(tt.in, now); err != nil || !got.Equal(tt.want) {
			t.Errorf("parseSince(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"yesterday", "2026-03-01", "0s", ""} {
		if _, err := parseSince(bad, now); err == nil {
			t.Errorf("parseSince(%q): want an error", bad)
		}
	}
}
