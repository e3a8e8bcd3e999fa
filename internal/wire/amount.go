package wire

import (
	"fmt"
	"strings"

	"github.com/shopspring/decimal"
)

// Bounds on the decimals tradewire sends: quantities, amounts and prices.
// They are wide for any real order (up to 10^20 with 18 decimal places,
// 38 digits in all) and keep a request small: no value with hundreds of
// digits (1e400), and none the venue would have to round (1e-400).
const (
	// MaxAmountScale is the most decimal places a value sent may have,
	// once trailing zeros are dropped.
	MaxAmountScale = 18
	// MaxAmountIntegerDigits is the most digits before the point.
	MaxAmountIntegerDigits = 20
	// maxAmountText bounds the text ParseAmount reads: a sign, the
	// digits and the point, and some leading or trailing zeros.
	maxAmountText = 64
)

// AmountError is a decimal refused before anything was sent. Field is the
// venue's name for it ("asset_quantity", "limit_price", …) or a flag.
type AmountError struct {
	Field  string
	Reason string
}

// Error implements error.
func (e *AmountError) Error() string { return e.Field + ": " + e.Reason }

// CheckAmount is the one rule for a decimal tradewire sends: at most
// MaxAmountIntegerDigits digits before the point and MaxAmountScale after
// it, trailing zeros aside. Zero passes (it means "not given"); whether a
// value must be positive is the caller's rule.
func CheckAmount(field string, d decimal.Decimal) error {
	bad := func(format string, args ...any) error {
		return &AmountError{Field: field, Reason: fmt.Sprintf(format, args...)}
	}
	coef := d.Coefficient()
	if coef.Sign() == 0 {
		return nil
	}
	// A coefficient over 300 digits long is refused before it is printed:
	// a value allowed here has at most 38 digits besides trailing zeros
	// (which arithmetic such as Mul can leave), and 300 is plenty of those.
	if coef.BitLen() > 1024 {
		return bad("too many digits: at most %d before the point and %d after", MaxAmountIntegerDigits, MaxAmountScale)
	}
	digits := strings.TrimPrefix(coef.String(), "-")
	exp := int64(d.Exponent())
	for len(digits) > 1 && digits[len(digits)-1] == '0' {
		digits, exp = digits[:len(digits)-1], exp+1
	}
	if scale := -exp; scale > MaxAmountScale {
		return bad("%d decimal places; at most %d", scale, MaxAmountScale)
	}
	if intDigits := int64(len(digits)) + exp; intDigits > MaxAmountIntegerDigits {
		return bad("%d digits before the point; at most %d", intDigits, MaxAmountIntegerDigits)
	}
	return nil
}

// ParseAmount reads a decimal a person or program gave to be sent: an
// optional minus, digits and an optional fraction, as the venue writes
// them. Exponent forms (1e400), a leading plus, spaces, NaN, Infinity and
// hex are refused, and the value must pass CheckAmount. It never goes
// through float64.
func ParseAmount(field, s string) (decimal.Decimal, error) {
	bad := func(reason string) error { return &AmountError{Field: field, Reason: reason} }
	if len(s) > maxAmountText {
		return decimal.Decimal{}, bad(fmt.Sprintf("%d characters; at most %d", len(s), maxAmountText))
	}
	i, intDigits, fracDigits := scanMantissa(s)
	if intDigits == 0 && fracDigits == 0 || i != len(s) {
		return decimal.Decimal{}, bad(fmt.Sprintf("%q is not a decimal number such as 0.001 (digits and one point; no exponent, sign or spaces)", s))
	}
	d, err := decimal.NewFromString(s)
	if err != nil {
		return decimal.Decimal{}, bad(fmt.Sprintf("%q is not a decimal number such as 0.001", s))
	}
	if err := CheckAmount(field, d); err != nil {
		return decimal.Decimal{}, err
	}
	return d, nil
}
