package cli

import (
	"strings"
	"testing"
)

type previewOut struct {
	Estimate          bool    `json:"estimate"`
	Valid             bool    `json:"valid"`
	AssetQuantity     *string `json:"asset_quantity"`
	QuoteAmount       *string `json:"quote_amount"`
	Price             string  `json:"price"`
	Fee               string  `json:"fee"`
	Total             string  `json:"total"`
	SuggestedQuantity *string `json:"suggested_quantity"`
	Violations        []struct {
		Field  string  `json:"field"`
		Code   string  `json:"code"`
		Limit  *string `json:"limit"`
		Detail string  `json:"detail"`
	} `json:"violations"`
}

var previewValid = []string{"preview", "--symbol", "BTC-USD", "--side", "buy", "--type", "market", "--quantity", "0.0001"}

func TestPreview_Valid(t *testing.T) {
	t.Parallel()
	r := runSim(t, previewValid...)
	ok(t, r)
	var p previewOut
	decodeJSON(t, r.stdout, &p)
	if !p.Estimate || !p.Valid || len(p.Violations) != 0 || str(p.AssetQuantity) != "0.0001" || p.QuoteAmount != nil ||
		!isDecimal(p.Price) || !isDecimal(p.Fee) || !isDecimal(p.Total) || p.SuggestedQuantity != nil {
		t.Errorf("preview: %+v", p)
	}
	if !strings.Contains(r.stdout, `"violations": []`) {
		t.Errorf("violations should be an empty list, not null:\n%s", r.stdout)
	}

	r = runSim(t, append(previewValid, "-o", "table")...)
	ok(t, r)
	if !strings.HasPrefix(r.stdout, "ESTIMATE: ") || !strings.Contains(r.stdout, "VALID") || !strings.Contains(r.stdout, "total_cost") {
		t.Errorf("preview table:\n%s", r.stdout)
	}
	r = runSim(t, append(previewValid, "-o", "csv")...)
	ok(t, r)
	rows := readCSV(t, r.stdout)
	if len(rows) != 2 || rows[0][0] != "estimate" || rows[1][0] != "true" || rows[1][1] != "true" {
		t.Errorf("preview CSV:\n%s", r.stdout)
	}
}

// An order that breaks rules exits 6 with every violation on stdout, and
// the request exactly as asked.
func TestPreview_Violations(t *testing.T) {
	t.Parallel()
	// Below the minimum order amount (0.1 USD) and not a multiple of the
	// asset increment (0.00000001).
	args := []string{"preview", "--symbol", "BTC-USD", "--side", "buy", "--type", "market", "--quantity", "0.000000015"}
	r := runSim(t, args...)
	if r.code != exitRejected || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, "breaks 2 rules") {
		t.Fatalf("exit %d, stderr %q; want 6 and one line", r.code, r.stderr)
	}
	var p previewOut
	decodeJSON(t, r.stdout, &p)
	codes := map[string]string{}
	for _, v := range p.Violations {
		codes[v.Code] = str(v.Limit)
	}
	if !p.Estimate || p.Valid || len(p.Violations) != 2 || codes["below_min_order_amount"] != "0.1" ||
		codes["not_a_multiple_of_increment"] != "0.00000001" || str(p.AssetQuantity) != "0.000000015" {
		t.Errorf("preview: %+v", p)
	}

	for _, format := range []string{"table", "csv"} {
		r := runSim(t, append(args, "-o", format)...)
		if r.code != exitRejected {
			t.Errorf("%s: exit %d", format, r.code)
		}
		for _, want := range []string{"below_min_order_amount", "not_a_multiple_of_increment"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("%s output lacks %s:\n%s", format, want, r.stdout)
			}
		}
		if format == "table" && (!strings.HasPrefix(r.stdout, "ESTIMATE: ") || !strings.Contains(r.stdout, "REFUSED OFFLINE")) {
			t.Errorf("table:\n%s", r.stdout)
		}
	}
}

func TestPreview_Suggestion(t *testing.T) {
	t.Parallel()
	r := runSim(t, "preview", "--symbol", "BTC-USD", "--side", "sell", "--type", "limit", "--quantity", "0.000123456789", "--limit-price", "60000")
	if r.code != exitRejected {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	var p previewOut
	decodeJSON(t, r.stdout, &p)
	if str(p.SuggestedQuantity) != "0.00012345" || str(p.AssetQuantity) != "0.000123456789" || p.Price != "60000" {
		t.Errorf("preview: suggested %s for %s at %s", str(p.SuggestedQuantity), str(p.AssetQuantity), p.Price)
	}
}

func TestPreview_UsageErrors(t *testing.T) {
	t.Parallel()
	base := []string{"preview", "--symbol", "BTC-USD", "--side", "buy", "--type", "market"}
	for _, tt := range []struct {
		name string
		args []string
		line string
	}{
		{"no size", base, "quantity"},
		{"two sizes", append(append([]string{}, base...), "--quantity", "1", "--quote-amount", "10"), "quote-amount"},
		{"no symbol", []string{"preview", "--side", "buy", "--type", "market", "--quantity", "1"}, "symbol"},
		{"not a decimal", append(append([]string{}, base...), "--quantity", "one"), "--quantity"},
		{"a negative limit", append(append([]string{}, base...), "--quantity", "1", "--limit-price", "-5"), "limit_price"},
		{"a bad type", []string{"preview", "--symbol", "BTC-USD", "--side", "buy", "--type", "iceberg", "--quantity", "1"}, "type"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := runSim(t, tt.args...)
			if r.code != exitUsage || r.stdout != "" || !strings.Contains(r.stderr, tt.line) {
				t.Errorf("exit %d, stdout %q, stderr %q; want 2, nothing, a line naming %s", r.code, r.stdout, r.stderr, tt.line)
			}
		})
	}
}
