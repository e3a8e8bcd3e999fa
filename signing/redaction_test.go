package signing

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
)

// fmtVerbs is every verb fmt knows, and two it does not.
var fmtVerbs = []rune{'v', 's', 'q', 'x', 'X', 'd', 'b', 'o', 'O', 'c', 'U', 'e', 'E', 'f', 'F', 'g', 'G', 't', 'p', 'T', 'w', 'z'}

// fmtFlags is every flag alone and in combination, with widths and
// precisions.
var fmtFlags = []string{"", "+", "-", "#", " ", "0", "+#", "-#", "# ", "#0", "+-# 0", "8", "-8", "08", ".3", "8.3", "-8.3", "#8.3", "+#-8.3", " #x"[:2], "100", ".0", "*", ".*", "[1]"}

// redactionFixture is a key and a signer, and the same values in every
// shape a caller might print them in: by value and pointer, in exported
// and unexported fields, slices, arrays, maps, interfaces and pointers to
// pointers.
type redactionFixture struct {
	key    *PrivateKey
	signer *Signer
	apiKey string
}

func newRedactionFixture(t testing.TB, seed []byte, apiKey string) *redactionFixture {
	t.Helper()
	key, err := fromRaw("test", seed)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(apiKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return &redactionFixture{key: key, signer: s, apiKey: apiKey}
}

type exported struct {
	Key    PrivateKey
	PKey   *PrivateKey
	Signer Signer
	PSign  *Signer
	Any    any
}

type unexported struct {
	key    PrivateKey
	pkey   *PrivateKey
	signer Signer
	psign  *Signer
	any    any
}

func (x *redactionFixture) shapes() []any {
	k, s := x.key, x.signer
	pk := &k
	return []any{
		k, *k, s, *s, pk, &pk,
		exported{*k, k, *s, s, k}, &exported{*k, k, *s, s, *s},
		unexported{*k, k, *s, s, *k}, &unexported{*k, k, *s, s, s},
		[]PrivateKey{*k}, []*PrivateKey{k}, [1]PrivateKey{*k}, []Signer{*s}, [2]*Signer{s, s},
		map[string]PrivateKey{"k": *k}, map[string]*Signer{"s": s}, map[PrivateKey]int{*k: 1},
		[]any{*k, s}, struct{ inner unexported }{unexported{key: *k, signer: *s}},
		[]unexported{{key: *k, signer: *s}}, map[string]unexported{"u": {key: *k, signer: *s}},
	}
}

// encodings is every way the seed or API key might show up in output.
func (x *redactionFixture) encodings() []string {
	seed := x.key.bytes().Seed()
	var out []string
	for _, b := range [][]byte{seed, x.key.bytes()} {
		out = append(out,
			string(b),
			hex.EncodeToString(b), strings.ToUpper(hex.EncodeToString(b)),
			base64.StdEncoding.EncodeToString(b), base64.URLEncoding.EncodeToString(b),
			base64.RawStdEncoding.EncodeToString(b), base64.RawURLEncoding.EncodeToString(b),
			fmt.Sprint(b), fmt.Sprintf("%d", b), strings.Trim(fmt.Sprint(b), "[]"),
			fmt.Sprintf("%#v", b), fmt.Sprintf("% x", b), fmt.Sprintf("% X", b), fmt.Sprintf("%o", b),
		)
	}
	return append(out, x.apiKey, hex.EncodeToString([]byte(x.apiKey)), base64.StdEncoding.EncodeToString([]byte(x.apiKey)))
}

// swap overwrites the key's bytes and the API key in place, so that every
// address stays the same, and returns a function that restores them.
func (x *redactionFixture) swap(t testing.TB) (restore func()) {
	t.Helper()
	key := x.key.bytes()
	saved := append(ed25519.PrivateKey(nil), key...)
	other := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{0x5a}, ed25519.SeedSize))
	copy(key, other)
	savedAPI := *x.signer.c.apiKey
	*x.signer.c.apiKey = strings.Repeat("z", len(savedAPI))
	return func() {
		copy(key, saved)
		*x.signer.c.apiKey = savedAPI
	}
}

