package transport

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

// newTestClient is a Client of v on its clock, logging to log, with its
// throttle off; cfg, when given, sets the rest.
func newTestClient(t *testing.T, v *venue, log *eventLog, cfg ...Config) *Client {
	t.Helper()
	var c0 Config
	if len(cfg) > 0 {
		c0 = cfg[0]
	}
	c0.Clock, c0.Logger = v.clock, log.logger()
	if c0.RatePerMinute == 0 {
		c0.RatePerMinute = -1
	}
	c, err := New(v.srv.URL, testSigner(t), c0)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func status(code int) reply {
	return reply{status: code, body: `{"type":"server_error","errors":[{"detail":"boom","attr":null}]}`}
}

func withRetryAfter(code int, ra string) reply {
	return reply{status: code, header: map[string]string{"Retry-After": ra}, body: `{}`}
}

const (
	s500ms = 500 * time.Millisecond
	s1     = time.Second
	s2     = 2 * time.Second
	s8     = 8 * time.Second
)

// TestRetryRules has one row per rule: method × answer × Retry-After form.
func TestRetryRules(t *testing.T) {
	ok := reply{status: http.StatusOK, body: `{"ok":true}`}
	tests := []struct {
		name     string
		method   string
		script   []reply
		attempts int
		delays   []time.Duration
		want     error // nil: success
		unknown  bool  // the error is an unknown outcome
	}{
		{"GET 200", "GET", []reply{ok}, 1, nil, nil, false},
		{"GET 429 until budget ends", "GET", []reply{status(429)}, 4, []time.Duration{s500ms, s1, s2}, ErrRateLimited, false},
		{"GET 500 until budget ends", "GET", []reply{status(500)}, 4, []time.Duration{s500ms, s1, s2}, ErrUnavailable, false},
		{"GET 502 until budget ends", "GET", []reply{status(502)}, 4, []time.Duration{s500ms, s1, s2}, ErrUnavailable, false},
		{"GET 503 until budget ends", "GET", []reply{status(503)}, 4, []time.Duration{s500ms, s1, s2}, ErrUnavailable, false},
		{"GET 504 until budget ends", "GET", []reply{status(504)}, 4, []time.Duration{s500ms, s1, s2}, ErrUnavailable, false},
		{"GET 503 then 200", "GET", []reply{status(503), status(503), ok}, 3, []time.Duration{s500ms, s1}, nil, false},
		{"GET 429 Retry-After 3", "GET", []reply{withRetryAfter(429, "3"), ok}, 2, []time.Duration{3 * s1}, nil, false},
		{"GET 429 Retry-After 0", "GET", []reply{withRetryAfter(429, "0"), ok}, 2, []time.Duration{0}, nil, false},
		{"GET 503 Retry-After 120 clamped", "GET", []reply{withRetryAfter(503, "120"), ok}, 2, []time.Duration{s8}, nil, false},
		{"GET 503 Retry-After huge clamped", "GET", []reply{withRetryAfter(503, "99999999999999999999"), ok}, 2, []time.Duration{s8}, nil, false},
		{"GET 429 Retry-After HTTP-date ignored", "GET", []reply{withRetryAfter(429, "Wed, 21 Oct 2026 07:28:00 GMT"), ok}, 2, []time.Duration{s500ms}, nil, false},
		{"GET 429 Retry-After negative ignored", "GET", []reply{withRetryAfter(429, "-1"), ok}, 2, []time.Duration{s500ms}, nil, false},
		{"GET 429 Retry-After fraction ignored", "GET", []reply{withRetryAfter(429, "1.5"), ok}, 2, []time.Duration{s500ms}, nil, false},
		{"GET 429 Retry-After NaN ignored", "GET", []reply{withRetryAfter(429, "NaN"), ok}, 2, []time.Duration{s500ms}, nil, false},
		{"GET 429 Retry-After empty ignored", "GET", []reply{withRetryAfter(429, ""), ok}, 2, []time.Duration{s500ms}, nil, false},
		{"GET 400 final", "GET", []reply{status(400), ok}, 1, nil, ErrRejected, false},
		{"GET 401 final", "GET", []reply{status(401), ok}, 1, nil, ErrCredentials, false},
		{"GET 403 final", "GET", []reply{status(403), ok}, 1, nil, ErrCredentials, false},
		{"GET 404 final", "GET", []reply{status(404), ok}, 1, nil, ErrNotFound, false},
		{"GET 422 final", "GET", []reply{status(422), ok}, 1, nil, ErrRejected, false},
		{"GET 501 final", "GET", []reply{status(501), ok}, 1, nil, errStatus, false},
		{"GET 505 final", "GET", []reply{status(505), ok}, 1, nil, errStatus, false},
		{"GET 302 not followed", "GET", []reply{{status: 302, header: map[string]string{"Location": "https://elsewhere.invalid/"}}, ok}, 1, nil, errStatus, false},
		{"POST 201", "POST", []reply{{status: 201, body: `{}`}}, 1, nil, nil, false},
		{"POST 429 unknown", "POST", []reply{status(429), ok}, 1, nil, ErrUnknownOutcome, true},
		{"POST 429 Retry-After unknown", "POST", []reply{withRetryAfter(429, "1"), ok}, 1, nil, ErrUnknownOutcome, true},
		{"POST 500 unknown", "POST", []reply{status(500), ok}, 1, nil, ErrUnknownOutcome, true},
		{"POST 501 unknown", "POST", []reply{status(501), ok}, 1, nil, ErrUnknownOutcome, true},
		{"POST 502 unknown", "POST", []reply{status(502), ok}, 1, nil, ErrUnknownOutcome, true},
		{"POST 503 unknown", "POST", []reply{status(503), ok}, 1, nil, ErrUnknownOutcome, true},
		{"POST 504 unknown", "POST", []reply{status(504), ok}, 1, nil, ErrUnknownOutcome, true},
		{"POST 400 rejected", "POST", []reply{status(400), ok}, 1, nil, ErrRejected, false},
		{"POST 401 refused", "POST", []reply{status(401), ok}, 1, nil, ErrCredentials, false},
		{"POST 404 not found", "POST", []reply{status(404), ok}, 1, nil, ErrNotFound, false},
		{"POST 422 rejected", "POST", []reply{status(422), ok}, 1, nil, ErrRejected, false},
		{"POST connection dropped after write", "POST", []reply{{drop: true}, ok}, 1, nil, ErrUnknownOutcome, true},
		{"GET connection dropped then 200", "GET", []reply{{drop: true}, {drop: true}, ok}, 3, []time.Duration{s500ms, s1}, nil, false},
		{"GET connection dropped until budget ends", "GET", []reply{{drop: true}}, 4, []time.Duration{s500ms, s1, s2}, ErrUnavailable, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := testContext(t)
			clock := clockwork.NewFakeClockAt(t0)
			v := newVenue(t, clock, tt.script...)
			log := newEventLog()
			c := newTestClient(t, v, log)

			body := []byte(`{"client_order_id":"131de903-5a9c-4260-abc1-28d562a5dcf0","side":"buy"}`)
			if tt.method == "GET" {
				body = nil
			}
			const target = "/api/v2/crypto/trading/orders/?account_number=AB1&symbol=BTC-USD"
			done := make(chan result, 1)
			go func() {
				resp, err := c.Do(ctx, tt.method, target, body)
				done <- result{resp, err}
			}()
			delays := drive(t, ctx, clock, log, 0)
			res := <-done

			if !slices.Equal(delays, tt.delays) {
				t.Errorf("delays = %v, want %v", delays, tt.delays)
			}
			reqs := v.requests()
			if len(reqs) != tt.attempts {
				t.Fatalf("venue saw %d requests, want %d", len(reqs), tt.attempts)
			}
			for i, r := range reqs {
				if !r.validSig {
					t.Errorf("attempt %d: signature does not verify", i+1)
				}
				if r.timestamp != itoa(r.at.Unix()) {
					t.Errorf("attempt %d: x-timestamp %s, but the clock read %d when it was sent: not signed afresh", i+1, r.timestamp, r.at.Unix())
				}
				if r.target != target || r.method != tt.method || string(r.body) != string(body) {
					t.Errorf("attempt %d: sent %s %s %q, want %s %s %q", i+1, r.method, r.target, r.body, tt.method, target, body)
				}
				if i > 0 {
					if got := r.at.Sub(reqs[i-1].at); got != tt.delays[i-1] {
						t.Errorf("attempt %d came %v after the previous one, want %v", i+1, got, tt.delays[i-1])
					}
					if tt.delays[i-1] >= s500ms && (r.timestamp == reqs[i-1].timestamp || r.signature == reqs[i-1].signature) {
						t.Errorf("attempt %d reused the previous timestamp or signature", i+1)
					}
				}
			}
			if tt.method == "POST" && len(log.lines()) != 1 {
				t.Errorf("POST logged %d attempts, want exactly 1", len(log.lines()))
			}

			if tt.want == nil {
				if res.err != nil {
					t.Fatalf("err = %v, want success", res.err)
				}
				if res.resp.Attempts != tt.attempts {
					t.Errorf("Response.Attempts = %d, want %d", res.resp.Attempts, tt.attempts)
				}
				return
			}
			if res.err == nil {
				t.Fatal("err = nil, want an error")
			}
			if tt.want == errStatus {
				var se *StatusError
				if !errors.As(res.err, &se) {
					t.Fatalf("err = %T %v, want *StatusError", res.err, res.err)
				}
			} else if !errors.Is(res.err, tt.want) {
				t.Fatalf("err = %v, want errors.Is %v", res.err, tt.want)
			}
			var uo *unknownOutcomeError
			if got := errors.As(res.err, &uo); got != tt.unknown {
				t.Errorf("unknown outcome = %v, want %v (err %v)", got, tt.unknown, res.err)
			}
			var se *StatusError
			if errors.As(res.err, &se) && se.Attempts != tt.attempts {
				t.Errorf("StatusError.Attempts = %d, want %d", se.Attempts, tt.attempts)
			}
		})
	}
}

