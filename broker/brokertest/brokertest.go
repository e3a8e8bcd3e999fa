package brokertest

import (
	"bytes"
	"crypto/ed25519"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"

	"github.com/jonboulle/clockwork"
	"github.com/shopspring/decimal"
)

// InMemoryURL is the base URL of a Server made by New: it exists only
// inside the RoundTripper returned by Transport. It is https so that a
// client insisting on https for non-loopback hosts accepts it.
const InMemoryURL = "https://venue.brokertest.invalid"

// Server is a simulated venue reachable over a loopback listener
// (NewServer, NewTLSServer) or only in memory (New). It is safe for
// concurrent use.
type Server struct {
	// URL is the base URL to point a client at, without a trailing slash.
	URL string
	// APIKey is the x-api-key the venue accepts.
	APIKey string
	// PrivateKey signs requests for APIKey.
	PrivateKey ed25519.PrivateKey
	// PrivateKeyBase64 is the base64 of PrivateKey's 32-byte seed, the form
	// TRADEWIRE_PRIVATE_KEY takes.
	PrivateKeyBase64 string
	// AccountNumber is the account APIKey trades.
	AccountNumber string
	// Clock is the venue's clock; advance it if it is a fake.
	Clock clockwork.Clock

	v   *engine
	ts  *httptest.Server
	tls *tlsFront
	rt  http.RoundTripper // what Transport returns
}

// Option configures a Server.
type Option func(*config) error

type config struct {
	cfg  engineConfig
	priv ed25519.PrivateKey
	key  string

	buyingPower decimal.Decimal
	stateFile   string // WithStateFile
	account     AccountConfig
}

// WithClock sets the venue's clock (default: the real clock). For a
// simulation test, share one Clock (NewClock) with the client.
func WithClock(c clockwork.Clock) Option {
	return func(c2 *config) error { c2.cfg.Clock = c; return nil }
}

// WithSeed sets the seed of prices, ids, partial fills and history.
func WithSeed(seed int64) Option { return func(c *config) error { c.cfg.Seed = seed; return nil } }

// WithPageSize sets how many results a page holds (default 100).
func WithPageSize(n int) Option {
	return func(c *config) error {
		if n <= 0 {
			return fmt.Errorf("brokertest: page size %d must be positive", n)
		}
		c.cfg.PageSize = n
		return nil
	}
}

// WithRateLimit sets the account-wide token bucket (default 100/min,
// burst 300), which every endpoint class without a bucket of its own
// shares (see WithRateLimits). WithRateLimit(0, 0) turns it off, as a
// negative transport.Config.RatePerMinute does the client's (which a
// broker.Client takes through broker.WithTransportConfig); a class with a
// bucket of its own keeps it.
func WithRateLimit(perMinute float64, burst int) Option {
	return func(c *config) error {
		switch {
		case perMinute == 0 && burst == 0:
			c.cfg.RatePerMinute = -1 // off, as transport.Config{RatePerMinute: -1}
			return nil
		case perMinute <= 0 || burst <= 0:
			return fmt.Errorf("brokertest: rate limit %v/min burst %d: want both positive, or both 0 to turn it off", perMinute, burst)
		}
		c.cfg.RatePerMinute, c.cfg.Burst = perMinute, burst
		return nil
	}
}

// WithRateLimits sets the venue's per-endpoint-class buckets, their
// schedule and what a 429 says in Retry-After (see RateLimits), replacing
// those of an earlier WithRateLimits. Where l sets Account, it is the
// account-wide bucket, as WithRateLimit sets it; the later of the two
// wins. New fails if l is invalid.
func WithRateLimits(l RateLimits) Option {
	l.Classes = maps.Clone(l.Classes)
	l.Schedule = slices.Clone(l.Schedule)
	return func(c *config) error {
		if l.Account != (RateLimit{}) {
			if err := l.Account.validate(); err != nil {
				return fmt.Errorf("brokertest: rate limits: account: %w", err)
			}
			c.cfg.RatePerMinute, c.cfg.Burst = l.Account.PerMinute, l.Account.Burst
		}
		c.cfg.Limits = l
		c.cfg.Limits.Account = RateLimit{}
		return nil
	}
}

