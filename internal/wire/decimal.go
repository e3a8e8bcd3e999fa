// Package wire holds what tradewire's packages share to read the venue's
// JSON: decimals that arrive as quoted strings or bare numbers, never
// passing through float64.
package wire

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

// ErrDecimalSyntax is what ParseDecimal returns for text that is not a decimal.
var ErrDecimalSyntax = errors.New("not a decimal number")

// ParseDecimal reads a decimal the venue sent: an optional minus, digits,
// an optional fraction and an optional exponent (Python writes 1e-05).
// It never goes through float64. The empty string, signs other than a
// leading minus, NaN, Infinity, hex and overlong input are refused.
func ParseDecimal(s string) (decimal.Decimal, error) {
	if len(s) == 0 || len(s) > maxDecimalLen {
		return decimal.Decimal{}, fmt.Errorf("%w: %q", ErrDecimalSyntax, Clip(s))
	}
	i, intDigits, fracDigits := scanMantissa(s)
	if intDigits == 0 && fracDigits == 0 {
		return decimal.Decimal{}, fmt.Errorf("%w: %q", ErrDecimalSyntax, Clip(s))
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		j := i
		if j < len(s) && (s[j] == '-' || s[j] == '+') {
			j++
		}
		n := digits(s[j:])
		if n == 0 || j+n != len(s) {
			return decimal.Decimal{}, fmt.Errorf("%w: %q", ErrDecimalSyntax, Clip(s))
		}
		exp, err := strconv.Atoi(s[i:])
		if err != nil || exp > maxDecimalExponent || exp < -maxDecimalExponent {
			return decimal.Decimal{}, fmt.Errorf("%w: exponent out of range in %q", ErrDecimalSyntax, Clip(s))
		}
		i = len(s)
	}
	if i != len(s) {
		return decimal.Decimal{}, fmt.Errorf("%w: %q", ErrDecimalSyntax, Clip(s))
	}
	d, err := decimal.NewFromString(s)
	if err != nil {
		return decimal.Decimal{}, fmt.Errorf("%w: %q", ErrDecimalSyntax, Clip(s))
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

// Clip shortens venue-controlled text for an error message.
func Clip(s string) string {
	if len(s) > 32 {
		return s[:32] + "…"
	}
	return s
}

// Decimal decodes a money or quantity field sent as a quoted string or a bare
// JSON number. null and "" decode as not valid.
type Decimal struct {
	d     decimal.Decimal
	valid bool
}

// UnmarshalJSON implements json.Unmarshaler.
func (x *Decimal) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if string(b) == "null" {
		*x = Decimal{}
		return nil
	}
	var s string
	if len(b) > 0 && b[0] == '"' {
		if len(b) >= 2 && b[len(b)-1] == '"' && bytes.IndexByte(b, '\\') < 0 {
			// The decoder handing b over has read it as a JSON string:
			// without escapes, its text is what lies between the quotes,
			// and it need not be decoded a second time.
			s = string(b[1 : len(b)-1])
		} else if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		if s == "" {
			*x = Decimal{}
			return nil
		}
	} else {
		s = string(b)
	}
	d, err := ParseDecimal(s)
	if err != nil {
		return err
	}
	*x = Decimal{d: d, valid: true}
	return nil
}

// Val returns the decimal, zero when the venue sent null.
func (x Decimal) Val() decimal.Decimal {
	if !x.valid {
		return decimal.Decimal{}
	}
	return x.d
}

// Null returns the decimal as a NullDecimal, not Valid when the venue sent
// null or left the field out.
func (x Decimal) Null() decimal.NullDecimal {
	return decimal.NullDecimal{Decimal: x.d, Valid: x.valid}
}

// scanMantissa reads an optional leading minus, digits and an optional
// fraction at the start of s. It returns where it stopped and how many
// digits it read before and after the point.
func scanMantissa(s string) (end, intDigits, fracDigits int) {
	if len(s) > 0 && s[0] == '-' {
		end++
	}
	intDigits = digits(s[end:])
	end += intDigits
	if end < len(s) && s[end] == '.' {
		end++
		fracDigits = digits(s[end:])
		end += fracDigits
	}
	return end, intDigits, fracDigits
}