// errStatus marks rows whose error is a *StatusError that matches none of
// the named conditions.
var errStatus = errors.New("status error")

func TestStatusErrorCarriesEnvelope(t *testing.T) {
	ctx := testContext(t)
	clock := clockwork.NewFakeClockAt(t0)
	v := newVenue(t, clock, reply{status: 429, header: map[string]string{"Retry-After": "2"},
		body: `{"type":"client_error","errors":[{"detail":"Request was throttled.","attr":null}]}`})
	log := newEventLog()
	c := newTestClient(t, v, log)
	done := make(chan result, 1)
	go func() { _, err := c.Get(ctx, "/api/v2/crypto/trading/accounts/"); done <- result{nil, err} }()
	drive(t, ctx, clock, log, 0)
	err := (<-done).err
	var se *StatusError
	if !errors.As(err, &se) {
		t.Fatalf("err = %v", err)
	}
	if se.StatusCode != 429 || se.Attempts != 4 || se.RetryAfter != 2*time.Second || se.Type != "client_error" ||
		len(se.Errors) != 1 || se.Errors[0].Detail != "Request was throttled." {
		t.Errorf("StatusError = %+v", se)
	}
	if !errors.Is(err, ErrRateLimited) || errors.Is(err, ErrUnavailable) || errors.Is(err, ErrNotFound) {
		t.Error("wrong conditions matched")
	}
}

