package wire

import (
	"errors"
	"math/big"
	"strings"
	"testing"

	"github.com/shopspring/decimal"
)

func TestCheckAmount(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		d    decimal.Decimal
		want string // "" for accepted, else part of the reason
	}{
		{"zero means not given", decimal.Zero, ""},
		{"plain", decimal.RequireFromString("0.001"), ""},
		{"18 places", decimal.RequireFromString("0.000000000000000001"), ""},
		{"trailing zeros past 18 places", decimal.RequireFromString("1.00000000000000000000000000"), ""},
		{"20 integer digits", decimal.RequireFromString("99999999999999999999"), ""},
		{"38 digits", decimal.RequireFromString("99999999999999999999.999999999999999999"), ""},
		{"negative (sign is the caller's rule)", decimal.RequireFromString("-1.5"), ""},
		{"positive exponent within bounds", decimal.New(1, 19), ""},
		{"long coefficient of trailing zeros", decimal.NewFromBigInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(250), nil), -249), ""},
		{"19 places", decimal.RequireFromString("0.0000000000000000001"), "19 decimal places"},
		{"1e-400", decimal.New(1, -400), "400 decimal places"},
		{"1e400", decimal.New(1, 400), "401 digits before the point"},
		{"21 integer digits", decimal.New(1, 20), "21 digits before the point"},
		{"1000 digits", decimal.RequireFromString(strings.Repeat("9", 1000)), "too many digits"},
		{"1000 digits negative", decimal.RequireFromString("-" + strings.Repeat("9", 1000)), "too many digits"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := CheckAmount("asset_quantity", tt.d)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("CheckAmount = %v", err)
				}
				return
			}
			var ae *AmountError
			if !errors.As(err, &ae) || ae.Field != "asset_quantity" || !strings.Contains(ae.Reason, tt.want) {
				t.Fatalf("CheckAmount = %v; want an *AmountError for asset_quantity saying %q", err, tt.want)
			}
		})
	}
}

func TestParseAmount(t *testing.T) {
	t.Parallel()
	good := map[string]string{"0.001": "0.001", "1": "1", "-2.5": "-2.5", ".5": "0.5", "5.": "5", "0": "0",
		"36352.780000000000000000": "36352.78", "99999999999999999999.999999999999999999": "99999999999999999999.999999999999999999"}
	for in, want := range good {
		d, err := ParseAmount("--quantity", in)
		if err != nil || d.String() != want {
			t.Errorf("ParseAmount(%q) = %s, %v; want %s", in, d, err, want)
		}
	}
	bad := []string{"", "-", ".", "+1", "1e5", "1E5", "1e400", "1e-400", "NaN", "nan", "Inf", "-Infinity", "0x10", "1_000", " 1", "1 ",
		"1,5", "1.2.3", "\u22121", "0.0000000000000000001", strings.Repeat("9", 21), strings.Repeat("9", 1000), "--1", "١"}
	for _, in := range bad {
		d, err := ParseAmount("--quantity", in)
		var ae *AmountError
		if !errors.As(err, &ae) || ae.Field != "--quantity" {
			t.Errorf("ParseAmount(%q) = %s, %v; want an *AmountError for --quantity", in, d, err)
		}
	}
}

func FuzzParseAmount(f *testing.F) {
	for _, s := range []string{"0.001", "1e400", "1e-400", "+1", "NaN", "-0.5", "99999999999999999999.999999999999999999", ".5", "5."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseAmount("f", s)
		if err != nil {
			var ae *AmountError
			if !errors.As(err, &ae) || ae.Field != "f" {
				t.Fatalf("ParseAmount(%q): error %v is not an *AmountError naming the field", s, err)
			}
			return
		}
		// Accepted text is plain decimal text, and the value it gives is
		// exact, printed without an exponent within the bounds.
		if strings.ContainsAny(s, "eE+ _xX") {
			t.Fatalf("ParseAmount(%q) accepted an exponent, sign or space", s)
		}
		ref, err := decimal.NewFromString(s)
		if err != nil || !ref.Equal(d) {
			t.Fatalf("ParseAmount(%q) = %s; decimal says %s, %v", s, d, ref, err)
		}
		out := d.String()
		if strings.ContainsAny(out, "eE") || len(out) > 1+MaxAmountIntegerDigits+1+MaxAmountScale {
			t.Fatalf("ParseAmount(%q) = %s: not a bounded plain decimal", s, out)
		}
		if err := CheckAmount("f", d); err != nil {
			t.Fatalf("ParseAmount(%q) accepted what CheckAmount refuses: %v", s, err)
		}
		back, err := ParseAmount("f", out)
		if err != nil || !back.Equal(d) {
			t.Fatalf("round trip %q -> %s -> %s, %v", s, out, back, err)
		}
	})
}

func FuzzCheckAmount(f *testing.F) {
	f.Add(int64(1), int32(-400))
	f.Add(int64(1), int32(400))
	f.Add(int64(-123456789), int32(-18))
	f.Fuzz(func(t *testing.T, coef int64, exp int32) {
		d := decimal.New(coef, exp)
		if err := CheckAmount("f", d); err != nil {
			return
		}
		// What passes prints as a bounded plain decimal and reads back.
		out := d.String()
		if strings.ContainsAny(out, "eE") || len(out) > 1+MaxAmountIntegerDigits+1+MaxAmountScale {
			t.Fatalf("CheckAmount accepted %s", out)
		}
		if back, err := ParseAmount("f", out); err != nil || !back.Equal(d) {
			t.Fatalf("%s does not parse back: %s, %v", out, back, err)
		}
	})
}
