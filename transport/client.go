package transport

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/tradewire/tradewire/internal/adaptive"
	"github.com/tradewire/tradewire/signing"
)

// The defaults a zero Config field stands for.
const (
	defaultAttemptTimeout   = 10 * time.Second
	defaultMaxResponseBytes = 4 << 20
	defaultRetryBudget      = 500
)

// defaultRetryPolicy is the policy a nil Config.Retry stands for: 4
// attempts in total, waiting 0.5 s, 1 s and 2 s (doubling, capped at 8 s),
// no jitter.
func defaultRetryPolicy() RetryPolicy {
	return RetryPolicy{MaxAttempts: 4, BaseDelay: 500 * time.Millisecond, MaxDelay: 8 * time.Second}
}

// Config configures a Client. Its zero value is the venue's defaults on
// the real clock: every field's zero value is documented and safe.
type Config struct {
	// Clock timestamps signatures and times every wait and every attempt's
	// deadline. Nil means the real clock.
	Clock clockwork.Clock
	// RoundTripper is what requests go through, such as an in-memory
	// simulated venue's, or an *http.Transport of the caller's own (an
	// httptest server's Client().Transport). It is used as given, proxy
	// and all: what it, or a proxy it sends through, re-sends is the
	// caller's to vouch for. The Client calls its RoundTrip itself, for one
	// attempt at a time: nothing follows a redirect (a 3xx is an answer
	// like any other), and there is no timeout but each attempt's deadline
	// on Clock. Nil means net/http's default transport without a proxy
	// from the environment (a proxy could re-send a write).
	RoundTripper http.RoundTripper
	// RootCAs are the certificates the default transport trusts for the
	// venue's TLS, instead of the system's (such as the system's plus a
	// simulated venue's). Nil means the system's; ignored with
	// RoundTripper.
	RootCAs *x509.CertPool
	// Logger receives one event per attempt; no event holds a signature, a
	// key or a request body. The zero Logger logs nothing.
	Logger zerolog.Logger
	// Retry is the retry policy for GETs (writes are never sent again).
	// Nil means 4 attempts in total, waiting 0.5 s, 1 s and 2 s (doubling,
	// capped at 8 s), no jitter; a pointer to the zero RetryPolicy makes
	// one attempt.
	Retry *RetryPolicy
	// RatePerMinute and Burst set the client-side token bucket
	// (NewTokenBucket): RatePerMinute requests a minute sustained, bursts
	// of Burst. Zero means the venue's budget, 100 a minute and 300; a
	// negative RatePerMinute turns throttling off (429 pauses still
	// apply). With Limiter set, they are the rate that limiter is to keep
	// (package broker gives them to a fleet's shared budget).
	RatePerMinute float64
	Burst         int
	// Adaptive makes the client's own budget learn the venue's rate per
	// endpoint class: each class starts at RatePerMinute and Burst (the
	// ceiling it never exceeds), measures the venue's rate between two
	// 429s, holds under it and probes back at the ceiling every 55 s (see
	// package doc). False keeps one bucket, at the venue's documented
	// budget, for the whole account.
	Adaptive bool
	// Limiter is a rate budget shared with other clients, replacing the
	// client's own bucket; nil means the client's own.
	Limiter Limiter
	// RetryBudget is the client's retry budget, shared by all its
	// goroutines, as the AWS SDKs' retry quota: a retry after a 429 or 5xx
	// answer costs 5 tokens, one after a failure below HTTP (a timeout, a
	// reset) 10; an answer that succeeds at once gives 1 back, and a retry
	// that succeeds gives back what it cost, up to the budget. When the
	// budget cannot pay for a retry, the GET is not tried again (its error
	// says so, and matches what the last answer was), so an outage does not
	// multiply the load by the attempts. Zero means 500 (100 retries of a
	// failed answer with no success in between); negative turns it off
	// (retries are then bounded by Retry alone).
	RetryBudget int
	// AttemptTimeout bounds each attempt, from sending to the end of the
	// body: a deadline on Clock, not a wait. An AfterFunc on Clock cancels
	// the attempt's context, on every clock alike (a venue.Clock does
	// not count it as a waiter; a clockwork.FakeClock does). Zero means
	// 10 s.
	AttemptTimeout time.Duration
	// MaxResponseBytes bounds a response body; a larger body is an error.
	// Zero means 4 MiB.
	MaxResponseBytes int64
	// Observer, when set, is called once after every attempt, on the
	// goroutine that made it, before the retry decision is acted on. It
	// must not block: the request waits for it.
	Observer func(Attempt)
	// MeterProvider, when set, is where the client and what is built on
	// it (packages orders and broker) record their metrics: the duration
	// of every attempt (http.client.request.duration), resends, retries
	// and 429s by endpoint class, the time spent waiting for the rate
	// budget, the venue's clock offset (the full list: docs/metrics.md).
	// Nil: no metrics, and nothing spent on them.
	MeterProvider metric.MeterProvider
	// TracerProvider, when set, is where the client records a span per
	// request made inside a trace: a child of the span in the request's
	// context, such as broker's span per Place. A request whose context
	// carries no span makes none. Nil: no spans.
	TracerProvider trace.TracerProvider
}

