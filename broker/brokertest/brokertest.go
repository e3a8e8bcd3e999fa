package brokertest

import (
	"bytes"
	"crypto/ed25519"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/shopspring/decimal"
	"github.com/tradewire/tradewire/internal/venue"
)

// InMemoryURL is the base URL of a Server made by New: it exists only
// inside the RoundTripper returned by Transport. It is https so that a
// client insisting on https for non-loopback hosts accepts it.
const InMemoryURL = "https://venue.brokertest.invalid"

// Server is a simulated venue reachable over a loopback listener
// (NewServer) or only in memory (New). It is safe for concurrent use.
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

	v      *venue.Venue
	ledger *Ledger
	ts     *httptest.Server
	tls    *tlsFront
	client *http.Client // the TLS client, for NewTLSServer
}

// Option configures a Server.
type Option func(*config) error

type config struct {
	cfg  venue.Config
	priv ed25519.PrivateKey
	key  string
	plan *FaultPlan

	buyingPower decimal.Decimal
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

// WithRateLimit sets the per-account token bucket (default 100/min, burst
// 300). WithRateLimit(0, 0) turns rate limiting off, as it does for
// transport.WithRateLimit (which a broker.Client takes through
// broker.WithTransportOptions).
func WithRateLimit(perMinute float64, burst int) Option {
	return func(c *config) error {
		switch {
		case perMinute == 0 && burst == 0:
			c.cfg.RatePerMinute = -1 // off, as transport.WithRateLimit(0, 0)
			return nil
		case perMinute <= 0 || burst <= 0:
			return fmt.Errorf("brokertest: rate limit %v/min burst %d: want both positive, or both 0 to turn it off", perMinute, burst)
		}
		c.cfg.RatePerMinute, c.cfg.Burst = perMinute, burst
		return nil
	}
}

// WithRetryAfter makes 429 answers carry a delta-seconds Retry-After (the
// real venue has never been seen to send one).
func WithRetryAfter(on bool) Option {
	return func(c *config) error { c.cfg.RetryAfter = on; return nil }
}

// WithHistory pre-populates the account with n orders over the last 30 days.
func WithHistory(n int) Option { return func(c *config) error { c.cfg.History = n; return nil } }

// WithBulkOrders adds n generated final orders over the last 30 days, for
// pagination and fee-sweep benchmarks; they cost no memory per order.
func WithBulkOrders(n int) Option { return func(c *config) error { c.cfg.BulkOrders = n; return nil } }

// WithDuplicateMode selects what a reused client_order_id does.
func WithDuplicateMode(m DuplicateMode) Option {
	return func(c *config) error { c.cfg.Duplicate = venue.DuplicateMode(m); return nil }
}

// WithFaults injects faults from the start.
func WithFaults(f ...Fault) Option {
	return func(c *config) error { c.cfg.Faults = append(c.cfg.Faults, venueFaults(f)...); return nil }
}

// WithMix installs a probabilistic fault mix.
func WithMix(m Mix) Option {
	return func(c *config) error { vm := venue.Mix(m); c.cfg.Mix = &vm; return nil }
}

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

// WithFaultPlan installs a fault plan read by LoadFaultPlan or ParseFaultPlan.
func WithFaultPlan(p FaultPlan) Option { return func(c *config) error { c.plan = &p; return nil } }

// WithClockOffset sets the venue's clock offset: its own notion of now is
// its clock plus d (negative: the venue is behind). It governs the
// signature window, the timestamps it writes and its Date header.
func WithClockOffset(d time.Duration) Option {
	return func(c *config) error { c.cfg.Hostile.ClockOffset = d; return nil }
}

// WithListLag hides orders created less than d ago (on the venue's clock)
// from the orders list; GET .../orders/{id}/ shows them at once.
func WithListLag(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 {
			return fmt.Errorf("brokertest: list lag %v is negative", d)
		}
		c.cfg.Hostile.ListLag = d
		return nil
	}
}

// WithOmittedClientOrderIDs drops client_order_id from the orders-list
// rows of that fraction of the orders (1: every row).
func WithOmittedClientOrderIDs(fraction float64) Option {
	return func(c *config) error {
		if !(fraction >= 0 && fraction <= 1) {
			return fmt.Errorf("brokertest: omitted fraction %v is outside [0, 1]", fraction)
		}
		c.cfg.Hostile.OmitClientOrderID = fraction
		return nil
	}
}

// WithDroppedNext nulls the "next" link of that fraction of the
// orders-list pages that should have one (1: every such page).
func WithDroppedNext(fraction float64) Option {
	return func(c *config) error {
		if !(fraction >= 0 && fraction <= 1) {
			return fmt.Errorf("brokertest: dropped-next fraction %v is outside [0, 1]", fraction)
		}
		c.cfg.Hostile.DropNext = fraction
		return nil
	}
}

