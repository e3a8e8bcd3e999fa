package broker

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/shopspring/decimal"
)

// Bounds on decimals from the venue: generous for money and quantities,
// small enough that no value can cost much memory or time to print.
const (
	maxDecimalLen      = 96
	maxDecimalExponent = 64
)

var errDecimalSyntax = errors.New("not a decimal number")

// parseDecimal reads a decimal the venue sent: an optional minus, digits,
// an optional fraction and an optional exponent (Python writes 1e-05).
// It never goes through float64. The empty string, signs other than a
// leading minus, NaN, Infinity, hex and overlong input are refused.
func parseDecimal(s string) (decimal.Decimal, error) {
	if len(s) == 0 || len(s) > maxDecimalLen {
		return decimal.Decimal{}, fmt.Errorf("%w: %q", errDecimalSyntax, clip(s))
	}
	i := 0
	if s[0] == '-' {
		i++
	}
	intDigits := digits(s[i:])
	i += intDigits
	fracDigits := 0
	if i < len(s) && s[i] == '.' {
		i++
		fracDigits = digits(s[i:])
		i += fracDigits
	}
	if intDigits == 0 && fracDigits == 0 {
		return decimal.Decimal{}, fmt.Errorf("%w: %q", errDecimalSyntax, clip(s))
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		j := i
		if j < len(s) && (s[j] == '-' || s[j] == '+') {
			j++
		}
		n := digits(s[j:])
		if n == 0 || j+n != len(s) {
			return decimal.Decimal{}, fmt.Errorf("%w: %q", errDecimalSyntax, clip(s))
		}
		exp, err := strconv.Atoi(s[i:])
		if err != nil || exp > maxDecimalExponent || exp < -maxDecimalExponent {
			return decimal.Decimal{}, fmt.Errorf("%w: exponent out of range in %q", errDecimalSyntax, clip(s))
		}
		i = len(s)
	}
	if i != len(s) {
		return decimal.Decimal{}, fmt.Errorf("%w: %q", errDecimalSyntax, clip(s))
	}
	d, err := decimal.NewFromString(s)
	if err != nil {
		return decimal.Decimal{}, fmt.Errorf("%w: %q", errDecimalSyntax, clip(s))
	}
	return d, nil
}

func digits(s string) int {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}

func clip(s string) string {
	if len(s) > 32 {
		return s[:32] + "…"
	}
	return s
}

// dec decodes a money or quantity field sent as a quoted string or a bare
// JSON number. null and "" decode as not valid.
type dec struct {
	d     decimal.Decimal
	valid bool
}

func (x *dec) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if string(b) == "null" {
		*x = dec{}
		return nil
	}
	var s string
	if len(b) > 0 && b[0] == '"' {
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		if s == "" {
			*x = dec{}
			return nil
		}
	} else {
		s = string(b)
	}
	d, err := parseDecimal(s)
	if err != nil {
		return err
	}
	*x = dec{d: d, valid: true}
	return nil
}

// val returns the decimal, zero when the venue sent null.
func (x dec) val() decimal.Decimal {
	if !x.valid {
		return decimal.Decimal{}
	}
	return x.d
}

// null returns the decimal as a NullDecimal, not Valid when the venue sent
// null or left the field out.
func (x dec) null() decimal.NullDecimal {
	return decimal.NullDecimal{Decimal: x.d, Valid: x.valid}
}

// decodeBody decodes a 2xx body into v, naming the request on failure.
func decodeBody(target string, body []byte, v any) error {
	if err := json.Unmarshal(body, v); err != nil {
		return &DecodeError{Path: pathOf(target), Err: err}
	}
	return nil
}