func TestRejectionNamesFields(t *testing.T) {
	ctx := testContext(t)
	clock := clockwork.NewFakeClockAt(t0)
	v := newVenue(t, clock, reply{status: 400, body: `{"type":"validation_error","errors":[` +
		`{"detail":"Must be a valid UUID.","attr":"client_order_id"},` +
		`{"detail":"A valid number is required.","attr":"market_order_config.asset_quantity"}]}`})
	c := newTestClient(t, v, newEventLog())
	_, err := c.Do(ctx, "POST", "/api/v2/crypto/trading/orders/", []byte(`{}`))
	var se *StatusError
	if !errors.As(err, &se) || !errors.Is(err, ErrRejected) {
		t.Fatalf("err = %v", err)
	}
	var got []string
	for _, fe := range se.Errors {
		got = append(got, fe.Attr)
	}
	if !slices.Equal(got, []string{"client_order_id", "market_order_config.asset_quantity"}) {
		t.Errorf("fields = %v", got)
	}
	if !strings.Contains(err.Error(), "client_order_id: Must be a valid UUID.") {
		t.Errorf("message %q does not name the field", err)
	}
}

func TestPlainTextBodyKeptVerbatim(t *testing.T) {
	ctx := testContext(t)
	clock := clockwork.NewFakeClockAt(t0)
	long := strings.Repeat("x", 5000)
	v := newVenue(t, clock,
		reply{status: 400, body: "Request missing required headers: x-signature"},
		reply{status: 400, body: long})
	c := newTestClient(t, v, newEventLog())
	_, err := c.Get(ctx, "/a/")
	var se *StatusError
	if !errors.As(err, &se) || se.Body != "Request missing required headers: x-signature" {
		t.Fatalf("err = %#v", err)
	}
	_, err = c.Get(ctx, "/a/")
	if !errors.As(err, &se) || len(se.Body) > maxErrorBody+len("…") {
		t.Fatalf("a long body was not bounded: %d bytes", len(se.Body))
	}
}

