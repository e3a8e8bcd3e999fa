package wire

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/shopspring/decimal"
)

// exact prints a decimal with every digit it carries.
func exact(d decimal.Decimal) string {
	if d.Exponent() < 0 {
		return d.StringFixed(-d.Exponent())
	}
	return d.String()
}

func TestParseDecimal(t *testing.T) {
	t.Parallel()
	good := map[string]string{
		"0": "0", "-1.50": "-1.50", "0.000100000000000000": "0.000100000000000000",
		"1e-05": "0.00001", "1E5": "100000", ".5": "0.5", "5.": "5",
		"36352.780000000000000000": "36352.780000000000000000",
	}
	for in, want := range good {
		d, err := ParseDecimal(in)
		if err != nil || exact(d) != want {
			t.Errorf("ParseDecimal(%q) = %s, %v; want %s", in, exact(d), err, want)
		}
	}
	bad := []string{"", "-", ".", "+1", "1e", "1e+", "NaN", "Infinity", "0x10", "1_000", " 1", "1 ", "1e65", "1e-65", "1e99999999999", "\u22121", "1.2.3", "1e5e5", strings.Repeat("9", maxDecimalLen+1)}
	for _, in := range bad {
		if d, err := ParseDecimal(in); err == nil {
			t.Errorf("ParseDecimal(%q) = %s, want an error", in, d)
		}
	}
}

func FuzzDecimal(f *testing.F) {
	for _, s := range []string{"0", "1042.55", "0.000100000000000000", "1e-05", "-0.5", "1E64", "NaN", "", "1e-64"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDecimal(s)
		if err != nil {
			return
		}
		// The value is exact: printing and parsing again gives it back,
		// and it matches decimal's own parser digit for digit.
		ref, err := decimal.NewFromString(s)
		if err != nil || !ref.Equal(d) {
			t.Fatalf("ParseDecimal(%q) = %s; decimal.NewFromString = %s, %v", s, d, ref, err)
		}
		back, err := ParseDecimal(d.String())
		if err != nil && len(d.String()) <= maxDecimalLen {
			t.Fatalf("re-parse %q: %v", d.String(), err)
		}
		if err == nil && !back.Equal(d) {
			t.Fatalf("round trip %q -> %s -> %s", s, d, back)
		}
		if e := d.Exponent(); e > maxDecimalExponent || e < -(maxDecimalExponent+maxDecimalLen) {
			t.Fatalf("exponent %d out of bounds for %q", e, s)
		}
		// Through JSON, quoted and bare, it decodes the same.
		var q, b Decimal
		if err := q.UnmarshalJSON([]byte(`"` + s + `"`)); err == nil && !q.d.Equal(d) {
			t.Fatalf("quoted %q decoded %s", s, q.d)
		}
		if err := b.UnmarshalJSON([]byte(s)); err == nil && !b.d.Equal(d) {
			t.Fatalf("bare %q decoded %s", s, b.d)
		}
	})
}

func TestDecimalJSON(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		`"36352.780000000000000000"`: "36352.780000000000000000", // quoted: its text, decoded once
		`"\u0031.50"`:                "1.50",                     // quoted with an escape: unescaped first
		` "0.5" `:                    "0.5",
		`1e-05`:                      "0.00001",
		`null`:                       "invalid",
		`""`:                         "invalid",
	} {
		var x struct{ V Decimal }
		if err := json.Unmarshal([]byte(`{"V":`+in+`}`), &x); err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		got := "invalid"
		if x.V.valid {
			got = exact(x.V.d)
		}
		if got != want {
			t.Errorf("%s decoded %s, want %s", in, got, want)
		}
	}
	for _, in := range []string{`"1.5\n"`, `"1,5"`, `"\u00311x"`, `true`} {
		var x struct{ V Decimal }
		if err := json.Unmarshal([]byte(`{"V":`+in+`}`), &x); err == nil {
			t.Errorf("%s decoded %v, want an error", in, x.V.d)
		}
	}
}
