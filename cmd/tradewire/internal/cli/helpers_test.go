package cli

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tradewire/tradewire/transport"
)

// The venue's published signature test vector (venue-api.md).
const (
	testSeedB64   = "xQnTJVeQLmw1/Mg2YimEViSpw/SdJcgNXZ5kQkAXNPU="
	testPublicB64 = "jPItx4TLjcnSUnmnXQQyAKL4eJj3+oWNNMmmm2vATqk="
	testAPIKey    = "rh-api-6148effc-c0b1-486c-8940-a1d099456be6"
)

// received is one request as the fake venue saw it.
type received struct {
	Method    string
	Target    string // r.RequestURI: exactly what was signed
	Body      []byte
	APIKey    string
	Signature string
}

// fakeVenue is an httptest server that verifies every signature itself
// with crypto/ed25519 (independently of package signing), records what
// it saw, and answers with handler.
type fakeVenue struct {
	t       *testing.T
	srv     *httptest.Server
	pub     ed25519.PublicKey
	handler func(w http.ResponseWriter, n int)

	mu   sync.Mutex
	reqs []received
}

// newFakeVenue starts a venue that answers the n-th request (from 1) with
// handler, after checking its signature.
func newFakeVenue(t *testing.T, handler func(w http.ResponseWriter, n int)) *fakeVenue {
	t.Helper()
	pub, err := base64.StdEncoding.DecodeString(testPublicB64)
	if err != nil {
		t.Fatal(err)
	}
	v := &fakeVenue{t: t, pub: pub, handler: handler}
	v.srv = httptest.NewServer(http.HandlerFunc(v.serve))
	t.Cleanup(v.srv.Close)
	return v
}

func (v *fakeVenue) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		v.t.Errorf("fake venue: reading body: %v", err)
		return
	}
	rec := received{
		Method:    r.Method,
		Target:    r.RequestURI,
		Body:      body,
		APIKey:    r.Header.Get("x-api-key"),
		Signature: r.Header.Get("x-signature"),
	}
	v.mu.Lock()
	v.reqs = append(v.reqs, rec)
	n := len(v.reqs)
	v.mu.Unlock()

	if ok, why := verify(v.pub, r.Header.Get("x-timestamp"), rec, time.Now()); !ok {
		v.t.Errorf("fake venue: %s %s: %s", r.Method, r.RequestURI, why)
		http.Error(w, why, http.StatusUnauthorized)
		return
	}
	v.handler(w, n)
}

// verify checks a request the way the venue does: message =
// api_key + timestamp + request-target + METHOD + body, Ed25519, and a
// timestamp no older than 30 s.
func verify(pub ed25519.PublicKey, ts string, rec received, now time.Time) (bool, string) {
	if rec.APIKey != testAPIKey {
		return false, "unknown API key"
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return false, "bad timestamp " + strconv.Quote(ts)
	}
	if age := now.Sub(time.Unix(sec, 0)); age > 30*time.Second || age < -5*time.Second {
		return false, "stale timestamp"
	}
	sig, err := base64.StdEncoding.DecodeString(rec.Signature)
	if err != nil || len(sig) != ed25519.SignatureSize {
		return false, "signature is not base64 of 64 bytes"
	}
	var msg bytes.Buffer
	msg.WriteString(rec.APIKey + ts + rec.Target + rec.Method)
	msg.Write(rec.Body)
	if !ed25519.Verify(pub, msg.Bytes(), sig) {
		return false, "bad signature"
	}
	return true, ""
}

func (v *fakeVenue) requests() []received {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]received(nil), v.reqs...)
}

// answer returns a handler that always writes status and body.
func answer(status int, body string) func(http.ResponseWriter, int) {
	return func(w http.ResponseWriter, _ int) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

// credEnv is an environment with working credentials for baseURL.
func credEnv(baseURL string) map[string]string {
	return map[string]string{
		envBaseURL:    baseURL,
		envAPIKey:     testAPIKey,
		envPrivateKey: testSeedB64,
	}
}

type result struct {
	code           int
	stdout, stderr string
}

// fastRetries keeps the default number of attempts but waits zero between
// them, so storms end at once.
var fastRetries = &transport.RetryPolicy{MaxAttempts: 4}

// runCLI runs the command line with env, stdin and args, and retries that
// never wait.
func runCLI(t *testing.T, env map[string]string, stdin string, args ...string) result {
	t.Helper()
	return runWith(t, Options{
		Getenv:          func(k string) string { return env[k] },
		Stdin:           strings.NewReader(stdin),
		TransportConfig: transport.Config{Retry: fastRetries},
	}, args...)
}

func runWith(t *testing.T, opts Options, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	opts.Stdout, opts.Stderr = &stdout, &stderr
	code := Run(context.Background(), args, opts)
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// countingRoundTripper fails the test if anything is sent through it.
type countingRoundTripper struct {
	mu sync.Mutex
	n  int
}

func (c *countingRoundTripper) RoundTrip(*http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
	return nil, io.ErrUnexpectedEOF
}

func (c *countingRoundTripper) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// str reads an optional string of decoded JSON output: "" for null.
func str(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
