package idempotency

import (
	"errors"
	"strings"
	"testing"
)

// TestCheckKey: one row per rule. Every refused key looks like (or is a
// byte away from) one a person meant, and would derive its own
// client_order_id: two orders for one visible key.
func TestCheckKey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, key string
		offset    int    // -1: accepted
		reason    string // part of the reason
	}{
		{"empty means no key", "", -1, ""},
		{"ascii", "entry-1", -1, ""},
		{"inner space", "buy btc", -1, ""},
		{"nfc", "caf\u00e9", -1, ""},
		{"emoji with joiner", "\U0001F468\u200D\U0001F469", -1, ""},
		{"encoded replacement character", "a\uFFFDb", -1, ""},
		{"nfd", "cafe\u0301", 3, "not in Unicode NFC"},
		{"nul", "k\x00", 1, "control character U+0000"},
		{"tab", "a\tb", 1, "control character U+0009"},
		{"newline", "k\n", 1, "control character U+000A"},
		{"del", "k\x7f", 1, "control character U+007F"},
		{"c1 control", "k\u0085x", 1, "control character U+0085"},
		{"invalid utf-8", "ab\xffc", 2, "0xff is not valid UTF-8"},
		{"truncated utf-8", "caf\xc3", 3, "0xc3 is not valid UTF-8"},
		{"leading space", " k", 0, "leading whitespace U+0020"},
		{"trailing space", "k ", 1, "trailing whitespace U+0020"},
		{"trailing no-break space", "k\u00a0", 1, "trailing whitespace U+00A0"},
		{"leading ideographic space", "\u3000k", 0, "leading whitespace U+3000"},
		{"only a space", " ", 0, "leading whitespace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := CheckKey(tc.key)
			if tc.offset < 0 {
				if err != nil {
					t.Fatalf("CheckKey(%+q) = %v, want nil", tc.key, err)
				}
				return
			}
			var ke *KeyError
			if !errors.As(err, &ke) {
				t.Fatalf("CheckKey(%+q) = %v, want a *KeyError", tc.key, err)
			}
			if ke.Offset != tc.offset || !strings.Contains(ke.Reason, tc.reason) {
				t.Errorf("CheckKey(%+q) = offset %d, reason %q; want offset %d, reason with %q", tc.key, ke.Offset, ke.Reason, tc.offset, tc.reason)
			}
			if msg := err.Error(); !strings.Contains(msg, "byte") || strings.ContainsAny(msg, "\x00\n\t\x7f") {
				t.Errorf("message %q does not name the byte or carries the raw key", msg)
			}
		})
	}
}

// TestCheckKeyLookalikesDeriveDifferentIDs is why CheckKey exists: keys
// it refuses derive ids other than the key a person reads.
func TestCheckKeyLookalikesDeriveDifferentIDs(t *testing.T) {
	t.Parallel()
	meant := ClientOrderID("AB1", "", "caf\u00e9")
	for _, k := range []string{"cafe\u0301", "caf\u00e9 ", "caf\u00e9\x00"} {
		if ClientOrderID("AB1", "", k) == meant {
			t.Errorf("%+q derives the same id as the NFC key", k)
		}
		if CheckKey(k) == nil {
			t.Errorf("CheckKey(%+q) accepted a lookalike of %+q", k, "caf\u00e9")
		}
	}
}

func FuzzCheckKey(f *testing.F) {
	for _, s := range []string{"", "k", "cafe\u0301", " k", "k\x00", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		err := CheckKey(key)
		var ke *KeyError
		switch {
		case err == nil:
			if strings.TrimSpace(key) != key || strings.ContainsRune(key, 0) {
				t.Errorf("accepted %+q", key)
			}
		case !errors.As(err, &ke) || ke.Offset < 0 || ke.Offset > len(key):
			t.Errorf("CheckKey(%+q) = %v", key, err)
		}
	})
}
