package transport

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/tradewire/tradewire/internal/h2front"
)

// countingLimiter is a Limiter that never waits and counts the tokens taken.
type countingLimiter struct {
	mu     sync.Mutex
	tokens int
}

func (l *countingLimiter) Wait(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.tokens++
	return ctx.Err()
}

func (l *countingLimiter) Pause(time.Duration) {}

func (l *countingLimiter) taken() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.tokens
}

// wireVenue counts what reaches a TLS + HTTP/2 venue, per method, and
// answers every request 201 {} once its effect (the count) is committed.
type wireVenue struct {
	clock *clockwork.FakeClock
	mu    sync.Mutex
	count map[string]int
	proto []int // ProtoMajor of every request
	bodys [][]byte
}

func newWireVenue(clock *clockwork.FakeClock) *wireVenue {
	return &wireVenue{clock: clock, count: make(map[string]int)}
}

func (v *wireVenue) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	v.mu.Lock()
	v.count[r.Method]++
	v.proto = append(v.proto, r.ProtoMajor)
	v.bodys = append(v.bodys, body)
	v.mu.Unlock()
	w.Header().Set("Date", v.clock.Now().UTC().Format(http.TimeFormat))
	w.WriteHeader(http.StatusCreated)
	io.WriteString(w, `{}`)
}

func (v *wireVenue) seen(method string) int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.count[method]
}

func (v *wireVenue) protos() []int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]int(nil), v.proto...)
}

func wireClient(t *testing.T, url string, hc *http.Client, clock clockwork.Clock, lim Limiter) *Client {
	t.Helper()
	c, err := New(url, testSigner(t), Config{Clock: clock, RoundTripper: hc.Transport, Limiter: lim})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

const createBody = `{"client_order_id":"131de903-5a9c-4260-abc1-28d562a5dcf0","side":"buy"}`

// TestHTTP2WithHTTPTest: a POST and a GET go over HTTP/2 to net/http's own
// TLS server, and the Response says so.
func TestHTTP2WithHTTPTest(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	clock := clockwork.NewFakeClockAt(t0)
	v := newWireVenue(clock)
	srv := httptest.NewUnstartedServer(v)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	c := wireClient(t, srv.URL, srv.Client(), clock, &countingLimiter{})

	for _, tt := range []struct {
		method string
		body   []byte
	}{{"POST", []byte(createBody)}, {"POST", nil}, {"GET", nil}} {
		resp, err := c.Do(ctx, tt.method, "/api/v2/crypto/trading/orders/", tt.body)
		if err != nil {
			t.Fatalf("%s: %v", tt.method, err)
		}
		if resp.Proto != "HTTP/2.0" {
			t.Errorf("%s: Response.Proto = %q, want HTTP/2.0", tt.method, resp.Proto)
		}
	}
	for i, p := range v.protos() {
		if p != 2 {
			t.Errorf("request %d arrived over HTTP/%d, want 2", i+1, p)
		}
	}
	if string(v.bodys[0]) != createBody || len(v.bodys[1]) != 0 {
		t.Errorf("venue read bodies %q, %q", v.bodys[0], v.bodys[1])
	}
}

var abortKinds = []h2front.Kind{h2front.RefusedStream, h2front.ProtocolError, h2front.GoAway}

// TestWriteNeverReplayedOverHTTP2: a venue that commits a create and then
// ends the stream the way Go's HTTP/2 client takes as "not processed, send
// it again" sees exactly one POST, and the caller learns the outcome is
// unknown: not success, not "not sent". The hook ran once, one token was
// spent. An empty-bodied POST (a cancel) is held to the same.
func TestWriteNeverReplayedOverHTTP2(t *testing.T) {
	t.Parallel()
	for _, k := range abortKinds {
		for _, body := range []string{createBody, ""} {
			name := k.String() + "/create"
			if body == "" {
				name = k.String() + "/empty body"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				ctx := testContext(t)
				clock := clockwork.NewFakeClockAt(t0)
				v := newWireVenue(clock)
				srv := h2front.NewServer(v)
				t.Cleanup(srv.Close)
				srv.AbortMethod(http.MethodPost, k, 1)
				lim := &countingLimiter{}
				c := wireClient(t, srv.URL, srv.Client(), clock, lim)

				hooks := 0
				var sendBody []byte
				if body != "" {
					sendBody = []byte(body)
				}
				resp, err := c.Send(ctx, http.MethodPost, "/api/v2/crypto/trading/orders/", sendBody, func(time.Time) error { hooks++; return nil })
				if n := v.seen(http.MethodPost); n != 1 {
					t.Errorf("venue saw %d POSTs, want exactly 1", n)
				}
				var uo *unknownOutcomeError
				var ns *notSentError
				if err == nil {
					t.Fatalf("success (%d), want an unknown outcome", resp.StatusCode)
				}
				if !errors.As(err, &uo) || !errors.Is(err, ErrUnknownOutcome) || errors.As(err, &ns) || errors.Is(err, ErrNotSent) {
					t.Errorf("err = %v, want *unknownOutcomeError and not not-sent", err)
				}
				if hooks != 1 || lim.taken() != 1 {
					t.Errorf("BeforeSend ran %d times, %d tokens taken; want 1 and 1", hooks, lim.taken())
				}
			})
		}
	}
}