// Client sends signed requests to one venue and decides, in one function,
// whether a request may be sent again. A Client is safe for concurrent use
// by many goroutines; construct it with New.
type Client struct {
	base *url.URL
	// host is base.Host as net/http sends it (an empty port dropped).
	host   string
	signer *signing.Signer
	clock  clockwork.Clock
	// rt is what every attempt is sent through, called as a RoundTripper:
	// nothing above it follows a redirect.
	rt      http.RoundTripper
	log     zerolog.Logger
	policy  RetryPolicy
	limiter Limiter
	// adaptive is limiter when it learns per endpoint class, else nil.
	adaptive       classLimiter
	retries        *retryBudget
	attemptTimeout time.Duration
	maxBody        int64
	skew           clockSkew
	observe        func(Attempt)
	// tel records metrics and spans; nil when Config has no provider.
	tel *telemetry
	// cfg is the Config the client was made with, its defaults filled in.
	cfg Config
	// plainH2 is plainHTTP2(rt): an unencrypted connection may be
	// HTTP/2's, shared by other requests.
	plainH2 bool
	// unguarded turns the replay guard off, for tests that show what it
	// stops.
	unguarded bool
}

// New returns a Client for the venue at baseURL that signs with signer.
//
// baseURL must be https, or http on a loopback host (127.0.0.0/8, ::1,
// localhost), with no path, query, fragment or user information: anything
// else is refused here, before anything is sent.
func New(baseURL string, signer *signing.Signer, cfg Config) (*Client, error) {
	base, err := checkBaseURL(baseURL)
	if err != nil {
		return nil, err
	}
	if signer == nil {
		return nil, errors.New("transport: a signer is required")
	}
	if cfg.Clock == nil {
		cfg.Clock = clockwork.NewRealClock()
	}
	if cfg.Retry == nil {
		p := defaultRetryPolicy()
		cfg.Retry = &p
	}
	cfg.RatePerMinute, cfg.Burst = adaptive.Defaults(cfg.RatePerMinute, cfg.Burst)
	if cfg.RetryBudget == 0 {
		cfg.RetryBudget = defaultRetryBudget
	}
	if cfg.AttemptTimeout == 0 {
		cfg.AttemptTimeout = defaultAttemptTimeout
	}
	if cfg.MaxResponseBytes == 0 {
		cfg.MaxResponseBytes = defaultMaxResponseBytes
	}
	perMinute := max(0, cfg.RatePerMinute) // negative: off
	if math.IsNaN(cfg.RatePerMinute) || cfg.Burst < 0 {
		return nil, fmt.Errorf("transport: rate limit %v/min, burst %d: want a number and a burst not negative", cfg.RatePerMinute, cfg.Burst)
	}
	if perMinute > 0 && cfg.Burst < 1 {
		return nil, fmt.Errorf("transport: burst %d: must be at least 1 when the rate limit is on", cfg.Burst)
	}
	if cfg.MaxResponseBytes < 0 {
		return nil, fmt.Errorf("transport: max response bytes %d: must not be negative", cfg.MaxResponseBytes)
	}
	if cfg.AttemptTimeout < 0 {
		return nil, fmt.Errorf("transport: attempt timeout %v: must not be negative", cfg.AttemptTimeout)
	}
	if cfg.Retry.MaxDelay < 0 || cfg.Retry.BaseDelay < 0 {
		return nil, errors.New("transport: retry delays must not be negative")
	}
	rt := cfg.RoundTripper
	if rt == nil {
		rt = defaultTransport(cfg.RootCAs)
	}
	limiter := cfg.Limiter
	if limiter == nil && cfg.Adaptive {
		limiter = newAdaptiveLimiter(cfg.Clock, perMinute, cfg.Burst)
	}
	if limiter == nil {
		limiter = NewTokenBucket(cfg.Clock, perMinute, cfg.Burst)
	}
	classes, _ := limiter.(classLimiter)
	c := &Client{
		base:           base,
		host:           removeEmptyPort(base.Host),
		signer:         signer,
		clock:          cfg.Clock,
		rt:             rt,
		log:            cfg.Logger,
		policy:         *cfg.Retry,
		limiter:        limiter,
		adaptive:       classes,
		retries:        newRetryBudget(max(0, cfg.RetryBudget)),
		attemptTimeout: cfg.AttemptTimeout,
		maxBody:        cfg.MaxResponseBytes,
		observe:        cfg.Observer,
		cfg:            cfg,
		plainH2:        plainHTTP2(rt),
	}
	if err := c.instrument(cfg); err != nil {
		return nil, err
	}
	return c, nil
}