func TestCancelEndsBackoffAtOnce(t *testing.T) {
	ctx := testContext(t)
	clock := clockwork.NewFakeClockAt(t0)
	v := newVenue(t, clock, status(503))
	log := newEventLog()
	c := newTestClient(t, v, log)
	callCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { _, err := c.Get(callCtx, "/a/"); done <- err }()
	if ev := <-log.events; !ev.Retry {
		t.Fatal("first attempt was not retried")
	}
	if err := clock.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal(err)
	}
	cancel() // the clock never moves: only the cancellation can end the wait
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	case <-ctx.Done():
		t.Fatal("cancellation did not end the backoff")
	}
	if n := len(v.requests()); n != 1 {
		t.Errorf("venue saw %d requests after cancel, want 1", n)
	}
}

func TestNoWaitOutlivesDeadline(t *testing.T) {
	ctx := testContext(t)
	clock := clockwork.NewFakeClockAt(t0)
	v := newVenue(t, clock, status(503))
	log := newEventLog()
	c := newTestClient(t, v, log)
	// 1.2 s of budget: the 0.5 s wait fits, the 1 s wait after it does not.
	callCtx, cancel := withFakeDeadline(ctx, clock, 1200*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { _, err := c.Get(callCtx, "/a/"); done <- err }()
	delays := drive(t, ctx, clock, log, 1) // the deadline's timer is a waiter too
	err := <-done
	if !slices.Equal(delays, []time.Duration{s500ms}) {
		t.Errorf("delays = %v", delays)
	}
	var se *StatusError
	if !errors.As(err, &se) || se.Attempts != 2 || se.StatusCode != 503 {
		t.Fatalf("err = %v, want the 503 after 2 attempts", err)
	}
}

func TestAttemptTimeoutRetriesGET(t *testing.T) {
	ctx := testContext(t)
	clock := clockwork.NewFakeClockAt(t0)
	v := newVenue(t, clock, reply{hang: true}, reply{status: 200, body: `{}`})
	log := newEventLog()
	c := newTestClient(t, v, log, Config{AttemptTimeout: 3 * time.Second})
	done := make(chan result, 1)
	go func() { r, err := c.Get(ctx, "/a/"); done <- result{r, err} }()
	<-v.arrived
	if err := clock.BlockUntilContext(ctx, 1); err != nil { // the attempt's timer
		t.Fatal(err)
	}
	clock.Advance(3 * time.Second)
	delays := drive(t, ctx, clock, log, 0)
	res := <-done
	if res.err != nil || res.resp.Attempts != 2 {
		t.Fatalf("res = %+v, %v", res.resp, res.err)
	}
	if !slices.Equal(delays, []time.Duration{s500ms}) {
		t.Errorf("delays = %v", delays)
	}
}

// TestAttemptTimeoutOnPOSTIsUnknown runs with a caller's context that can
// end and with one that never does (one path: a child context the attempt timeout cancels).
func TestAttemptTimeoutOnPOSTIsUnknown(t *testing.T) {
	for _, name := range []string{"cancelable", "never ends"} {
		t.Run(name, func(t *testing.T) {
			ctx := testContext(t)
			reqCtx := ctx
			if name == "never ends" {
				reqCtx = context.WithoutCancel(ctx)
			}
			attemptTimeoutOnPOSTIsUnknown(t, ctx, reqCtx)
		})
	}
}

func attemptTimeoutOnPOSTIsUnknown(t *testing.T, ctx, reqCtx context.Context) {
	clock := clockwork.NewFakeClockAt(t0)
	v := newVenue(t, clock, reply{hang: true}, reply{status: 201, body: `{}`})
	log := newEventLog()
	c := newTestClient(t, v, log)
	done := make(chan error, 1)
	go func() { _, err := c.Do(reqCtx, "POST", "/o/", []byte(`{}`)); done <- err }()
	<-v.arrived
	if err := clock.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal(err)
	}
	clock.Advance(defaultAttemptTimeout)
	err := <-done
	var uo *unknownOutcomeError
	if !errors.As(err, &uo) || uo.StatusCode != 0 || !errors.Is(uo.Err, errAttemptTimeout) {
		t.Fatalf("err = %v, want an unknown outcome from the attempt timeout", err)
	}
	if !strings.Contains(err.Error(), "venue.NewClock") {
		t.Errorf("err = %v: on a clockwork.FakeClock it should name venue.NewClock", err)
	}
	if n := len(v.requests()); n != 1 {
		t.Fatalf("POST sent %d times", n)
	}
}

