package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
)

type feesOut struct {
	Partial          bool    `json:"partial"`
	WindowStart      string  `json:"window_start"`
	WindowEnd        string  `json:"window_end"`
	FeeRatio         string  `json:"fee_ratio"`
	ThirtyDayVolume  string  `json:"thirty_day_volume"`
	TotalFees        string  `json:"total_fees"`
	Orders           int     `json:"orders"`
	FilledNotional   string  `json:"filled_notional"`
	EffectiveFeeRate *string `json:"effective_fee_rate"`
	Pages            int     `json:"pages"`
	Requests         int     `json:"requests"`
	BySymbol         []struct {
		Symbol    string `json:"symbol"`
		Orders    int    `json:"orders"`
		TotalFees string `json:"total_fees"`
	} `json:"by_symbol"`
}

func TestFees_JSON(t *testing.T) {
	t.Parallel()
	r := runSim(t, "fees")
	ok(t, r)
	var f feesOut
	decodeJSON(t, r.stdout, &f)
	if f.Partial || f.Orders != simHistory || f.Pages != 2 || f.Requests != 3 || f.FeeRatio != "0.0095" || f.EffectiveFeeRate == nil {
		t.Errorf("fees: %+v", f)
	}
	if f.WindowEnd != stamp(simNow) || f.WindowStart != stamp(simNow.Add(-30*24*time.Hour)) {
		t.Errorf("window %s to %s; want 30 days up to %s", f.WindowStart, f.WindowEnd, stamp(simNow))
	}

	// The total is the sum of fee_charged over the orders listed, and the
	// per-symbol totals add up to it.
	list := runSim(t, "orders")
	ok(t, list)
	var orders []struct {
		FeeCharged string `json:"fee_charged"`
	}
	decodeJSON(t, list.stdout, &orders)
	var want, bySymbol decimal.Decimal
	for _, o := range orders {
		want = want.Add(decimal.RequireFromString(o.FeeCharged))
	}
	n := 0
	for _, s := range f.BySymbol {
		bySymbol = bySymbol.Add(decimal.RequireFromString(s.TotalFees))
		n += s.Orders
	}
	if total := decimal.RequireFromString(f.TotalFees); !total.Equal(want) || !bySymbol.Equal(want) || n != f.Orders {
		t.Errorf("total_fees %s, by symbol %s over %d orders; the orders' fee_charged sum to %s", f.TotalFees, bySymbol, n, want)
	}
}

func TestFees_Window(t *testing.T) {
	t.Parallel()
	r := runSim(t, "fees", "--window", "7d")
	ok(t, r)
	var f feesOut
	decodeJSON(t, r.stdout, &f)
	if f.WindowStart != stamp(simNow.Add(-7*24*time.Hour)) || f.Orders == 0 || f.Orders >= simHistory {
		t.Errorf("7 days: window from %s, %d orders", f.WindowStart, f.Orders)
	}
}

func TestFees_TableAndCSV(t *testing.T) {
	t.Parallel()
	r := runSim(t, "fees", "-o", "table")
	ok(t, r)
	for _, want := range []string{"fee_ratio           0.0095\n", "requests            4 (1 accounts read + 2 pages of orders with the catch-up read + 1 trading pairs read for the rounding)\n", "partial             false\n", "by symbol\nSYMBOL"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("fees table lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "PARTIAL") {
		t.Errorf("a complete summary is marked PARTIAL:\n%s", r.stdout)
	}
	r = runSim(t, "fees", "-o", "csv")
	ok(t, r)
	rows := readCSV(t, r.stdout)
	if rows[0][0] != "scope" || rows[0][len(rows[0])-1] != "partial" || rows[1][0] != "total" || len(rows) != 2+4 {
		t.Errorf("fees CSV:\n%s", r.stdout)
	}
}

// Past --max-pages the summary fails with a line that says what to do;
// with --allow-partial every format says PARTIAL.
func TestFees_PageCap(t *testing.T) {
	t.Parallel()
	env := pagedVenue(t)
	r := runCLI(t, env, "", "fees", "--max-pages", "2")
	if r.code != exitFailure || r.stdout != "" || strings.Count(r.stderr, "\n") != 1 ||
		!strings.Contains(r.stderr, "use --allow-partial or --max-pages") {
		t.Fatalf("exit %d, stdout %q, stderr %q; want 1, nothing, and one line naming --allow-partial and --max-pages", r.code, r.stdout, r.stderr)
	}

	r = runCLI(t, env, "", "fees", "--max-pages", "2", "--allow-partial", "-o", "json")
	ok(t, r)
	var f feesOut
	decodeJSON(t, r.stdout, &f)
	if !f.Partial || f.Pages != 2 || f.Orders != 2*pagedVenueSize {
		t.Errorf("partial JSON: %+v", f)
	}

	r = runCLI(t, env, "", "fees", "--max-pages", "2", "--allow-partial", "-o", "table")
	ok(t, r)
	if !strings.HasPrefix(r.stdout, "PARTIAL: ") || !strings.Contains(r.stdout, "partial             true\n") {
		t.Errorf("partial table has no PARTIAL banner:\n%s", r.stdout)
	}

	r = runCLI(t, env, "", "fees", "--max-pages", "2", "--allow-partial", "-o", "csv")
	ok(t, r)
	rows := readCSV(t, r.stdout)
	col := len(rows[0]) - 1
	if rows[0][col] != "partial" {
		t.Fatalf("no partial column:\n%s", r.stdout)
	}
	for _, row := range rows[1:] {
		if row[col] != "true" {
			t.Errorf("row %v is not marked partial", row)
		}
	}

	// Enough pages: complete, and not partial, with --allow-partial given;
	// the catch-up read finds the page of orders still filling.
	r = runCLI(t, env, "", "fees", "--window", "31d", "--max-pages", "100", "--allow-partial")
	ok(t, r)
	f = feesOut{}
	decodeJSON(t, r.stdout, &f)
	if f.Partial || f.Orders != simHistory || f.Pages != simHistory/pagedVenueSize+1 || f.Requests != 1+f.Pages {
		t.Errorf("complete sweep: %+v", f)
	}
}
