package signing

import (
	"bytes"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

type golden struct {
	Seed      string `json:"seed"`
	PublicKey string `json:"public_key"`
	APIKey    string `json:"api_key"`
	Timestamp int64  `json:"timestamp"`
	Vectors   []struct {
		Name, Method, Target, Body, Signature string
	} `json:"vectors"`
}

func loadGolden(t *testing.T) golden {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "vectors.json"))
	if err != nil {
		t.Fatal(err)
	}
	var g golden
	if err := json.Unmarshal(data, &g); err != nil {
		t.Fatal(err)
	}
	if len(g.Vectors) != 3 {
		t.Fatalf("testdata holds %d vectors, want the reference's 3", len(g.Vectors))
	}
	return g
}

func TestGolden(t *testing.T) {
	g := loadGolden(t)
	key, err := ParsePrivateKey(g.Seed)
	if err != nil {
		t.Fatal(err)
	}
	if got := base64.StdEncoding.EncodeToString(key.Public()); got != g.PublicKey {
		t.Fatalf("public key = %s, want %s", got, g.PublicKey)
	}
	s, err := New(g.APIKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ts := time.Unix(g.Timestamp, 0)
	for _, v := range g.Vectors {
		t.Run(v.Name, func(t *testing.T) {
			var body []byte
			if v.Body != "" {
				body = []byte(v.Body)
			}
			if got := s.Sign(ts, v.Method, v.Target, body); got != v.Signature {
				t.Errorf("Sign = %s, want %s", got, v.Signature)
			}
			h := http.Header{}
			s.SetHeaders(h, ts, v.Method, v.Target, body)
			if h.Get(headerAPIKey) != g.APIKey || h.Get(headerTimestamp) != "1698708981" || h.Get(headerSignature) != v.Signature {
				t.Errorf("headers = %v", h)
			}
		})
	}
}

func TestSignatureCoversEveryPart(t *testing.T) {
	g := loadGolden(t)
	key, _ := ParsePrivateKey(g.Seed)
	s, _ := New(g.APIKey, key)
	ts := time.Unix(g.Timestamp, 0)
	base := s.Sign(ts, "GET", "/p/?a=1", nil)
	for name, got := range map[string]string{
		"timestamp": s.Sign(ts.Add(time.Second), "GET", "/p/?a=1", nil),
		"query":     s.Sign(ts, "GET", "/p/?a=2", nil),
		"method":    s.Sign(ts, "POST", "/p/?a=1", nil),
		"body":      s.Sign(ts, "GET", "/p/?a=1", []byte("x")),
	} {
		if got == base {
			t.Errorf("changing the %s did not change the signature", name)
		}
	}
	// Sub-second parts of the time are not signed: the venue reads seconds.
	if s.Sign(ts.Add(999*time.Millisecond), "GET", "/p/?a=1", nil) != base {
		t.Error("sub-second time changed the signature")
	}
	sig, _ := base64.StdEncoding.DecodeString(base)
	if !ed25519.Verify(key.Public(), []byte(g.APIKey+"1698708981/p/?a=1GET"), sig) {
		t.Error("signature does not verify over the documented message")
	}
}

func TestParsePrivateKey(t *testing.T) {
	g := loadGolden(t)
	seed, _ := base64.StdEncoding.DecodeString(g.Seed)
	full := ed25519.NewKeyFromSeed(seed)
	tampered := append([]byte(nil), full...)
	tampered[63] ^= 1
	tests := []struct {
		name, in, wantErr string
	}{
		{"seed", g.Seed, ""},
		{"seed with newline", g.Seed + "\n", ""},
		{"seed and public key", base64.StdEncoding.EncodeToString(full), ""},
		{"mismatched public key", base64.StdEncoding.EncodeToString(tampered), "does not match"},
		{"empty", "  ", "empty"},
		{"not base64", "not*base64", "not valid standard base64"},
		{"wrong length", base64.StdEncoding.EncodeToString(seed[:16]), "decodes to 16 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := ParsePrivateKey(tt.in)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(k.Public(), full.Public().(ed25519.PublicKey)) {
					t.Fatal("wrong key")
				}
				return
			}
			var ke *KeyError
			if !errors.As(err, &ke) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want KeyError containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestLoadPrivateKeyFile(t *testing.T) {
	g := loadGolden(t)
	seed, _ := base64.StdEncoding.DecodeString(g.Seed)
	full := ed25519.NewKeyFromSeed(seed)
	der, err := x509.MarshalPKCS8PrivateKey(full)
	if err != nil {
		t.Fatal(err)
	}
	pemData := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	dir := t.TempDir()
	write := func(name string, data []byte, perm os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, perm); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, perm); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name    string
		path    string
		wantErr string
	}{
		{"base64 seed", write("seed", []byte(g.Seed+"\n"), 0o600), ""},
		{"base64 64-byte", write("full", []byte(base64.StdEncoding.EncodeToString(full)), 0o400), ""},
		{"pkcs8 pem", write("pem", pemData, 0o600), ""},
		{"group readable", write("open", []byte(g.Seed), 0o640), "chmod 600"},
		{"world readable", write("world", []byte(g.Seed), 0o604), "too open"},
		{"wrong pem type", write("rsa", pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: []byte{1}}), 0o600), "want a PKCS#8"},
		{"missing", filepath.Join(dir, "nope"), "no such file"},
		{"directory", dir, "not a regular file"},
		{"just over the bound", write("big", append([]byte(g.Seed+"\n"), bytes.Repeat([]byte(" "), maxKeyFileSize)...), 0o600), "65536 bytes (64 KiB)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := LoadPrivateKeyFile(tt.path)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(k.Public(), full.Public().(ed25519.PublicKey)) {
					t.Fatal("wrong key")
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestNewRefusesMissingParts(t *testing.T) {
	g := loadGolden(t)
	key, _ := ParsePrivateKey(g.Seed)
	if _, err := New("", key); err == nil {
		t.Error("empty API key accepted")
	}
	if _, err := New("rh api", key); err == nil {
		t.Error("API key with a space accepted")
	}
	if _, err := New(g.APIKey, nil); err == nil {
		t.Error("nil key accepted")
	}
	if _, err := New(g.APIKey, &PrivateKey{}); err == nil {
		t.Error("zero key accepted")
	}
}

// TestRedaction proves that neither the private key nor the API key appears
// in any print path of PrivateKey or Signer.
func TestRedaction(t *testing.T) {
	g := loadGolden(t)
	key, _ := ParsePrivateKey(g.Seed)
	s, _ := New(g.APIKey, key)
	seed, _ := base64.StdEncoding.DecodeString(g.Seed)

	secrets := []string{
		g.Seed,
		base64.StdEncoding.EncodeToString(key.bytes()),
		fmt.Sprintf("%x", seed),
		fmt.Sprintf("%X", seed),
		fmt.Sprintf("%v", seed),
		fmt.Sprintf("%d", seed),
		strings.Trim(fmt.Sprintf("%v", seed), "[]"),
		string(seed),
		g.APIKey,
	}
	type holder struct {
		Key    *PrivateKey
		Signer *Signer
	}
	var outputs []string
	for _, v := range []any{key, s, *key, *s, holder{key, s}, &holder{key, s}} {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%10.3v"} {
			outputs = append(outputs, fmt.Sprintf(verb, v))
		}
		j, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("json.Marshal(%T): %v", v, err)
		}
		outputs = append(outputs, string(j))
	}
	outputs = append(outputs, key.String(), s.String(), fmt.Sprintf("%#v", key), fmt.Sprintf("%#v", *s))

	var buf bytes.Buffer
	log := zerolog.New(&buf)
	log.Info().Any("key", key).Any("signer", *s).Interface("any_key", *key).Interface("any_signer", s).
		Interface("holder", holder{key, s}).Fields(map[string]any{"field_key": key, "field_signer": *s}).
		Stringer("str", key).Msg("redaction")
	outputs = append(outputs, buf.String())

	for _, out := range outputs {
		if !strings.Contains(out, redacted) {
			t.Errorf("output %q does not say it is redacted", out)
		}
		for _, secret := range secrets {
			if strings.Contains(out, secret) {
				t.Fatalf("secret leaked in %q", out)
			}
		}
	}
}