func TestPOSTRefusedConnectionIsNotSent(t *testing.T) {
	ctx := testContext(t)
	clock := clockwork.NewFakeClockAt(t0)
	v := newVenue(t, clock)
	url := v.srv.URL
	v.srv.Close()
	c, err := New(url, testSigner(t), Config{Clock: clock, RatePerMinute: -1})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Do(ctx, "POST", "/o/", []byte(`{}`))
	var ns *notSentError
	if !errors.As(err, &ns) || errors.Is(err, ErrUnknownOutcome) {
		t.Fatalf("err = %v: a refused connection sent nothing, so the outcome is known", err)
	}
}

func TestResponseTooLarge(t *testing.T) {
	ctx := testContext(t)
	clock := clockwork.NewFakeClockAt(t0)
	v := newVenue(t, clock, reply{status: 200, body: strings.Repeat("a", 65)})
	c := newTestClient(t, v, newEventLog(), Config{MaxResponseBytes: 64})
	_, err := c.Get(ctx, "/a/")
	var tl *responseTooLargeError
	if !errors.As(err, &tl) || tl.Limit != 64 || tl.StatusCode != 200 {
		t.Fatalf("err = %v", err)
	}
	if n := len(v.requests()); n != 1 {
		t.Errorf("sent %d times", n)
	}
}

