package transport

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	simvenue "github.com/tradewire/tradewire/venue"
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

// h2Venue is the simulated venue served over TLS + HTTP/2 on a loopback
// listener, on a fake clock, accepting testSigner's credentials with no
// rate limit of its own (the client's budget is what is measured), and
// creating a second order for a reused client_order_id. Its Ledger
// records every stream a client opened on it: each request the venue
// served, and each stream its HTTP/2 front refused unserved.
type h2Venue struct {
	*simvenue.Venue
	srv   *simvenue.Server
	clock *clockwork.FakeClock
	// conns counts the TCP connections the venue accepted.
	conns atomic.Int32
}

// countingListener counts the connections it accepts.
type countingListener struct {
	net.Listener
	n *atomic.Int32
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

// newH2Venue serves a venue configured by cfg (its clock, credentials,
// rate limits and duplicate mode set as h2Venue says) over TLS + HTTP/2
// until the test ends.
func newH2Venue(t *testing.T, cfg simvenue.Config) *h2Venue {
	t.Helper()
	seed, err := base64.StdEncoding.DecodeString(testSeed)
	if err != nil {
		t.Fatal(err)
	}
	v := &h2Venue{clock: clockwork.NewFakeClockAt(t0)}
	cfg.Clock = v.clock
	cfg.APIKey, cfg.PrivateKey = testAPIKey, ed25519.NewKeyFromSeed(seed)
	cfg.RateLimits = simvenue.RateLimits{Account: simvenue.RateLimit{PerMinute: math.Inf(1)}}
	cfg.Faults.Duplicate = simvenue.CreateSecond
	v.Venue, err = simvenue.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	v.srv = v.Serve(countingListener{ln, &v.conns}, true)
	t.Cleanup(v.srv.Close)
	return v
}

// fault makes the venue end the stream of the next times requests with
// method the way kind says ("refused_stream", "protocol_error",
// "goaway"), after serving them: a create is committed.
func (v *h2Venue) fault(t *testing.T, kind, method string, times int) {
	t.Helper()
	if err := v.SetFaultPlan(simvenue.FaultPlan{Faults: []simvenue.Fault{{Kind: kind, Method: method, Times: times}}}); err != nil {
		t.Fatal(err)
	}
}

// transport returns an HTTP/2-only transport that trusts the venue's
// certificate authority and uses no proxy.
func (v *h2Venue) transport(t *testing.T) *http.Transport {
	pool := x509.NewCertPool()
	pool.AddCert(v.srv.CA)
	var protos http.Protocols
	protos.SetHTTP2(true)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, ForceAttemptHTTP2: true, Protocols: &protos}
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

// seen returns how many requests with method reached the venue: streams
// it served or refused.
func (v *h2Venue) seen(method string) int {
	n := 0
	for _, r := range v.Ledger().Requests() {
		if r.Method == method {
			n++
		}
	}
	return n
}

// served returns how many requests the venue served (a handler ran):
// every stream but those its HTTP/2 front refused unserved.
func (v *h2Venue) served() int {
	n := 0
	for _, r := range v.Ledger().Requests() {
		if r.Fault != "refused_unserved" {
			n++
		}
	}
	return n
}

// streams returns how many HTTP/2 streams clients opened on the venue.
func (v *h2Venue) streams() int { return v.Ledger().Counts().Total }

// ordersTarget is the create target on v's account.
func (v *h2Venue) ordersTarget() string {
	return "/api/v2/crypto/trading/orders/?account_number=" + v.Config().AccountNumber
}

// venueCreateID and venueCreate are a create the venue commits: a limit
// buy far below the market, which rests.
const (
	venueCreateID = "131de903-5a9c-4260-abc1-28d562a5dcf0"
	venueCreate   = `{"client_order_id":"` + venueCreateID + `","side":"buy","type":"limit","symbol":"DOGE-USD","limit_order_config":{"asset_quantity":"10","limit_price":"0.01"}}`
	accountsPath  = "/api/v2/crypto/trading/accounts/"
)

var abortKinds = []string{"refused_stream", "protocol_error", "goaway"}

// TestWriteNeverReplayedOverHTTP2: a venue that commits a create and then
// ends the stream the way Go's HTTP/2 client takes as "not processed, send
// it again", and that creates a second order for a reused
// client_order_id, sees exactly one POST and holds one order, and the
// caller learns the outcome is unknown: not success, not "not sent". The
// hook ran once, one token was spent. An empty-bodied POST (a cancel) is
// held to the same.
func TestWriteNeverReplayedOverHTTP2(t *testing.T) {
	t.Parallel()
	for _, k := range abortKinds {
		for _, body := range []string{venueCreate, ""} {
			name := k + "/create"
			if body == "" {
				name = k + "/empty body"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				ctx := testContext(t)
				v := newH2Venue(t, simvenue.Config{})
				v.fault(t, k, http.MethodPost, 1)
				lim := &countingLimiter{}
				c := wireClient(t, v.srv.URL, &http.Client{Transport: v.transport(t)}, v.clock, lim)

				hooks := 0
				target, wantOrders := v.ordersTarget(), 1
				var sendBody []byte
				if body != "" {
					sendBody = []byte(body)
				} else {
					target, wantOrders = "/api/v2/crypto/trading/orders/"+venueCreateID+"/cancel/", 0
				}
				resp, err := c.Send(ctx, http.MethodPost, target, sendBody, func(time.Time) error { hooks++; return nil })
				if n := v.seen(http.MethodPost); n != 1 {
					t.Errorf("venue saw %d POSTs, want exactly 1", n)
				}
				if n := len(v.Ledger().Orders()); n != wantOrders {
					t.Errorf("venue holds %d orders, want %d", n, wantOrders)
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
// venue, the same signed create built the way the transport used to build
// it (http.NewRequest with a bytes.Reader, which sets GetBody) and sent
// through plain net/http, is re-sent by net/http itself and "succeeds":
// the venue sees 2 POSTs and holds two orders for one client_order_id.
// The same request built by newRequest is not re-sent.
func TestOldRequestIsReplayedOverHTTP2(t *testing.T) {
	t.Parallel()
	for _, k := range abortKinds {
		t.Run(k, func(t *testing.T) {
			t.Parallel()
			ctx := testContext(t)
			v := newH2Venue(t, simvenue.Config{})
			hc := &http.Client{Transport: v.transport(t)}
			signer := testSigner(t)
			target := v.ordersTarget()

			v.fault(t, k, http.MethodPost, 1)
			old, _ := http.NewRequestWithContext(ctx, http.MethodPost, v.srv.URL+target, bytes.NewReader([]byte(venueCreate)))
			signer.SetHeaders(old.Header, v.clock.Now(), http.MethodPost, target, []byte(venueCreate))
			resp, err := hc.Do(old)
			if err != nil {
				t.Fatalf("old request: %v", err)
			}
			resp.Body.Close()
			if n, dups := v.seen(http.MethodPost), v.Ledger().DuplicateClientIDs(); n != 2 || len(dups) != 1 {
				t.Fatalf("old request: venue saw %d POSTs, duplicates %v; want 2 and the id twice (the replay this package must prevent)", n, dups)
			}

			v.fault(t, k, http.MethodPost, 1)
			u, err := url.Parse(v.srv.URL + target)
			if err != nil {
				t.Fatal(err)
			}
			req := newRequest(ctx, http.MethodPost, u, []byte(venueCreate))
			signer.SetHeaders(req.Header, v.clock.Now(), http.MethodPost, target, []byte(venueCreate))
			if resp, err := hc.Do(req); err == nil {
				resp.Body.Close()
				t.Fatalf("newRequest: got %d, want the abort to reach the caller", resp.StatusCode)
			}
			if n, orders := v.seen(http.MethodPost), len(v.Ledger().Orders()); n != 3 || orders != 3 {
				t.Fatalf("newRequest: venue saw %d more POSTs and holds %d more orders, want 1 and 1", n-2, orders-2)
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
	v := newH2Venue(t, simvenue.Config{})
	v.fault(t, "refused_stream", http.MethodGet, 1)
	lim := &countingLimiter{}
	var seen []Attempt
	c, err := New(v.srv.URL, testSigner(t), Config{Clock: v.clock, RoundTripper: v.transport(t), Limiter: lim, Observer: func(a Attempt) { seen = append(seen, a) }})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Get(ctx, accountsPath)
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
// certificate, signed by an authority of its own, is refused before
// anything is sent.
func TestRootCAs(t *testing.T) {
	t.Parallel()
	v := newH2Venue(t, simvenue.Config{})
	pool := x509.NewCertPool()
	pool.AddCert(v.srv.CA)
	for _, tc := range []struct {
		name  string
		roots *x509.CertPool
		trust bool
	}{{"trusted", pool, true}, {"system roots", nil, false}} {
		c, err := New(v.srv.URL, testSigner(t), Config{Clock: v.clock, RatePerMinute: -1, Retry: &RetryPolicy{MaxAttempts: 1}, RootCAs: tc.roots})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.rt.(*http.Transport).CloseIdleConnections)
		resp, err := c.Get(testContext(t), accountsPath)
		switch {
		case tc.trust && (err != nil || resp.Proto != "HTTP/2.0"):
			t.Errorf("%s: %v, %+v; want an answer over HTTP/2", tc.name, err, resp)
		case !tc.trust && err == nil:
			t.Errorf("%s: answered; want the certificate refused", tc.name)
		}
	}
	if n := v.seen(http.MethodGet); n != 1 {
		t.Errorf("venue saw %d GETs, want 1: the trusted one", n)
	}
}