// WithHostile sets every hostile mode at once.
func WithHostile(h Hostile) Option {
	return func(c *config) error { c.cfg.Hostile = venue.Hostile(h); return nil }
}

// WithPublicBaseURL makes pagination links use base instead of the
// request's own scheme and host.
func WithPublicBaseURL(base string) Option {
	return func(c *config) error { c.cfg.PublicBaseURL = base; return nil }
}

// LoadFaultPlan reads and validates a JSON fault plan file.
func LoadFaultPlan(path string) (FaultPlan, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return FaultPlan{}, fmt.Errorf("brokertest: %w", err)
	}
	return ParseFaultPlan(b)
}

// ParseFaultPlan decodes and validates a JSON fault plan.
func ParseFaultPlan(data []byte) (FaultPlan, error) {
	p, err := venue.ParseFaultPlan(data)
	if err != nil {
		return FaultPlan{}, err
	}
	return planFromVenue(p), nil
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
		c.key, c.priv = venue.DemoAPIKey, venue.DemoPrivateKey()
	}
	acct := venue.Account{Number: venue.DemoAccountNumber, APIKey: c.key,
		PublicKey: c.priv.Public().(ed25519.PublicKey), BuyingPower: c.buyingPower,
		Holdings: map[string]decimal.Decimal{
			"BTC": decimal.RequireFromString("0.5"), "ETH": decimal.RequireFromString("4"),
			"DOGE": decimal.RequireFromString("10000"), "SOL": decimal.RequireFromString("20"),
		},
		ThirtyDayVolume: decimal.RequireFromString("12480.55"),
	}
	c.cfg.Accounts = []venue.Account{acct}
	c.cfg.StreamAbort = streamAbort
	var plan *venue.FaultPlan
	if c.plan != nil {
		p := c.plan.venue()
		if p.Hostile != nil {
			// Set at construction, so the seeded history is on the venue's clock.
			c.cfg.Hostile = *p.Hostile
			p.Hostile = nil
		}
		plan = &p
	}
	v, err := venue.New(c.cfg)
	if err != nil {
		return nil, fmt.Errorf("brokertest: %w", err)
	}
	if plan != nil {
		if err := v.Apply(*plan); err != nil {
			return nil, fmt.Errorf("brokertest: %w", err)
		}
	}
	return &Server{URL: InMemoryURL, APIKey: c.key, PrivateKey: c.priv,
		PrivateKeyBase64: base64.StdEncoding.EncodeToString(c.priv.Seed()),
		AccountNumber:    acct.Number, Clock: v.Clock(), v: v, ledger: &Ledger{l: v.Ledger()}}, nil
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

// Inject adds scripted faults; see Fault.
func (s *Server) Inject(f ...Fault) error { return s.v.Inject(venueFaults(f)...) }

// SetMix installs a probabilistic fault mix; the zero Mix removes it.
func (s *Server) SetMix(m Mix) error { return s.v.SetMix(venue.Mix(m)) }

// SetHostile replaces the venue's hostile modes.
func (s *Server) SetHostile(h Hostile) error { return s.v.SetHostile(venue.Hostile(h)) }

// SetDuplicateMode changes what a reused client_order_id does.
func (s *Server) SetDuplicateMode(m DuplicateMode) error {
	return s.v.SetDuplicateMode(venue.DuplicateMode(m))
}

// PendingFaults reports how many scripted fault activations are unused.
func (s *Server) PendingFaults() int { return s.v.PendingFaults() }

// Ledger returns the record of requests and created orders.
func (s *Server) Ledger() *Ledger { return s.ledger }

// Quote returns the venue's bid and ask for symbol now.
func (s *Server) Quote(symbol string) (bid, ask decimal.Decimal, err error) { return s.v.Quote(symbol) }

// Client returns an *http.Client with redirects not followed, so a test
// sees a redirect fault as the client would. For a NewTLSServer it speaks
// TLS + HTTP/2 to the listener and trusts only the server's certificate;
// otherwise it uses Transport.
func (s *Server) Client() *http.Client {
	if s.client != nil {
		c := *s.client
		c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		return &c
	}
	return &http.Client{Transport: s.Transport(),
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// Transport returns an http.RoundTripper that serves requests to the venue
// in memory, without sockets, whatever the request's host. A dropped
// connection fault returns io.ErrUnexpectedEOF. It is safe for concurrent use.
func (s *Server) Transport() http.RoundTripper { return roundTripper{s.v} }

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
	in := req.Clone(req.Context())
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
	rec := httptest.NewRecorder()
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
		rt.h.ServeHTTP(rec, in)
	}()
	if dropped {
		return nil, io.ErrUnexpectedEOF
	}
	if err := req.Context().Err(); err != nil {
		return nil, err
	}
	resp = rec.Result()
	resp.Request = req
	return resp, nil
}
