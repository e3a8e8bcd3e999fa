package venue

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/http"
	"slices"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/shopspring/decimal"
	"go.opentelemetry.io/otel/metric"
)

// Config configures a Venue. Every zero value is a default, documented
// with its field, so Config{} is the demo venue: the real clock, seed 0,
// pages of 100, 100 requests a minute in bursts of 300, the demo account
// and API key, no faults.
type Config struct {
	// Clock is the venue's clock; nil is the real clock. For a simulation
	// test, share one Clock (NewClock) with the client.
	Clock clockwork.Clock
	// Seed seeds prices, order ids, partial fills and history.
	Seed int64
	// PageSize is how many results a page holds; 0 is 100.
	PageSize int
	// RateLimits are the account-wide bucket, the per-endpoint-class
	// buckets, their schedule and what a 429 says (see RateLimits); the
	// zero value is one account-wide bucket of 100 a minute, burst 300.
	RateLimits RateLimits
	// History pre-populates the account with that many orders over the
	// last 30 days; 0 adds none.
	History int
	// BulkOrders adds that many generated final orders over the last 30
	// days, for pagination and fee-sweep benchmarks; they cost no memory
	// per order. 0 adds none.
	BulkOrders int

	// APIKey and PrivateKey are the credentials the venue accepts: the
	// x-api-key and the Ed25519 key that signs for it. Both empty: the
	// demo credentials, which Venue.Config reports.
	APIKey     string
	PrivateKey ed25519.PrivateKey
	// AccountNumber is the account the API key trades; "" is the demo
	// account's, which Venue.Config reports.
	AccountNumber string
	// BuyingPower is the account's starting cash in USD; zero is 100000.
	BuyingPower decimal.Decimal
	// AccountStatus is the account's status as the venue reports it:
	// "" or "active"; "sell_only" (buys are refused with 400 on attr side,
	// "Account is sell only."); "deactivated" (creates are refused with
	// 403, "Account is deactivated."; reads and cancels work).
	AccountStatus string
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

	// Faults is what the venue does wrong from the start (see FaultPlan),
	// as Venue.SetFaultPlan changes it on a running venue; the zero value
	// is a well-behaved venue. Its hostile modes are in force before the
	// history is seeded, so its orders are on the venue's own clock.
	Faults FaultPlan
	// LedgerLimit, when positive, makes the Ledger keep only that many of
	// the most recent requests; its Counts and order records stay exact
	// over all of them. 0 keeps every request, as a test asserting on them
	// needs; a venue that runs for long (tradewire sim serve) sets one so
	// that its memory stays bounded.
	LedgerLimit int
	// PublicBaseURL, if set (such as "https://venue.example"), is the
	// scheme and host of pagination links; "" uses the request's own.
	PublicBaseURL string
	// StateFile, if set, starts the venue from the book saved there by
	// Venue.SaveState, if the file exists (else as usual): the accounts'
	// cash, holdings and 30-day volume, every order with its fills, and the
	// order id sequence, so that a bot restarted against the new venue
	// finds the orders it placed, still resting, filling and cancelable.
	// The seed must be the one the file was saved with; History is then
	// not seeded again (the file holds it). The ledger starts empty.
	StateFile string
	// BodyTimeout bounds how long Serve waits for a request's body, from
	// the end of its headers (the venue answers 408); 0 is 10 seconds.
	BodyTimeout time.Duration
	// MaxConcurrentStreams is the SETTINGS_MAX_CONCURRENT_STREAMS a TLS
	// Server advertises and enforces on every HTTP/2 connection: a stream
	// opened beyond it is refused with RST_STREAM(REFUSED_STREAM) before
	// the venue sees it. 0 is 100; a negative value advertises 0, so that
	// every stream is refused, as a server shedding load may advertise (a
	// client can still open one before it reads the server's SETTINGS).
	// The Ledger records each stream refused unserved (see Request.Fault).
	MaxConcurrentStreams int
	// MeterProvider, when set, is where the venue reports the other side
	// of a client's metrics: tradewire.venue.requests (by
	// tradewire.endpoint_class, "other" for a path of no class, and
	// http.response.status_code, absent for a dropped connection) and
	// tradewire.venue.throttled (its 429 answers, by endpoint class), each
	// counting what the Ledger records, and the gauge tradewire.venue.orders
	// (the orders it holds, by tradewire.order_state). Nil: no metrics.
	MeterProvider metric.MeterProvider
}

// Venue is the simulated Robinhood Crypto Trading API, v1 and v2: an
// http.Handler. All state advances lazily on requests, from its clock:
// there are no background goroutines or timers. It is safe for
// concurrent use. Create one with New.
type Venue struct {
	e   *engine
	cfg Config
}