// WithHistory pre-populates the account with n orders over the last 30 days.
func WithHistory(n int) Option { return func(c *config) error { c.cfg.History = n; return nil } }

// WithBulkOrders adds n generated final orders over the last 30 days, for
// pagination and fee-sweep benchmarks; they cost no memory per order.
func WithBulkOrders(n int) Option { return func(c *config) error { c.cfg.BulkOrders = n; return nil } }

// WithCredentials replaces the demo credentials with apiKey and key.
func WithCredentials(apiKey string, key ed25519.PrivateKey) Option {
	return func(c *config) error {
		if apiKey == "" || len(key) != ed25519.PrivateKeySize {
			return errors.New("brokertest: credentials need an API key and a 64-byte Ed25519 private key")
		}
		c.key, c.priv = apiKey, key
		return nil
	}
}

// WithBuyingPower sets the account's starting cash in USD (default 100000).
func WithBuyingPower(usd decimal.Decimal) Option {
	return func(c *config) error {
		if !usd.IsPositive() {
			return fmt.Errorf("brokertest: buying power %s must be positive", usd)
		}
		c.buyingPower = usd
		return nil
	}
}

// AccountConfig is the state of a Server's account and API key, for
// WithAccount. The zero value is the default account: active, with a key
// that trades, the demo holdings and a 30-day volume of 12480.55 (the
// live capture's).
type AccountConfig struct {
	// Status is the account's status as the venue reports it: "active"
	// (also for ""), "sell_only" (buys are refused with 400 on attr side,
	// "Account is sell only.") or "deactivated" (creates are refused with
	// 403, "Account is deactivated."; reads and cancels work).
	Status string
	// ReadOnly makes the API key a read-only one: every create and cancel
	// answers 403 client_error "You do not have permission to perform this
	// action.", as the venue answers a key without trade scope.
	ReadOnly bool
	// ThirtyDayVolume, if Valid, is the 30-day volume (USD) the account
	// starts with, which sets its starting fee tier; it counts for 30 days
	// from the venue's start. Fills add to it. Not Valid: 12480.55.
	ThirtyDayVolume decimal.NullDecimal
	// Holdings, if not nil, replaces the demo holdings (0.5 BTC, 4 ETH,
	// 10000 DOGE, 20 SOL): asset code to quantity. An empty map holds none.
	Holdings map[string]decimal.Decimal
}

// WithAccount sets the state of the Server's account and API key (see
// AccountConfig); the buying power stays WithBuyingPower's. New fails on
// an unknown status, a negative volume or a negative holding.
func WithAccount(a AccountConfig) Option {
	return func(c *config) error {
		switch a.Status {
		case "", accountActive, accountSellOnly, accountDeactivated:
		default:
			return fmt.Errorf("brokertest: account status %q: want active, sell_only or deactivated", a.Status)
		}
		if a.ThirtyDayVolume.Valid && a.ThirtyDayVolume.Decimal.IsNegative() {
			return fmt.Errorf("brokertest: 30-day volume %s is negative", a.ThirtyDayVolume.Decimal)
		}
		for k, q := range a.Holdings {
			if q.IsNegative() {
				return fmt.Errorf("brokertest: holding of %s %s is negative", k, q)
			}
		}
		c.account = a
		return nil
	}
}

// WithFaultPlan sets up what the venue does wrong from the start: the
// plan's faults, mix, duplicate mode and hostile modes (see FaultPlan), as
// Server.SetFaultPlan changes them on a running Server. The hostile modes
// are in force before the history is seeded, so its orders are on the
// venue's own clock. Several WithFaultPlan options apply in order: their
// faults queue one after another, and a later plan's mix, duplicate mode
// or hostile modes, where set, replace an earlier one's. New fails if any
// part of a plan is invalid.
func WithFaultPlan(p FaultPlan) Option {
	return func(c *config) error {
		c.cfg.Faults = append(c.cfg.Faults, p.Faults...)
		if p.Mix != nil {
			m := *p.Mix
			c.cfg.Mix = &m
		}
		if p.Duplicate != "" {
			c.cfg.Duplicate = p.Duplicate
		}
		if p.Hostile != nil {
			c.cfg.Hostile = *p.Hostile
		}
		return nil
	}
}