// TestOldRequestIsReplayedOverHTTP2 is the negative control: the same
// venue, the same POST built the way the transport used to build it
// (http.NewRequest with a bytes.Reader, which sets GetBody) and sent
// through plain net/http, is re-sent by net/http itself and "succeeds":
// the venue sees 2 POSTs. The same request built by newRequest is not.
func TestOldRequestIsReplayedOverHTTP2(t *testing.T) {
	t.Parallel()
	for _, k := range abortKinds {
		t.Run(k.String(), func(t *testing.T) {
			t.Parallel()
			ctx := testContext(t)
			v := newWireVenue(clockwork.NewFakeClockAt(t0))
			srv := h2front.NewServer(v)
			t.Cleanup(srv.Close)
			hc := srv.Client()

			srv.AbortMethod(http.MethodPost, k, 1)
			old, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/o/", bytes.NewReader([]byte(createBody)))
			resp, err := hc.Do(old)
			if err != nil {
				t.Fatalf("old request: %v", err)
			}
			resp.Body.Close()
			if n := v.seen(http.MethodPost); n != 2 {
				t.Fatalf("old request: venue saw %d POSTs, want 2 (the replay this package must prevent)", n)
			}

			srv.AbortMethod(http.MethodPost, k, 1)
			u, err := url.Parse(srv.URL + "/o/")
			if err != nil {
				t.Fatal(err)
			}
			req := newRequest(ctx, http.MethodPost, u, []byte(createBody))
			if resp, err := hc.Do(req); err == nil {
				resp.Body.Close()
				t.Fatalf("newRequest: got %d, want the abort to reach the caller", resp.StatusCode)
			}
			if n := v.seen(http.MethodPost); n != 3 {
				t.Fatalf("newRequest: venue saw %d more POSTs, want 1", n-2)
			}
		})
	}
}

// TestGETMayBeReplayedOverHTTP2: net/http may re-send a GET by itself
// after a refused stream, but only with a token of its own: the caller
// sees one attempt, with one replay, and two tokens spent for the two
// GETs the venue saw.
func TestGETMayBeReplayedOverHTTP2(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	clock := clockwork.NewFakeClockAt(t0)
	v := newWireVenue(clock)
	srv := h2front.NewServer(v)
	t.Cleanup(srv.Close)
	srv.AbortMethod(http.MethodGet, h2front.RefusedStream, 1)
	lim := &countingLimiter{}
	var seen []Attempt
	c, err := New(srv.URL, testSigner(t), Config{Clock: clock, RoundTripper: srv.Client().Transport, Limiter: lim, Observer: func(a Attempt) { seen = append(seen, a) }})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Get(ctx, "/api/v2/crypto/trading/accounts/")
	if err != nil {
		t.Fatal(err)
	}
	if resp.Attempts != 1 || lim.taken() != 2 || v.seen(http.MethodGet) != 2 || resp.Proto != "HTTP/2.0" {
		t.Errorf("attempts %d, tokens %d, venue saw %d GETs, %s; want 1, 2, 2, HTTP/2.0", resp.Attempts, lim.taken(), v.seen(http.MethodGet), resp.Proto)
	}
	if len(seen) != 1 || seen[0].Replays != 1 {
		t.Errorf("observed %+v, want one attempt with one replay", seen)
	}
}

