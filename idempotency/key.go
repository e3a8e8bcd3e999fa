package idempotency

import (
	"fmt"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// KeyError is an idempotency key CheckKey refuses: Offset is the byte
// offset in the key of what is wrong, and Reason says what it is.
type KeyError struct {
	Offset int
	Reason string
}

// Error implements error.
func (e *KeyError) Error() string {
	return fmt.Sprintf("idempotency: key refused at byte %d: %s (a key is compared byte for byte; pass the exact text meant)", e.Offset, e.Reason)
}

// CheckKey refuses an idempotency key that cannot be what its caller
// meant, with a *KeyError saying what is wrong and where.
//
// A key is a string compared byte for byte: its UTF-8 bytes, with the
// account number and namespace, derive the client_order_id
// (ClientOrderID), and nothing is normalized. "café" in NFC and in NFD,
// "k" and "k " or "k\x00" are different keys and name different orders,
// although they look alike. So CheckKey refuses:
//   - bytes that are not valid UTF-8;
//   - control characters (unicode.IsControl: NUL, tab, newline, DEL, …);
//   - leading or trailing whitespace (unicode.IsSpace);
//   - text not in Unicode Normalization Form C (normalize it with
//     golang.org/x/text/unicode/norm's NFC.String first).
//
// The empty key is accepted: it means "no key", a create sent once under
// a random client_order_id.
func CheckKey(key string) error {
	bad := func(off int, format string, args ...any) error {
		return &KeyError{Offset: off, Reason: fmt.Sprintf(format, args...)}
	}
	for i, r := range key {
		switch {
		case r == utf8.RuneError && !isEncodedRuneError(key[i:]):
			return bad(i, "byte 0x%02x is not valid UTF-8", key[i])
		case unicode.IsControl(r):
			return bad(i, "control character %U", r)
		}
	}
	if r, _ := utf8.DecodeRuneInString(key); unicode.IsSpace(r) {
		return bad(0, "leading whitespace %U", r)
	}
	if r, size := utf8.DecodeLastRuneInString(key); unicode.IsSpace(r) {
		return bad(len(key)-size, "trailing whitespace %U", r)
	}
	if !norm.NFC.IsNormalString(key) {
		return bad(norm.NFC.QuickSpanString(key), "not in Unicode NFC (normalize it to NFC first)")
	}
	return nil
}

// isEncodedRuneError reports whether s begins with U+FFFD itself, as
// opposed to a byte that is not UTF-8.
func isEncodedRuneError(s string) bool {
	_, size := utf8.DecodeRuneInString(s)
	return size == 3
}
