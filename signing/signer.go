package signing

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// Header names the venue reads.
const (
	headerAPIKey    = "x-api-key"
	headerTimestamp = "x-timestamp"
	headerSignature = "x-signature"
)

// ValidFor is how long the venue accepts a signature after its timestamp.
const ValidFor = 30 * time.Second

// Signer signs requests for one API key. It redacts itself when printed,
// marshalled or logged. A Signer is immutable and safe for concurrent use;
// the zero value cannot sign.
type Signer struct {
	// c is behind a pointer for the reason PrivateKey.m is.
	c *credentials
}

// credentials holds the API key behind a pointer too: see PrivateKey.m.
type credentials struct {
	apiKey *string
	key    *PrivateKey
}

// New returns a Signer for apiKey and key. Both are required.
func New(apiKey string, key *PrivateKey) (*Signer, error) {
	if apiKey == "" {
		return nil, errors.New("signing: API key is empty")
	}
	for i := 0; i < len(apiKey); i++ {
		if c := apiKey[i]; c <= ' ' || c >= 0x7f {
			return nil, errors.New("signing: API key holds a space, control or non-ASCII character")
		}
	}
	if !key.valid() {
		return nil, errors.New("signing: private key is missing")
	}
	return &Signer{c: &credentials{apiKey: &apiKey, key: key}}, nil
}

// Sign returns the base64 signature of a request sent at time t. target is
// the request-target (path and query string) exactly as it will be sent,
// method is upper case, and body is the exact bytes sent (nil for none).
func (s *Signer) Sign(t time.Time, method, target string, body []byte) string {
	var buf [20]byte
	return s.sign(strconv.AppendInt(buf[:0], t.Unix(), 10), method, target, body)
}

// sign returns the base64 signature of a request whose x-timestamp is ts.
func (s *Signer) sign(ts []byte, method, target string, body []byte) string {
	var enc [sigLen]byte
	return string(s.appendSignature(enc[:0], ts, method, target, body))
}

// sigLen is the length of a signature in base64: 64 bytes, padded.
const sigLen = 88

// appendSignature appends the base64 signature of a request whose
// x-timestamp is ts to dst.
func (s *Signer) appendSignature(dst, ts []byte, method, target string, body []byte) []byte {
	// A message of a GET or a small body is built on the stack.
	var buf [512]byte
	msg := append(buf[:0], *s.c.apiKey...)
	msg = append(msg, ts...)
	msg = append(msg, target...)
	msg = append(msg, method...)
	msg = append(msg, body...)
	sig := ed25519.Sign(s.c.key.bytes(), msg)
	return base64.StdEncoding.AppendEncode(dst, sig)
}

// The header names as net/http keys them.
var (
	keyAPIKey    = http.CanonicalHeaderKey(headerAPIKey)
	keyTimestamp = http.CanonicalHeaderKey(headerTimestamp)
	keySignature = http.CanonicalHeaderKey(headerSignature)
)

// SetHeaders signs a request sent at time t and sets the three
// authentication headers on h.
func (s *Signer) SetHeaders(h http.Header, t time.Time, method, target string, body []byte) {
	// The timestamp and the signature are built in one buffer and made
	// one string, which the two values share.
	var buf [20 + sigLen]byte
	ts := strconv.AppendInt(buf[:0], t.Unix(), 10)
	n := len(ts)
	both := string(s.appendSignature(ts, ts, method, target, body))
	// One array holds the three values; each slice is capped at its
	// own, so an append to one cannot overwrite the next.
	v := make([]string, 3)
	v[0], v[1], v[2] = *s.c.apiKey, both[:n], both[n:]
	h[keyAPIKey], h[keyTimestamp], h[keySignature] = v[0:1:1], v[1:2:2], v[2:3:3]
}

// KeyID returns a short, stable identifier of the API key that reveals
// nothing of it (the first 16 hex digits of its SHA-256), for naming shared
// state such as a fleet's cache entries.
func (s *Signer) KeyID() string {
	sum := sha256.Sum256([]byte(*s.c.apiKey))
	return hex.EncodeToString(sum[:8])
}

// String returns a redacted placeholder, never the API key or private key.
func (s Signer) String() string { return "signing.Signer" + redacted }

// Format writes a redacted placeholder for every fmt verb and flag, %#v
// included; %T and %p are fmt's own and reach no secret (see
// PrivateKey.Format).
func (s Signer) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, s.String()) }

// MarshalText encodes the signer as a redacted placeholder, for
// encoding/json, zerolog and log/slog (see PrivateKey.MarshalText).
func (s Signer) MarshalText() ([]byte, error) { return []byte(redacted), nil }