// defaultTransport is net/http's default transport (HTTP/2 when the venue
// offers it, keep-alives, its timeouts) without a proxy from the
// environment: a proxy between the client and the venue could re-send a
// write, and HTTPS_PROXY is not a place to decide that silently.
// roots, when set, replaces the system's trusted roots.
func defaultTransport(roots *x509.CertPool) *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil
	tr.ForceAttemptHTTP2 = true
	if roots != nil {
		tr.TLSClientConfig = &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	}
	return tr
}

func checkBaseURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("transport: base URL %q: %v", raw, err)
	}
	switch {
	case u.User != nil:
		return nil, errors.New("transport: base URL must not carry user information")
	case u.Host == "" || u.Opaque != "":
		return nil, fmt.Errorf("transport: base URL %q: want scheme://host[:port]", raw)
	case u.Path != "" && u.Path != "/", u.RawQuery != "", u.Fragment != "":
		return nil, fmt.Errorf("transport: base URL %q: want scheme://host[:port] with no path, query or fragment", raw)
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !isLoopback(u.Hostname()) {
			return nil, fmt.Errorf("transport: base URL %q: http is allowed only for loopback hosts (127.0.0.0/8, ::1, localhost); use https", raw)
		}
	default:
		return nil, fmt.Errorf("transport: base URL %q: scheme must be https", raw)
	}
	return &url.URL{Scheme: u.Scheme, Host: u.Host}, nil
}

// removeEmptyPort drops the ":" of a host with an empty port, as net/http
// does for a request's Host.
func removeEmptyPort(host string) string {
	if strings.LastIndex(host, ":") > strings.LastIndex(host, "]") {
		return strings.TrimSuffix(host, ":")
	}
	return host
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Config returns the configuration the client runs with, every zero
// field filled in with its default (Clock, Retry, RatePerMinute, Burst,
// RetryBudget, AttemptTimeout, MaxResponseBytes): the clock it signs and
// waits with, and the rate a budget shared in its stead (package broker's
// for a fleet) is to keep.
func (c *Client) Config() Config {
	cfg := c.cfg
	p := *cfg.Retry
	cfg.Retry = &p
	return cfg
}

// Response is a 2xx answer, read whole (or, with an error, a write's 2xx
// whose body could not be read: see Do).
type Response struct {
	StatusCode int
	// Proto is the protocol the answer came over, as net/http reports it:
	// "HTTP/2.0" or "HTTP/1.1".
	Proto  string
	Header http.Header
	Body   []byte
	// Attempts is how many times the request was sent.
	Attempts int
}

// Target returns the request-target (path and query) for a URL on the
// client's base URL, such as a pagination link. A URL on another scheme or
// host is refused with ErrInvalidRequest: following it would send signed
// headers elsewhere.
func (c *Client) Target(rawURL string) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", fmt.Errorf("transport: %w: URL is not on the base URL's scheme and host: %v", ErrInvalidRequest, err)
	}
	if !strings.EqualFold(u.Scheme, c.base.Scheme) || !strings.EqualFold(u.Host, c.base.Host) || u.User != nil {
		return "", fmt.Errorf("transport: %w: URL is not on the base URL's scheme and host: %s://%s is not %s", ErrInvalidRequest, u.Scheme, u.Host, c.base)
	}
	return u.RequestURI(), nil
}

// Get sends a signed GET for target, retrying under the client's policy.
func (c *Client) Get(ctx context.Context, target string) (*Response, error) {
	return c.Do(ctx, http.MethodGet, target, nil)
}