// WithLedgerLimit makes the Server's Ledger keep only the n most recent
// requests (default: every request, as a test asserting on them needs).
// Its Counts, Len and order records stay exact over all of them. A venue
// that runs for long, such as tradewire sim serve, sets one so that its
// memory stays bounded.
func WithLedgerLimit(n int) Option {
	return func(c *config) error {
		if n <= 0 {
			return fmt.Errorf("brokertest: ledger limit %d must be positive", n)
		}
		c.cfg.LedgerLimit = n
		return nil
	}
}

// WithPublicBaseURL makes pagination links use base instead of the
// request's own scheme and host.
func WithPublicBaseURL(base string) Option {
	return func(c *config) error { c.cfg.PublicBaseURL = base; return nil }
}

// New returns a Server reachable only through Transport (no sockets), at
// InMemoryURL. Use it inside testing/synctest bubbles.
func New(opts ...Option) (*Server, error) {
	c := &config{}
	for _, o := range opts {
		if err := o(c); err != nil {
			return nil, err
		}
	}
	if c.priv == nil {
		c.key, c.priv = demoAPIKey, demoPrivateKey()
	}
	acct := accountConfig{Number: demoAccountNumber, APIKey: c.key,
		PublicKey: c.priv.Public().(ed25519.PublicKey), BuyingPower: c.buyingPower,
		Holdings: demoHoldings(), ThirtyDayVolume: decimal.RequireFromString(demoThirtyDayVolume),
		Status: c.account.Status, ReadOnly: c.account.ReadOnly,
	}
	if c.account.Holdings != nil {
		acct.Holdings = c.account.Holdings
	}
	if c.account.ThirtyDayVolume.Valid {
		acct.ThirtyDayVolume = c.account.ThirtyDayVolume.Decimal
	}
	c.cfg.Accounts = []accountConfig{acct}
	c.cfg.StreamAbort = streamAbort
	v, err := newEngine(c.cfg)
	if err != nil {
		return nil, err
	}
	if c.stateFile != "" {
		if err := v.loadStateFile(c.stateFile); err != nil {
			return nil, err
		}
	}
	return &Server{URL: InMemoryURL, APIKey: c.key, PrivateKey: c.priv,
		PrivateKeyBase64: base64.StdEncoding.EncodeToString(c.priv.Seed()),
		AccountNumber:    acct.Number, Clock: v.clock, v: v, rt: roundTripper{v}}, nil
}

// NewServer starts a Server listening on a loopback address and sets URL to
// it (http://127.0.0.1:port). Like httptest.NewServer it panics if it cannot
// start, including on an invalid Option. Call Close when done.
func NewServer(opts ...Option) *Server {
	s, err := New(opts...)
	if err != nil {
		panic(err)
	}
	s.ts = httptest.NewServer(s.v)
	s.URL = s.ts.URL
	return s
}

// Close shuts down the listener, if any, blocking until requests finish.
func (s *Server) Close() {
	if s.ts != nil {
		s.ts.Close()
	}
	if s.tls != nil {
		s.tls.close()
	}
}

// Handler returns the venue as an http.Handler.
func (s *Server) Handler() http.Handler { return s.v }

// Inject queues scripted faults after those still pending; each affects
// the next Times requests that match it (see Fault). It fails, queuing
// none, if any fault is invalid. It is SetFaultPlan(FaultPlan{Faults: f}).
func (s *Server) Inject(f ...Fault) error { return s.v.inject(f...) }

// SetFaultPlan changes what the running venue does wrong by p, from the
// next request on. p's Faults are queued after those still pending, as by
// Inject. Each other part, where p sets it, replaces the venue's: Mix the
// random fault mix (a zero Mix removes it), Duplicate what a reused
// client_order_id does (ReturnOriginal restores the default), Hostile
// every hostile mode (a zero Hostile is a well-behaved venue; a new
// ClockOffset moves the venue's now, not the seeded history). What p
// leaves unset (nil, "") is unchanged. It fails, changing nothing, if any
// part of p is invalid.
func (s *Server) SetFaultPlan(p FaultPlan) error { return s.v.apply(p) }