// TestWrite2xxUnreadable: a write answered 2xx whose body cannot be read
// whole (too large, cut off) is an unknown outcome that comes with the
// Response (status, header, no body): the venue acted on it. Any other
// unknown outcome comes without one.
func TestWrite2xxUnreadable(t *testing.T) {
	tests := []struct {
		name   string
		reply  reply
		status int
	}{
		{"too large", reply{status: 201, body: strings.Repeat("a", 65)}, 201},
		{"cut off", reply{status: 200, header: map[string]string{"Content-Length": "100"}, body: `{"id":`}, 200},
		{"503", status(503), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testContext(t)
			clock := clockwork.NewFakeClockAt(t0)
			v := newVenue(t, clock, tt.reply)
			c := newTestClient(t, v, newEventLog(), Config{MaxResponseBytes: 64})
			resp, err := c.Do(ctx, "POST", "/o/", []byte(`{}`))
			if !errors.Is(err, ErrUnknownOutcome) || errors.Is(err, ErrUnavailable) || errors.Is(err, ErrNotSent) {
				t.Fatalf("err = %v, want an unknown outcome only", err)
			}
			switch {
			case tt.status == 0 && resp != nil:
				t.Errorf("resp = %+v with a %v, want none", resp, err)
			case tt.status != 0 && (resp == nil || resp.StatusCode != tt.status || resp.Body != nil || resp.Attempts != 1 || resp.Header.Get("Date") == ""):
				t.Errorf("resp = %+v, want status %d, its header, no body, 1 attempt", resp, tt.status)
			}
			if tt.status != 0 && !strings.Contains(err.Error(), strconv.Itoa(tt.status)) {
				t.Errorf("err = %v: the message does not name the %d", err, tt.status)
			}
			if n := len(v.requests()); n != 1 {
				t.Errorf("sent %d times", n)
			}
		})
	}
}

// TestRedirectNotFollowed: neither the client's own transport nor a
// caller's round tripper follows a redirect: the client calls RoundTrip
// itself, and a 3xx is an answer it refuses.
func TestRedirectNotFollowed(t *testing.T) {
	ctx := testContext(t)
	clock := clockwork.NewFakeClockAt(t0)
	other := newVenue(t, clock)
	v := newVenue(t, clock, reply{status: http.StatusTemporaryRedirect, header: map[string]string{"Location": other.srv.URL + "/stolen/"}})
	for name, rt := range map[string]http.RoundTripper{
		"own transport":        nil,
		"caller's transport":   &http.Transport{},
		"httptest's transport": v.srv.Client().Transport,
	} {
		c := newTestClient(t, v, newEventLog(), Config{RoundTripper: rt})
		for _, method := range []string{"GET", "POST"} {
			if _, err := c.Do(ctx, method, "/a/", nil); err == nil {
				t.Fatalf("%s, %s: redirect answered with success", name, method)
			}
		}
	}
	if n := len(other.requests()); n != 0 {
		t.Fatalf("the redirect target received %d requests carrying signed headers", n)
	}
}

func TestBaseURLRules(t *testing.T) {
	s := testSigner(t)
	tests := []struct {
		url string
		ok  bool
	}{
		{"https://trading.robinhood.com", true},
		{"https://trading.robinhood.com/", true},
		{"http://127.0.0.1:8787", true},
		{"http://127.9.9.9", true},
		{"http://localhost:1234", true},
		{"http://[::1]:80", true},
		{"http://trading.robinhood.com", false},
		{"http://10.0.0.1", false},
		{"http://localhost.example.com", false},
		{"ftp://127.0.0.1", false},
		{"https://user:pass@trading.robinhood.com", false},
		{"https://trading.robinhood.com/api/", false},
		{"https://trading.robinhood.com?x=1", false},
		{"trading.robinhood.com", false},
		{"", false},
	}
	for _, tt := range tests {
		_, err := New(tt.url, s, Config{})
		if (err == nil) != tt.ok {
			t.Errorf("New(%q) err = %v, want ok=%v", tt.url, err, tt.ok)
		}
	}
}

func TestTargetRefusedBeforeSending(t *testing.T) {
	ctx := testContext(t)
	clock := clockwork.NewFakeClockAt(t0)
	v := newVenue(t, clock)
	c := newTestClient(t, v, newEventLog())
	for _, target := range []string{"api/v2/", "//evil.example/x", "/a b/", "/%zz/", "http://x/y"} {
		if _, err := c.Get(ctx, target); !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("Get(%q) err = %v, want ErrInvalidRequest", target, err)
		}
	}
	for _, m := range []string{"get", "", "PO ST", "POST\n", "PÖST"} {
		// A write with a method net/http would refuse is refused as
		// invalid, not reported as an unknown outcome.
		if _, err := c.Do(ctx, m, "/a/", nil); !errors.Is(err, ErrInvalidRequest) || errors.Is(err, ErrUnknownOutcome) {
			t.Errorf("method %q: err = %v, want ErrInvalidRequest", m, err)
		}
	}
	if n := len(v.requests()); n != 0 {
		t.Fatalf("%d invalid requests were sent", n)
	}
	// A comma list goes raw, signed exactly as given.
	const raw = "/api/v2/crypto/trading/estimated_price/?symbol=BTC-USD&side=both&quantity=0.1,1"
	if _, err := c.Get(ctx, raw); err != nil {
		t.Fatal(err)
	}
	if r := v.requests()[0]; r.target != raw || !r.validSig {
		t.Errorf("sent %q (valid signature %v), want %q", r.target, r.validSig, raw)
	}
}