// TestWriteRequestIsNotReplayable: what the guarantee rests on, checked on
// the request itself, for the rules net/http's HTTP/1 and HTTP/2 clients
// apply before re-sending (Request.isReplayable, http2shouldRetryRequest).
func TestWriteRequestIsNotReplayable(t *testing.T) {
	t.Parallel()
	for _, body := range [][]byte{nil, {}, []byte(createBody)} {
		req := newRequest(context.Background(), http.MethodPost, &url.URL{Scheme: "https", Host: "venue.test", Path: "/o/"}, body)
		if req.GetBody != nil {
			t.Errorf("body %q: GetBody set", body)
		}
		if req.Body == nil || req.Body == http.NoBody {
			t.Errorf("body %q: Body is nil or NoBody, which HTTP/2 re-sends freely", body)
		}
		if req.ContentLength != int64(len(body)) {
			t.Errorf("body %q: ContentLength %d", body, req.ContentLength)
		}
		for _, h := range []string{"Idempotency-Key", "X-Idempotency-Key"} {
			if _, ok := req.Header[h]; ok {
				t.Errorf("body %q: %s header makes HTTP/1 treat the POST as replayable", body, h)
			}
		}
		got, _ := io.ReadAll(req.Body)
		if !bytes.Equal(got, body) {
			t.Errorf("body %q: reads %q", body, got)
		}
	}
}

// TestNoProxyFromEnvironment: the default transport ignores HTTPS_PROXY; a
// caller's own round tripper is used as given.
func TestNoProxyFromEnvironment(t *testing.T) {
	t.Parallel()
	c, err := New("https://trading.robinhood.com", testSigner(t), Config{})
	if err != nil {
		t.Fatal(err)
	}
	tr, ok := c.rt.(*http.Transport)
	if !ok || tr.Proxy != nil || !tr.ForceAttemptHTTP2 {
		t.Fatalf("default transport %T: proxy set or HTTP/2 off", c.rt)
	}
	own := &http.Transport{Proxy: http.ProxyFromEnvironment}
	c, err = New("https://trading.robinhood.com", testSigner(t), Config{RoundTripper: own})
	if err != nil {
		t.Fatal(err)
	}
	if c.rt != own {
		t.Fatal("the caller's transport was replaced")
	}
}

// TestHTTP1OverTLS: against a venue that speaks only HTTP/1.1 the same
// requests work (an empty write body goes chunked, and arrives empty), and
// the Response says HTTP/1.1.
func TestHTTP1OverTLS(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	clock := clockwork.NewFakeClockAt(t0)
	v := newWireVenue(clock)
	srv := httptest.NewTLSServer(v)
	t.Cleanup(srv.Close)
	c := wireClient(t, srv.URL, srv.Client(), clock, &countingLimiter{})
	for _, body := range [][]byte{[]byte(createBody), nil} {
		resp, err := c.Do(ctx, "POST", "/o/", body)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Proto != "HTTP/1.1" {
			t.Errorf("Response.Proto = %q, want HTTP/1.1", resp.Proto)
		}
	}
	if string(v.bodys[0]) != createBody || len(v.bodys[1]) != 0 || v.protos()[0] != 1 {
		t.Errorf("venue read %q, %q over HTTP/%d", v.bodys[0], v.bodys[1], v.protos()[0])
	}
}

// TestRootCAs: the client's own transport trusts the pool it is given
// (and still speaks HTTP/2 with no proxy); without it, the venue's
// self-signed certificate is refused before anything is sent.
func TestRootCAs(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClockAt(t0)
	v := newWireVenue(clock)
	srv := h2front.NewServer(v)
	t.Cleanup(srv.Close)
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	for _, tc := range []struct {
		name  string
		roots *x509.CertPool
		trust bool
	}{{"trusted", pool, true}, {"system roots", nil, false}} {
		c, err := New(srv.URL, testSigner(t), Config{Clock: clock, RatePerMinute: -1, Retry: &RetryPolicy{MaxAttempts: 1}, RootCAs: tc.roots})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.Get(testContext(t), "/api/v2/crypto/trading/accounts/")
		switch {
		case tc.trust && (err != nil || resp.Proto != "HTTP/2.0"):
			t.Errorf("%s: %v, %+v; want an answer over HTTP/2", tc.name, err, resp)
		case !tc.trust && err == nil:
			t.Errorf("%s: answered; want the certificate refused", tc.name)
		}
	}
}