// PendingFaults reports how many scripted fault activations are unused.
func (s *Server) PendingFaults() int { return s.v.pendingFaults() }

// Ledger returns the record of requests and created orders.
func (s *Server) Ledger() *Ledger { return s.v.ledger }

// Quote returns the venue's best bid and ask for symbol now, as
// best_bid_ask sends them: now and then crossed (bid above ask) or stale.
func (s *Server) Quote(symbol string) (bid, ask decimal.Decimal, err error) { return s.v.quote(symbol) }

// Transport returns the http.RoundTripper that reaches the venue. For a
// Server made by New or NewServer it serves requests in memory, without
// sockets, whatever the request's host; a dropped-connection fault returns
// io.ErrUnexpectedEOF. For a NewTLSServer it speaks TLS + HTTP/2 to the
// listener and trusts only the server's certificate. It is safe for
// concurrent use; use it as broker.WithRoundTripper(srv.Transport()) or
// &http.Client{Transport: srv.Transport()}.
func (s *Server) Transport() http.RoundTripper { return s.rt }

type roundTripper struct{ h http.Handler }

func (rt roundTripper) RoundTrip(req *http.Request) (resp *http.Response, err error) {
	var body []byte
	if req.Body != nil {
		body, err = io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
	}
	// The venue reads the request and never changes it: a shallow copy
	// holds the fields the server side sets without cloning the headers.
	in := req.WithContext(req.Context())
	in.Body = io.NopCloser(bytes.NewReader(body))
	in.ContentLength = int64(len(body))
	in.RequestURI = req.URL.RequestURI()
	if in.Host == "" {
		in.Host = req.URL.Host
	}
	if req.URL.Scheme == "https" {
		in.TLS = &tls.ConnectionState{HandshakeComplete: true}
	}
	in.RemoteAddr = "192.0.2.1:1234"
	w := &memResponse{header: http.Header{}}
	dropped := false
	func() {
		defer func() {
			if p := recover(); p != nil {
				if p != http.ErrAbortHandler {
					panic(p)
				}
				dropped = true
			}
		}()
		rt.h.ServeHTTP(w, in)
	}()
	if dropped {
		return nil, io.ErrUnexpectedEOF
	}
	if err := req.Context().Err(); err != nil {
		return nil, err
	}
	resp = w.result()
	resp.Request = req
	return resp, nil
}

// memResponse is the in-memory ResponseWriter: httptest.ResponseRecorder's
// answer (the headers as of WriteHeader, a body sniffed for its
// Content-Type when it has none), without its copies.
type memResponse struct {
	header, sent http.Header // sent: the headers as of WriteHeader
	status       int
	body         bytes.Buffer
}

func (m *memResponse) Header() http.Header { return m.header }

func (m *memResponse) WriteHeader(code int) {
	if m.sent != nil {
		return
	}
	m.status, m.sent = code, m.header
	m.header = http.Header{} // later changes are not sent, as on a real server
}

func (m *memResponse) Write(b []byte) (int, error) {
	if m.sent == nil {
		if _, ok := m.header["Content-Type"]; !ok && m.header.Get("Transfer-Encoding") == "" {
			m.header.Set("Content-Type", http.DetectContentType(b))
		}
		m.WriteHeader(http.StatusOK)
	}
	return m.body.Write(b)
}

func (m *memResponse) result() *http.Response {
	m.WriteHeader(http.StatusOK) // a handler that wrote nothing answered 200
	resp := &http.Response{
		Status: strconv.Itoa(m.status) + " " + http.StatusText(m.status), StatusCode: m.status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: m.sent,
		Body: io.NopCloser(bytes.NewReader(m.body.Bytes())), ContentLength: -1,
	}
	if cl := m.sent.Get("Content-Length"); cl != "" {
		if n, err := strconv.ParseInt(cl, 10, 64); err == nil && n >= 0 {
			resp.ContentLength = n
		}
	}
	return resp
}