// New returns a Venue configured by cfg. It fails, naming the field, if
// any part of cfg is invalid, or if StateFile cannot be read.
func New(cfg Config) (*Venue, error) {
	ec := engineConfig{Clock: cfg.Clock, Seed: cfg.Seed, History: cfg.History,
		BulkOrders: cfg.BulkOrders, PublicBaseURL: cfg.PublicBaseURL}
	if cfg.PageSize < 0 {
		return nil, fmt.Errorf("venue: page size %d must be positive", cfg.PageSize)
	}
	ec.PageSize = cfg.PageSize
	if cfg.LedgerLimit < 0 {
		return nil, fmt.Errorf("venue: ledger limit %d must be positive", cfg.LedgerLimit)
	}
	ec.LedgerLimit = cfg.LedgerLimit
	l := cfg.RateLimits
	l.Classes = maps.Clone(l.Classes)
	l.Schedule = slices.Clone(l.Schedule)
	switch a := l.Account; {
	case a == RateLimit{}:
	case math.IsInf(a.PerMinute, 1):
		ec.RatePerMinute = -1 // off
	default:
		if err := a.validate(); err != nil {
			return nil, fmt.Errorf("venue: rate limits: account: %w", err)
		}
		ec.RatePerMinute, ec.Burst = a.PerMinute, a.Burst
	}
	l.Account = RateLimit{}
	ec.Limits = l
	switch {
	case cfg.APIKey == "" && cfg.PrivateKey == nil:
		cfg.APIKey, cfg.PrivateKey = demoAPIKey, demoPrivateKey()
	case cfg.APIKey == "" || len(cfg.PrivateKey) != ed25519.PrivateKeySize:
		return nil, errors.New("venue: credentials need an API key and a 64-byte Ed25519 private key")
	}
	if cfg.BuyingPower.IsNegative() {
		return nil, fmt.Errorf("venue: buying power %s must be positive", cfg.BuyingPower)
	}
	switch cfg.AccountStatus {
	case "", accountActive, accountSellOnly, accountDeactivated:
	default:
		return nil, fmt.Errorf("venue: account status %q: want active, sell_only or deactivated", cfg.AccountStatus)
	}
	if cfg.ThirtyDayVolume.Valid && cfg.ThirtyDayVolume.Decimal.IsNegative() {
		return nil, fmt.Errorf("venue: 30-day volume %s is negative", cfg.ThirtyDayVolume.Decimal)
	}
	for k, q := range cfg.Holdings {
		if q.IsNegative() {
			return nil, fmt.Errorf("venue: holding of %s %s is negative", k, q)
		}
	}
	if cfg.AccountNumber == "" {
		cfg.AccountNumber = demoAccountNumber
	}
	acct := accountConfig{Number: cfg.AccountNumber, APIKey: cfg.APIKey,
		PublicKey: cfg.PrivateKey.Public().(ed25519.PublicKey), BuyingPower: cfg.BuyingPower,
		Holdings: demoHoldings(), ThirtyDayVolume: decimal.RequireFromString(demoThirtyDayVolume),
		Status: cfg.AccountStatus, ReadOnly: cfg.ReadOnly,
	}
	if cfg.Holdings != nil {
		acct.Holdings = cfg.Holdings
	}
	if cfg.ThirtyDayVolume.Valid {
		acct.ThirtyDayVolume = cfg.ThirtyDayVolume.Decimal
	}
	ec.Accounts = []accountConfig{acct}
	p := cfg.Faults
	ec.Faults = slices.Clone(p.Faults)
	if p.Mix != nil {
		m := *p.Mix
		ec.Mix = &m
	}
	ec.Duplicate = p.Duplicate
	if p.Hostile != nil {
		ec.Hostile = *p.Hostile
	}
	ec.StreamAbort = streamAbort
	e, err := newEngine(ec)
	if err != nil {
		return nil, err
	}
	if cfg.StateFile != "" {
		if err := e.loadStateFile(cfg.StateFile); err != nil {
			return nil, err
		}
	}
	if cfg.MeterProvider != nil {
		m, err := newVenueMetrics(cfg.MeterProvider, e)
		if err != nil {
			return nil, err
		}
		e.ledger.observe = m.record
	}
	cfg.Clock = e.clock
	return &Venue{e: e, cfg: cfg}, nil
}

// Config returns the venue's configuration with its defaults filled in
// where a client needs them: Clock, AccountNumber and the credentials
// (APIKey, PrivateKey) it accepts.
func (v *Venue) Config() Config {
	c := v.cfg
	c.Holdings = maps.Clone(c.Holdings)
	return c
}

// ServeHTTP serves one request of the venue's API.
func (v *Venue) ServeHTTP(w http.ResponseWriter, r *http.Request) { v.e.ServeHTTP(w, r) }

// SetFaultPlan changes what the running venue does wrong by p, from the
// next request on. p's Faults are queued after those still pending; each
// affects the next Times requests that match it (see Fault). Each other part, where p sets it, replaces the venue's: Mix the
// random fault mix (a zero Mix removes it), Duplicate what a reused
// client_order_id does (ReturnOriginal restores the default), Hostile
// every hostile mode (a zero Hostile is a well-behaved venue; a new
// ClockOffset moves the venue's now, not the seeded history). What p
// leaves unset (nil, "") is unchanged. It fails, changing nothing, if any
// part of p is invalid.
func (v *Venue) SetFaultPlan(p FaultPlan) error { return v.e.apply(p) }

// PendingFaults reports how many scripted fault activations are unused.
func (v *Venue) PendingFaults() int { return v.e.pendingFaults() }

// Ledger returns the record of requests and created orders.
func (v *Venue) Ledger() *Ledger { return v.e.ledger }

// Quote returns the venue's best bid and ask for symbol now, as
// best_bid_ask sends them: now and then crossed (bid above ask) or stale.
func (v *Venue) Quote(symbol string) (bid, ask decimal.Decimal, err error) { return v.e.quote(symbol) }