// Do sends one signed request and returns its 2xx answer.
//
// target is the request-target — the path with its query string — exactly
// as it is to be sent and signed; it must be in the form net/http sends
// (a target that would be re-encoded is refused). body is sent byte for
// byte on every attempt.
//
// Each attempt waits for the rate budget, is signed afresh with VenueNow
// (the clock corrected by the measured venue clock offset), and is bounded
// by the attempt timeout. Only a GET is sent again, and only after 429,
// 500, 502, 503, 504 or a failure below HTTP; every other answer is final.
// A write that gets 429, 5xx or a redirect, or whose answer is lost after
// it may have been written (a timeout, a reset connection, an HTTP/2
// stream reset or GOAWAY), returns an error matching ErrUnknownOutcome and
// is never sent again, by this package or by net/http beneath it.
//
// Errors: a *StatusError for any other non-2xx answer, or an error matching
// ErrUnavailable (a GET that failed below HTTP on every attempt),
// ErrUnknownOutcome, ErrNotSent (nothing reached the venue) or
// ErrInvalidRequest, or one for a read whose body exceeded the limit
// (matching none of them), or ctx's error when ctx ends first.
//
// As with net/http's Client.Do, a non-nil *Response comes with a non-nil
// error in one case only: a write answered with a 2xx whose body could not
// be read whole (too large, or cut off). The error matches
// ErrUnknownOutcome; the Response has StatusCode, Proto, Header and
// Attempts, and no Body. The venue acted on the write; what it made is
// for a lookup to read.
func (c *Client) Do(ctx context.Context, method, target string, body []byte) (*Response, error) {
	return c.Send(ctx, method, target, body, nil)
}

// Send is Do with a hook that runs before every attempt is sent.
// beforeSend, when not nil, is called with the time the attempt is signed
// with — the client's clock corrected by the measured venue clock offset
// (VenueNow) — after it has waited for the rate budget and just before its
// first byte is sent. If it returns an error, nothing is sent and Send
// returns an error that matches ErrNotSent and wraps it. Package orders
// uses it to record, durably, the timestamp of every signature a create
// was sent with, so that it knows when none of them can still be accepted
// by the venue.
func (c *Client) Send(ctx context.Context, method, target string, body []byte, beforeSend func(signedAt time.Time) error) (*Response, error) {
	// The target is parsed once; every attempt is sent to this URL.
	u, err := checkTarget(method, target)
	if err != nil {
		return nil, err
	}
	u.Scheme, u.Host = c.base.Scheme, c.host
	if c.tel == nil {
		return c.send(ctx, method, target, u, body, beforeSend, nil)
	}
	var r request
	ctx = c.tel.start(ctx, &r, method, u.Path)
	resp, err := c.send(ctx, method, target, u, body, beforeSend, &r)
	r.end(err)
	return resp, err
}