// checkFormat formats args with format and fails if any secret shows: in
// none of its encodings, and not at all, since the same format with other
// key bytes at the same addresses must print exactly the same text.
func (x *redactionFixture) checkFormat(t *testing.T, format string, args ...any) string {
	t.Helper()
	got := fmt.Sprintf(format, args...)
	for _, enc := range x.encodings() {
		if strings.Contains(got, enc) && !strings.Contains(format, enc) {
			t.Fatalf("fmt.Sprintf(%q, %T) leaks a secret: %q", format, args[0], got)
		}
	}
	restore := x.swap(t)
	other := fmt.Sprintf(format, args...)
	restore()
	if other != got {
		t.Fatalf("fmt.Sprintf(%q, %T) depends on the key:\n%q\n%q", format, args[0], got, other)
	}
	return got
}

func goldenFixture(t testing.TB) *redactionFixture {
	t.Helper()
	seed, err := base64.StdEncoding.DecodeString("xQnTJVeQLmw1/Mg2YimEViSpw/SdJcgNXZ5kQkAXNPU=")
	if err != nil {
		t.Fatal(err)
	}
	return newRedactionFixture(t, seed, "rh-api-6148effc-c0b1-486c-8940-a1d099456be6")
}

// TestRedactionEveryVerb formats the key and the signer in every shape
// with every verb and every flag combination.
func TestRedactionEveryVerb(t *testing.T) {
	x := goldenFixture(t)
	for i, v := range x.shapes() {
		for _, verb := range fmtVerbs {
			for _, flags := range fmtFlags {
				format := "%" + flags + string(verb)
				args := []any{v}
				if strings.Contains(flags, "*") {
					args = []any{8, v}
				}
				got := x.checkFormat(t, format, args...)
				// Printed directly, every verb but fmt's own %T and %p
				// (and %w, which only Errorf takes) says it is redacted.
				if i < 4 && verb != 'T' && verb != 'p' && verb != 'w' && !strings.Contains(got, redacted) {
					t.Errorf("fmt.Sprintf(%q, %T) = %q: no placeholder", format, v, got)
				}
			}
		}
	}
}

// TestRedactionPercentP is the report that started this: %p of a key
// value printed the whole key.
func TestRedactionPercentP(t *testing.T) {
	x := goldenFixture(t)
	for _, format := range []string{"%p", "%-p", "%#p", "%+p", "%20p", "%v %p", "%[1]p"} {
		x.checkFormat(t, format, *x.key, *x.key)
		x.checkFormat(t, format, *x.signer, *x.signer)
	}
}

// TestRedactionZeroValues prints the zero key and signer, and nil
// pointers to them, without a panic or a secret.
func TestRedactionZeroValues(t *testing.T) {
	var k PrivateKey
	var s Signer
	var pk *PrivateKey
	var ps *Signer
	for _, v := range []any{k, s, pk, ps, &k, &s} {
		for _, verb := range fmtVerbs {
			_ = fmt.Sprintf("%"+string(verb), v)
		}
	}
}

// FuzzRedaction formats the key and the signer, in every shape, with
// random format strings.
func FuzzRedaction(f *testing.F) {
	for _, s := range []string{"%v", "%p", "%#v", "%+v", "%x", "% x", "%#x", "%d", "%s %q", "%8.3x", "%-p", "%[2]v %[1]p", "%T", "%*d", "%!", "%%", "%v%v%v"} {
		f.Add(s, uint8(0))
	}
	x := goldenFixture(f)
	shapes := x.shapes()
	f.Fuzz(func(t *testing.T, format string, pick uint8) {
		v := shapes[int(pick)%len(shapes)]
		x.checkFormat(t, format, v, shapes[(int(pick)+1)%len(shapes)], 7)
	})
}