func FuzzParsePrivateKey(f *testing.F) {
	f.Add("xQnTJVeQLmw1/Mg2YimEViSpw/SdJcgNXZ5kQkAXNPU=")
	f.Add("")
	f.Add("====")
	f.Fuzz(func(t *testing.T, in string) {
		k, err := ParsePrivateKey(in)
		if err != nil {
			if k != nil {
				t.Fatal("key and error both returned")
			}
			if strings.Contains(err.Error(), strings.TrimSpace(in)) && len(strings.TrimSpace(in)) > 8 {
				t.Fatalf("error %q echoes its input", err)
			}
			return
		}
		if len(k.Public()) != ed25519.PublicKeySize {
			t.Fatal("bad public key")
		}
	})
}

// TestLoadPrivateKeyFileRefusesHugeFileUnread gives a 2 GiB (sparse) file:
// it is refused from its size alone, at once, with an error naming the
// file and the bound.
func TestParsePrivateKeyRefusesHugeInput(t *testing.T) {
	_, err := ParsePrivateKey(strings.Repeat("A", maxKeyFileSize+1))
	var ke *KeyError
	if !errors.As(err, &ke) || !strings.Contains(ke.Reason, "at most 65536") {
		t.Fatalf("err = %v", err)
	}
}

func TestLoadPrivateKeyFileRefusesHugeFileUnread(t *testing.T) {
	p := filepath.Join(t.TempDir(), "huge.key")
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(2 << 30); err != nil {
		t.Skipf("cannot make a sparse file here: %v", err)
	}
	f.Close()
	start := time.Now()
	_, err = LoadPrivateKeyFile(p)
	var ke *KeyError
	if !errors.As(err, &ke) || ke.Source != p || !strings.Contains(ke.Reason, "2147483648 bytes") || !strings.Contains(ke.Reason, "65536") {
		t.Fatalf("err = %v, want a *KeyError naming %s, its size and the bound", err, p)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("refusing took %v: the file was read", d)
	}
}

// TestReadBoundedRefusesGrownFile covers a file that grows between the
// size check and the read: the read stops at the bound.
func TestReadBoundedRefusesGrownFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "grown.key")
	if err := os.WriteFile(p, bytes.Repeat([]byte("A"), maxKeyFileSize+10), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := readBounded(p)
	var ke *KeyError
	if !errors.As(err, &ke) || !strings.Contains(ke.Reason, "larger than the 65536 bytes") {
		t.Fatalf("err = %v", err)
	}
	if _, err := readBounded(filepath.Join(t.TempDir(), "none")); err == nil {
		t.Fatal("missing file read")
	}
}