// send is Send for a target checked and parsed into u. After every
// attempt it calls Config.Observer, and records the attempt in tel's
// telemetry when tel is not nil.
func (c *Client) send(ctx context.Context, method, target string, u *url.URL, body []byte, beforeSend func(signedAt time.Time) error, tel *request) (*Response, error) {
	path := u.Path
	// last is the previous attempt's stamp: an attempt made in a later
	// second than the one before is stamped later too, even when a new
	// clock offset would stamp it the same second, so it does not repeat
	// an earlier signature.
	var last stamp
	// spent is what the last retry took from the retry budget.
	var spent int
	for attempt := 1; ; attempt++ {
		var grantedAt time.Time
		if c.adaptive != nil {
			if err := c.adaptive.WaitFor(ctx, method, path); err != nil {
				return nil, c.notSent(method, path, attempt, err)
			}
			grantedAt = c.clock.Now()
		} else if err := c.limiter.Wait(ctx); err != nil {
			return nil, c.notSent(method, path, attempt, err)
		}
		ans, sendErr := c.attempt(ctx, method, target, u, body, beforeSend, last)
		last = ans.stamp
		if c.adaptive != nil && ans.status != 0 {
			if !ans.grantedAt.IsZero() {
				grantedAt = ans.grantedAt // the answer is to the last replay's send
			}
			c.adaptive.Answered(method, path, grantedAt, ans.status)
		}
		if sendErr != nil {
			if ns := (*notSentError)(nil); errors.As(sendErr, &ns) {
				return nil, sendErr
			}
		}
		if tel != nil {
			tel.attempt(ctx, attempt, ans.status, ans.replays, ans.elapsed, sendErr)
		}
		if c.observe != nil {
			c.observe(Attempt{Method: method, Path: path, Number: attempt, Status: ans.status, Proto: ans.proto, Replays: ans.replays, Elapsed: ans.elapsed, Err: sendErr})
		}
		status, header := ans.status, ans.header
		retry, reason := shouldRetry(ctx, method, status, sendErr)
		if retry && attempt >= c.policy.attempts() {
			retry, reason = false, "attempts exhausted"
		}

		var retryAfter time.Duration
		var hasRetryAfter bool
		if sendErr == nil && (status < 200 || status >= 300) {
			// Only a failed answer's Retry-After is read.
			retryAfter, hasRetryAfter = parseRetryAfter(header.Get("Retry-After"))
		}
		var delay time.Duration
		if retry {
			delay, reason = c.policy.backoff(attempt+1, retryAfter, hasRetryAfter)
			if dl, ok := ctx.Deadline(); ok && c.clock.Now().Add(delay).After(dl) {
				retry, reason = false, "wait would outlive the context deadline"
			}
		}
		outOfBudget := false
		if retry {
			cost := retryCost
			if sendErr != nil {
				cost = retryTimeoutCost
			}
			if c.retries.take(cost) {
				spent = cost
			} else {
				retry, reason, outOfBudget = false, "retry budget exhausted", true
			}
		} else if sendErr == nil && status >= 200 && status < 300 {
			if attempt == 1 {
				c.retries.refund(noRetryRefund)
			} else {
				c.retries.refund(spent)
			}
		}
		if status == http.StatusTooManyRequests {
			// Backoff is per request; the pause is for every caller.
			pause, _ := c.policy.backoff(attempt+1, retryAfter, hasRetryAfter)
			c.limiter.Pause(pause)
		}
		c.logAttempt(method, path, attempt, status, ans.replays, sendErr, retry, delay, reason)

		if !retry {
			resp, err := c.finish(ctx, method, path, attempt, ans, retryAfter, sendErr)
			if outOfBudget && err != nil {
				err = &retryBudgetError{err}
			}
			return resp, err
		}
		if err := adaptive.Sleep(ctx, c.clock, delay); err != nil {
			return nil, err
		}
	}
}

// answer is what one attempt read back.
type answer struct {
	status int
	proto  string
	header http.Header
	body   []byte
	// sample is the clock offset this answer's Date header showed, bounded
	// or not; hasSample is false when it had no valid Date.
	sample    time.Duration
	hasSample bool
	// applied is the clock offset the request was signed with.
	applied time.Duration
	// elapsed runs from the signature to the end of the body.
	elapsed time.Duration
	// stamp is when the attempt was signed.
	stamp stamp
	// replays counts the sends net/http made again by itself, each
	// admitted by the rate budget, the last at grantedAt.
	replays   int
	grantedAt time.Time
}

// stamp is when an attempt was signed, in Unix seconds: on the client's
// clock, and as sent in x-timestamp.
type stamp struct{ local, signed int64 }

// writeBody is a write's request body. It is deliberately not one of the
// types net/http knows how to rewind, and the request carries no GetBody,
// so no layer of net/http can send it a second time.
type writeBody struct{ *bytes.Reader }

// Close implements io.Closer.
func (writeBody) Close() error { return nil }