func TestTargetOfLinks(t *testing.T) {
	c, err := New("https://trading.robinhood.com", testSigner(t), Config{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Target("https://trading.robinhood.com/api/v2/crypto/trading/orders/?cursor=abc&symbol=BTC-USD")
	if err != nil || got != "/api/v2/crypto/trading/orders/?cursor=abc&symbol=BTC-USD" {
		t.Errorf("Target = %q, %v", got, err)
	}
	for _, u := range []string{
		"https://evil.example/api/v2/crypto/trading/orders/?cursor=abc",
		"http://trading.robinhood.com/api/",
		"https://trading.robinhood.com:8443/api/",
		"https://user@trading.robinhood.com/api/",
		"/relative/",
	} {
		if _, err := c.Target(u); !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("Target(%q) err = %v, want ErrInvalidRequest", u, err)
		}
	}
}

func TestLogsNeverHoldSecrets(t *testing.T) {
	ctx := testContext(t)
	clock := clockwork.NewFakeClockAt(t0)
	v := newVenue(t, clock, status(503), status(400))
	log := newEventLog()
	c := newTestClient(t, v, log, Config{Retry: &RetryPolicy{MaxAttempts: 2}})
	body := []byte(`{"client_order_id":"131de903-5a9c-4260-abc1-28d562a5dcf0"}`)
	_, err := c.Do(ctx, "GET", "/a/", body)
	if err == nil {
		t.Fatal("want an error")
	}
	_, _ = c.Do(ctx, "POST", "/o/", body)
	lines := log.lines()
	if len(lines) != 3 {
		t.Fatalf("logged %d events, want one per attempt (3): %q", len(lines), lines)
	}
	reqs := v.requests()
	for _, line := range lines {
		for _, secret := range []string{testAPIKey, testSeed, reqs[0].signature, reqs[1].signature, "131de903"} {
			if strings.Contains(line, secret) {
				t.Fatalf("log line %q holds a secret or a body", line)
			}
		}
		for _, field := range []string{`"method"`, `"path"`, `"status"`, `"attempt"`, `"reason"`} {
			if !strings.Contains(line, field) {
				t.Errorf("log line %q lacks %s", line, field)
			}
		}
	}
	if !strings.Contains(lines[0], `"delay"`) {
		t.Errorf("a retried attempt's event lacks its delay: %s", lines[0])
	}
	for _, e := range []error{err} {
		if strings.Contains(e.Error(), reqs[0].signature) || strings.Contains(e.Error(), testAPIKey) {
			t.Fatalf("error %q holds a secret", e)
		}
	}
}

func TestZeroPolicyMakesOneAttempt(t *testing.T) {
	ctx := testContext(t)
	clock := clockwork.NewFakeClockAt(t0)
	v := newVenue(t, clock, status(503))
	c := newTestClient(t, v, newEventLog(), Config{Retry: &RetryPolicy{}})
	if _, err := c.Get(ctx, "/a/"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v", err)
	}
	if n := len(v.requests()); n != 1 {
		t.Fatalf("sent %d times", n)
	}
}

func TestConcurrentUse(t *testing.T) {
	ctx := testContext(t)
	clock := clockwork.NewFakeClockAt(t0)
	v := newVenue(t, clock)
	v.arrived = make(chan received, 1000)
	c := newTestClient(t, v, newEventLog())
	errs := make(chan error, 100)
	for i := 0; i < 100; i++ {
		go func() {
			_, err := c.Get(ctx, "/api/v2/crypto/trading/accounts/")
			errs <- err
		}()
	}
	for i := 0; i < 100; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range v.requests() {
		if !r.validSig {
			t.Fatal("a concurrent request carried a bad signature")
		}
	}
}

func TestBeforeSendSeesSigningTimeAndCanStop(t *testing.T) {
	ctx := testContext(t)
	clock := clockwork.NewFakeClockAt(t0)
	v := newVenue(t, clock, reply{status: 201, body: `{}`})
	c := newTestClient(t, v, newEventLog())
	var seen []time.Time
	if _, err := c.Send(ctx, "POST", "/o/", []byte(`{}`), func(at time.Time) error { seen = append(seen, at); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1 || itoa(seen[0].Unix()) != v.requests()[0].timestamp {
		t.Fatalf("hook saw %v; the request was signed at %s", seen, v.requests()[0].timestamp)
	}
	stop := errors.New("store unavailable")
	_, err := c.Send(ctx, "POST", "/o/", []byte(`{}`), func(time.Time) error { return stop })
	var ns *notSentError
	if !errors.As(err, &ns) || !errors.Is(err, stop) || errors.Is(err, ErrUnknownOutcome) {
		t.Fatalf("err = %v, want a notSentError wrapping the hook's error", err)
	}
	if n := len(v.requests()); n != 1 {
		t.Fatalf("a refused request was sent (%d requests)", n)
	}
}

// roundTripFunc is a RoundTripper made of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestRoundTripperResults: the client calls a round tripper itself, and
// keeps http.Client.Do's guarantees about what it returns: a response with
// no body reads as empty, one that claims bytes it does not carry is an
// error, no response and no error is an error, and a response that comes
// with an error is ignored.
func TestRoundTripperResults(t *testing.T) {
	ctx := testContext(t)
	ok := func(r *http.Request) *http.Response {
		return &http.Response{StatusCode: 200, Proto: "HTTP/1.1", Header: http.Header{}, ContentLength: -1, Request: r}
	}
	tests := []struct {
		name    string
		rt      roundTripFunc
		wantErr string
	}{
		{"nil body, no length", func(r *http.Request) (*http.Response, error) { return ok(r), nil }, ""},
		{"nil body, length 0", func(r *http.Request) (*http.Response, error) {
			resp := ok(r)
			resp.ContentLength = 0
			return resp, nil
		}, ""},
		{"nil body, length 5", func(r *http.Request) (*http.Response, error) {
			resp := ok(r)
			resp.ContentLength = 5
			return resp, nil
		}, "returned a response of 5 bytes with no body"},
		{"no response, no error", func(*http.Request) (*http.Response, error) { return nil, nil }, "returned neither a response nor an error"},
		{"response and error", func(r *http.Request) (*http.Response, error) { return ok(r), errors.New("boom") }, "boom"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New("https://venue.example", testSigner(t), Config{RoundTripper: tc.rt, RatePerMinute: -1, Retry: &RetryPolicy{}})
			if err != nil {
				t.Fatal(err)
			}
			resp, err := c.Get(ctx, "/a/")
			if tc.wantErr == "" {
				if err != nil || resp.StatusCode != 200 || len(resp.Body) != 0 {
					t.Fatalf("got %+v, %v; want an empty 200", resp, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || resp != nil {
				t.Fatalf("got %+v, %v; want no response and an error saying %q", resp, err, tc.wantErr)
			}
		})
	}
}

// TestSchemeMismatch: an https base URL answered in plain HTTP says so, as
// http.Client.Do would.
func TestSchemeMismatch(t *testing.T) {
	clock := clockwork.NewFakeClockAt(t0)
	v := newVenue(t, clock)
	c, err := New(strings.Replace(v.srv.URL, "http://", "https://", 1), testSigner(t), Config{Clock: clock, RatePerMinute: -1, Retry: &RetryPolicy{}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(testContext(t), "/a/"); !errors.Is(err, http.ErrSchemeMismatch) {
		t.Fatalf("got %v; want http.ErrSchemeMismatch", err)
	}
}
