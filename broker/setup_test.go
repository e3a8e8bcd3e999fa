package broker

import (
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

	"github.com/jonboulle/clockwork"

	"github.com/tradewire/tradewire/signing"
	"github.com/tradewire/tradewire/transport"
)

// The venue's published test vector key (see venue-api.md).
const (
	testAPIKey = "rh-api-6148effc-c0b1-486c-8940-a1d099456be6"
	testSeed   = "xQnTJVeQLmw1/Mg2YimEViSpw/SdJcgNXZ5kQkAXNPU="
)

var testStart = time.Date(2026, 8, 20, 18, 0, 0, 0, time.UTC)

func testKey(t testing.TB) *signing.PrivateKey {
	t.Helper()
	k, err := signing.ParsePrivateKey(testSeed)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// fakeVenue is an httptest server with canned answers per method and path.
// It verifies every signature over the request-target exactly as received
// and records each request as "METHOD target".
type fakeVenue struct {
	t   testing.TB
	srv *httptest.Server
	pub ed25519.PublicKey

	mu     sync.Mutex
	routes map[string]http.HandlerFunc
	reqs   []string
}

func newFakeVenue(t testing.TB) *fakeVenue {
	v := &fakeVenue{t: t, routes: map[string]http.HandlerFunc{}, pub: testKey(t).Public()}
	v.srv = httptest.NewServer(http.HandlerFunc(v.serve))
	t.Cleanup(v.srv.Close)
	return v
}

func (v *fakeVenue) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	target := r.URL.RequestURI()
	v.mu.Lock()
	v.reqs = append(v.reqs, r.Method+" "+target)
	h := v.routes[r.Method+" "+r.URL.Path]
	v.mu.Unlock()

	ts, _ := strconv.ParseInt(r.Header.Get("x-timestamp"), 10, 64)
	sig, _ := base64.StdEncoding.DecodeString(r.Header.Get("x-signature"))
	msg := []byte(r.Header.Get("x-api-key") + strconv.FormatInt(ts, 10) + target + r.Method + string(body)) // the venue's message
	if r.Header.Get("x-api-key") != testAPIKey || !ed25519.Verify(v.pub, msg, sig) {
		v.t.Errorf("%s %s: bad signature", r.Method, target)
		http.Error(w, `{"type":"client_error","errors":[{"detail":"bad signature","attr":null}]}`, http.StatusUnauthorized)
		return
	}
	if h == nil {
		v.t.Errorf("unexpected request %s %s", r.Method, target)
		w.WriteHeader(http.StatusTeapot)
		return
	}
	h(w, r)
}

// handle sets the answer for method and path (no query).
func (v *fakeVenue) handle(method, path string, h http.HandlerFunc) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.routes[method+" "+path] = h
}

// reply answers method and path with status and body.
func (v *fakeVenue) reply(method, path string, status int, body string) {
	v.handle(method, path, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	})
}

// fixture answers method and path with a fixture file.
func (v *fakeVenue) fixture(method, path, name string) {
	v.reply(method, path, http.StatusOK, string(readFixture(v.t, name)))
}

// requests returns the requests seen so far.
func (v *fakeVenue) requests() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]string(nil), v.reqs...)
}

// count returns how many requests went to path (any query).
func (v *fakeVenue) count(path string) int {
	n := 0
	for _, r := range v.requests() {
		_, target, _ := strings.Cut(r, " ")
		if pathOf(target) == path {
			n++
		}
	}
	return n
}

// url returns an absolute URL on the fake venue, as a next link.
func (v *fakeVenue) url(target string) string { return v.srv.URL + target }

// setup returns a client on a fake venue and a fake clock. Retries are
// off (the zero policy) so that a canned failure is final.
func setup(t testing.TB, extra ...Config) (*Client, *fakeVenue, *clockwork.FakeClock) {
	t.Helper()
	v := newFakeVenue(t)
	clk := clockwork.NewFakeClockAt(testStart)
	var cfg Config
	if len(extra) > 0 {
		cfg = extra[0]
	}
	cfg.APIKey, cfg.PrivateKey, cfg.BaseURL = testAPIKey, testKey(t), v.srv.URL
	if cfg.Transport.Clock == nil {
		cfg.Transport.Clock = clk
	}
	if cfg.Transport.Retry == nil {
		cfg.Transport.Retry = &transport.RetryPolicy{}
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c, v, clk
}

func wantRequests(t testing.TB, v *fakeVenue, want ...string) {
	t.Helper()
	got := v.requests()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("requests:\n\t%s\nwant:\n\t%s", strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
}