// newRequest builds one attempt's request for u, which it does not parse
// again or copy: u is read, never written, by net/http. A GET or HEAD is
// built as http.NewRequest builds it: net/http may re-send it on a new
// connection, which a read can afford. Every other method gets a body
// net/http cannot replay: GetBody nil, a Body that is neither nil nor
// http.NoBody even when empty (net/http's HTTP/2 client re-sends a request
// whose Body is nil or NoBody on REFUSED_STREAM, PROTOCOL_ERROR or GOAWAY,
// and one whose GetBody is set), and ContentLength set to the body's
// length. Its headers are Accept, User-Agent and, with a body,
// Content-Type; the signature's are the caller's to add.
func newRequest(ctx context.Context, method string, u *url.URL, body []byte) *http.Request {
	h := make(http.Header, 8)
	vals := requestHeaderValues[:]
	h["Accept"], h["User-Agent"] = vals[0:1:1], vals[1:2:2]
	if body != nil {
		h["Content-Type"] = vals[2:3:3]
	}
	req := http.Request{
		Method:     method,
		URL:        u,
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Header:     h,
		Host:       u.Host,
	}
	switch {
	case method != http.MethodGet && method != http.MethodHead:
		req.Body = writeBody{bytes.NewReader(body)}
		req.ContentLength = int64(len(body))
	case body == nil:
	case len(body) == 0:
		req.Body = http.NoBody
		req.GetBody = func() (io.ReadCloser, error) { return http.NoBody, nil }
	default:
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.ContentLength = int64(len(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	// req stays on the stack: WithContext's copy is the one request made.
	return req.WithContext(ctx)
}

// requestHeaderValues are the values of the headers every request
// carries; each request's slices of it are capped at their own value, and
// nothing writes to them (net/http does not write to a request's header).
//
// Accept names the one media type the client reads. The vendor's own
// samples send requests' default, */* (which no Accept at all also means),
// and its error table lists 406: a server that negotiates the media type
// may pick another for */* (a browsable HTML page, say), never for
// application/json, which every endpoint serves. The header costs about
// 0.2-0.4 % of a loopback GET (BenchmarkSignedGET/paired); it is kept for
// what it asks of the venue.
var requestHeaderValues = [...]string{"application/json", "tradewire", "application/json"}

// attemptState is what one attempt keeps, in one allocation: its
// context's cancel, and, for a GET or HEAD, its replay guard.
type attemptState struct {
	cancel context.CancelCauseFunc
	replayState
}

// attempt signs and sends one request and reads its answer. A non-nil error
// means no complete answer was read.
//
// The attempt runs under a child of ctx that the attempt timeout, an
// AfterFunc on the client's clock, cancels with errAttemptTimeout (as a
// refused replay cancels it with its own cause): one path on every clock.
func (c *Client) attempt(ctx context.Context, method, target string, u *url.URL, body []byte, beforeSend func(time.Time) error, last stamp) (answer, error) {
	now := c.clock.Now()
	st := new(attemptState)
	if guardsReplays(method) && !c.unguarded {
		ctx = st.withReplayGuard(ctx, c, method, u.Path)
	}
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	st.cancel = cancel
	st.actx = actx
	timeout := c.clock.AfterFunc(c.attemptTimeout, func() { cancel(errAttemptTimeout) })
	defer timeout.Stop()
	req := newRequest(actx, method, u, body)
	applied, _ := c.ClockOffset()
	signedAt := now.Add(applied)
	if last.local != 0 && now.Unix() > last.local && signedAt.Unix() <= last.signed {
		signedAt = signedAt.Add(time.Duration(last.signed+1-signedAt.Unix()) * time.Second)
	}
	sst := stamp{local: now.Unix(), signed: signedAt.Unix()}
	if beforeSend != nil {
		if err := beforeSend(signedAt); err != nil {
			return answer{}, &notSentError{Method: method, Path: u.Path, Err: err}
		}
	}
	c.signer.SetHeaders(req.Header, signedAt, method, target, body)

	start := c.clock.Now()
	resp, err := c.roundTrip(req)
	if err != nil {
		if st.refused != nil {
			err = st.refused
		}
		return answer{elapsed: c.clock.Now().Sub(start), stamp: sst, replays: st.replays, grantedAt: st.grantedAt}, c.attemptError(actx, err)
	}
	defer resp.Body.Close()
	received := c.clock.Now()
	ans := answer{status: resp.StatusCode, proto: resp.Proto, header: resp.Header, applied: applied, stamp: sst, replays: st.replays, grantedAt: st.grantedAt}
	data, err := readBody(resp.Body, resp.ContentLength, c.maxBody)
	ans.elapsed = c.clock.Now().Sub(start)
	// The clock is learned from the time the answer arrived, once its body
	// is read, read whole or not: net/http then returns the connection to
	// its pool while the sample is taken.
	ans.sample, ans.hasSample = c.learnClock(resp.Header, received)
	if err != nil {
		return ans, c.attemptError(actx, err)
	}
	if int64(len(data)) > c.maxBody {
		return ans, errResponseTooLarge
	}
	ans.body = data
	return ans, nil
}

// roundTrip sends one attempt's request through the client's round
// tripper, as http.Client.Do would send a request it does not redirect,
// without the work Do spends on following redirects (a copy of the
// request's headers for the next hop, and its list of hops): the client
// never follows one, so a 3xx comes back as an answer. It keeps Do's
// guarantees about a round tripper's result: a non-nil Response comes with
// a nil error and a non-nil Body, and an HTTPS request answered in plain
// HTTP says so (http.ErrSchemeMismatch). Errors are not wrapped in a
// *url.Error: the client's own errors name the method and path.
func (c *Client) roundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.rt.RoundTrip(req)
	if err != nil {
		// A response that comes with an error is ignored, as Do ignores it.
		if rh, ok := err.(tls.RecordHeaderError); ok && string(rh.RecordHeader[:]) == "HTTP/" {
			err = http.ErrSchemeMismatch
		}
		return nil, err
	}
	if resp == nil {
		return nil, fmt.Errorf("transport: round tripper %T returned neither a response nor an error", c.rt)
	}
	if resp.Body == nil {
		if resp.ContentLength > 0 && req.Method != http.MethodHead {
			return nil, fmt.Errorf("transport: round tripper %T returned a response of %d bytes with no body", c.rt, resp.ContentLength)
		}
		resp.Body = http.NoBody
	}
	return resp, nil
}

func (c *Client) finish(ctx context.Context, method, path string, attempts int, ans answer, retryAfter time.Duration, sendErr error) (*Response, error) {
	write := method != http.MethodGet && method != http.MethodHead
	status := ans.status
	switch {
	case sendErr != nil && errors.Is(sendErr, errResponseTooLarge):
		tooLarge := &responseTooLargeError{Method: method, Path: path, StatusCode: status, Limit: c.maxBody}
		if write {
			// The venue answered, perhaps with the order it made.
			return unknownWrite(method, path, attempts, ans, tooLarge)
		}
		return nil, tooLarge
	case sendErr != nil && write:
		if isDialError(sendErr) && ctxErr(ctx) == nil {
			// Nothing reached the venue.
			return nil, &notSentError{Method: method, Path: path, Err: sendErr}
		}
		return unknownWrite(method, path, attempts, ans, sendErr)
	case sendErr != nil:
		if err := ctxErr(ctx); err != nil {
			return nil, err
		}
		return nil, &networkError{Method: method, Path: path, Attempts: attempts, Err: sendErr}
	case status >= 200 && status < 300:
		return &Response{StatusCode: status, Proto: ans.proto, Header: ans.header, Body: ans.body, Attempts: attempts}, nil
	}
	serr := newStatusError(method, path, status, attempts, retryAfter, ans.body)
	if status >= 300 && status < 400 {
		serr.Body = "redirect not followed (it would carry the signed headers elsewhere)"
		serr.Errors = nil
	}
	if status == http.StatusUnauthorized {
		serr.ClockOffset = c.clockDiagnosis(ans)
		if serr.ClockOffset != 0 && ans.hasSample {
			// The venue refused the stamp, and its own Date shows by how
			// much the estimate is off: this machine's clock was stepped.
			// Sign with what the venue says from now on, rather than
			// wait for the median of older samples to follow.
			c.skew.restart(ans.sample)
		}
	}
	if write && (status == http.StatusTooManyRequests || status >= 500 || (status >= 300 && status < 400)) {
		return unknownWrite(method, path, attempts, ans, serr)
	}
	return nil, serr
}

// unknownWrite is the answer to a write whose outcome is unknown. When the
// venue's status was a 2xx (its body too large or cut off), the Response
// comes back too, without a body: the venue acted on the write.
func unknownWrite(method, path string, attempts int, ans answer, cause error) (*Response, error) {
	err := &unknownOutcomeError{Method: method, Path: path, StatusCode: ans.status, Err: cause}
	if ans.status >= 200 && ans.status < 300 {
		return &Response{StatusCode: ans.status, Proto: ans.proto, Header: ans.header, Attempts: attempts}, err
	}
	return nil, err
}

// clockDiagnosis returns the venue's clock offset — this answer's own Date
// sample, else the client's estimate — when the signature's timestamp was
// further from the venue's clock than a signature stays valid, so the
// clock explains a 401, and 0 otherwise.
func (c *Client) clockDiagnosis(ans answer) time.Duration {
	offset := ans.sample
	if !ans.hasSample {
		offset, _ = c.skew.get()
	}
	if miss := offset - ans.applied; miss > signing.ValidFor || miss < -signing.ValidFor {
		return offset
	}
	return 0
}

func (c *Client) notSent(method, path string, attempt int, err error) error {
	c.log.Debug().Str("method", method).Str("path", path).Int("attempt", attempt).Str("error", err.Error()).Msg("not sent: waiting for the rate budget ended")
	return &notSentError{Method: method, Path: path, Err: err}
}

var errAttemptTimeout = errors.New("attempt timed out")

// fakeClockHint follows an attempt timeout on a *clockwork.FakeClock. The
// per-attempt timeout is a bound on the attempt, not a wait, but a
// FakeClock counts every timer as a waiter, so the usual test idiom
// (BlockUntilContext(ctx, 1) then Advance in a loop) moves the time while
// the request is in flight and times it out.
const fakeClockHint = "on a *clockwork.FakeClock, whose BlockUntilContext counts this deadline as a waiter, " +
	"so a test advancing the clock while a request is in flight times it out; share a venue.NewClock, " +
	"whose BlockUntilContext counts waits only"

// attemptError names the attempt timeout when it is what ended err.
func (c *Client) attemptError(actx context.Context, err error) error {
	if context.Cause(actx) == errAttemptTimeout {
		if _, fake := c.clock.(*clockwork.FakeClock); fake {
			return fmt.Errorf("%w after %v (%s): %w", errAttemptTimeout, c.attemptTimeout, fakeClockHint, err)
		}
		return fmt.Errorf("%w after %v: %w", errAttemptTimeout, c.attemptTimeout, err)
	}
	return err
}

func isDialError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

func (c *Client) logAttempt(method, path string, attempt, status, replays int, err error, retry bool, delay time.Duration, reason string) {
	var ev *zerolog.Event
	switch {
	case retry:
		ev = c.log.Info()
	case err != nil || status >= 400:
		ev = c.log.Warn()
	default:
		ev = c.log.Debug()
	}
	if !ev.Enabled() {
		return // the level is off: nothing to build
	}
	ev = ev.Str("method", method).Str("path", path).Int("attempt", attempt).Int("status", status).Bool("retry", retry).Str("reason", reason)
	if retry {
		ev = ev.Dur("delay", delay)
	}
	if replays > 0 {
		ev = ev.Int("replays", replays)
	}
	if err != nil {
		ev = ev.Str("error", err.Error())
	}
	ev.Msg("attempt")
}

// checkTarget refuses, before anything is sent, a method that is not an
// upper-case token and a target that would not be sent byte for byte as
// signed. It returns the target parsed, whose RequestURI is target.
func checkTarget(method, target string) (*url.URL, error) {
	if !validMethod(method) {
		return nil, fmt.Errorf("transport: %w: method %q must be an upper-case token", ErrInvalidRequest, method)
	}
	if !strings.HasPrefix(target, "/") || strings.HasPrefix(target, "//") {
		return nil, fmt.Errorf("transport: %w: target %q must be a path starting with /", ErrInvalidRequest, target)
	}
	u, err := url.ParseRequestURI(target)
	if err != nil {
		return nil, fmt.Errorf("transport: %w: target %q: %v", ErrInvalidRequest, target, err)
	}
	if got := u.RequestURI(); got != target {
		return nil, fmt.Errorf("transport: %w: target %q would be sent as %q; escape it as sent", ErrInvalidRequest, target, got)
	}
	return u, nil
}

// validMethod reports whether method is a non-empty HTTP token (RFC 9110)
// with no lower-case letter: net/http would refuse any other, after the
// request was counted as sent.
func validMethod(method string) bool {
	if method == "" {
		return false
	}
	for i := 0; i < len(method); i++ {
		c := method[i]
		switch {
		case c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// readBody reads body whole, up to limit bytes: for a longer body it
// returns the first limit+1 bytes, with no error, for the caller to
// refuse. size is the answer's Content-Length (-1 when unknown): a body
// of known size within the limit is read into a buffer of that size and
// one byte more, to see its end, instead of io.ReadAll's 512 bytes grown
// by doubling.
func readBody(body io.Reader, size, limit int64) ([]byte, error) {
	n := int64(512)
	if size >= 0 && size <= limit {
		n = size + 1
	}
	buf := make([]byte, 0, min(n, limit+1))
	for {
		if len(buf) == cap(buf) {
			if int64(len(buf)) > limit {
				return buf, nil
			}
			buf = append(buf, 0)[:len(buf)] // grow
			if int64(cap(buf)) > limit+1 {
				buf = buf[: len(buf) : limit+1]
			}
		}
		n, err := body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}
