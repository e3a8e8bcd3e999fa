package broker

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/jonboulle/clockwork"
	"github.com/rs/zerolog"

	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/orders"
	"github.com/tradewire/tradewire/signing"
	"github.com/tradewire/tradewire/transport"
)

// defaultBaseURL is the venue's base URL, used unless Config.BaseURL or
// TRADEWIRE_BASE_URL says otherwise.
const defaultBaseURL = "https://trading.robinhood.com"

// defaultPageCap is how many pages a listing reads before it fails with a
// *PageCapError, unless Config.PageCap or Paging.MaxPages says otherwise.
const defaultPageCap = 20

// Environment variables Config.Getenv reads.
const (
	envBaseURL        = "TRADEWIRE_BASE_URL"
	envAPIKey         = "TRADEWIRE_API_KEY"
	envPrivateKey     = "TRADEWIRE_PRIVATE_KEY"      // standard base64 of a 32- or 64-byte key
	envPrivateKeyFile = "TRADEWIRE_PRIVATE_KEY_FILE" // path to a key file, mode 0600
	envRedisURL       = "TRADEWIRE_REDIS_URL"
	envPostgresURL    = "TRADEWIRE_POSTGRES_URL"
)

// Client is the facade a bot or batch script uses for the venue's v2 API:
// the account, holdings, trading pairs, quotes, estimated prices, orders,
// fee summaries and order previews, and placing (Place, once per key),
// finding (OrderByKey), canceling (CancelOrder) and
// recovering (Recover) orders.
//
// A Client is safe for concurrent use by many goroutines; its Places of one
// key run one at a time, and a Place of a key that another Client sharing
// the intent store (or another process) is placing answers ErrInProgress. It caches the account number (resolved once) and
// trading pairs (per symbol, for Preview); it opens the intent store on
// the first Place or Recover, and starts no goroutines. Construct it with
// New or NewFromTransport; the zero value is not usable. Close releases
// what it opened.
type Client struct {
	tc      *transport.Client
	clock   clockwork.Clock
	log     zerolog.Logger
	pageCap int
	// fixedAccount is the account number chosen with Config.AccountNumber, or
	// empty to resolve it from the venue's accounts list.
	fixedAccount string

	acct  accountCache
	pairs pairCache
	// fleet is the shared budget New built for Config.RedisURL or
	// Config.PostgresURL, or nil.
	fleet *fleetBudget
	place placing
	// limits are Config.Limits; denials counts Place's refusals by them.
	limits  Limits
	denials atomic.Uint64
	// open is the account's open orders as last read for MaxOpenOrders.
	open openView
	// tel records the Client's metrics and spans; nil without a
	// MeterProvider or TracerProvider on the transport.
	tel *telemetry
}

// Config configures a Client built by New or NewFromTransport. The zero
// value of each field is its default; a zero Config reads no environment
// and has no credentials, so New refuses it.
type Config struct {
	// APIKey and PrivateKey are the credentials to sign with. When both
	// are zero they are read through Getenv.
	APIKey     string
	PrivateKey *signing.PrivateKey
	// Getenv, usually os.Getenv, supplies from the environment what the
	// fields leave zero: TRADEWIRE_API_KEY and one of
	// TRADEWIRE_PRIVATE_KEY (standard base64 of a 32- or 64-byte key) or
	// TRADEWIRE_PRIVATE_KEY_FILE (a key file, mode 0600) for the
	// credentials, TRADEWIRE_BASE_URL for BaseURL, TRADEWIRE_REDIS_URL
	// for RedisURL and TRADEWIRE_POSTGRES_URL for PostgresURL. Nil: New
	// reads no environment at all.
	Getenv func(string) string
	// BaseURL is the venue's base URL: https, or http on a loopback host.
	// Zero: https://trading.robinhood.com.
	BaseURL string
	// AccountNumber picks the account to act on. Zero: the account is
	// resolved from the venue's accounts list, which must then hold
	// exactly one account.
	AccountNumber string
	// PageCap is how many pages a listing may read before it fails with a
	// *PageCapError; Paging.MaxPages overrides it per call. Zero: 20.
	PageCap int
	// Logger receives the Client's and the placement engine's events and
	// the transport's one event per attempt; no event holds a key, a
	// signature or a request body. Zero: nothing is logged. (With
	// NewFromTransport the attempts are logged where the transport logs
	// them.)
	Logger zerolog.Logger
	// Transport configures the transport New builds (see package
	// transport): its Clock (the Client runs on the transport's clock, for
	// every wait, signature time and fee-summary window), RoundTripper
	// (such as a simulated venue's in-memory transport), rate limit, retry
	// policy, limiter, attempt timeout, …. Its zero Logger is replaced by
	// Logger. Zero: the transport's defaults (the real clock, the venue's
	// rate limit). With RedisURL, its RatePerMinute, Burst and Adaptive set
	// the fleet's shared budget, which replaces the transport's own bucket
	// and any Limiter; with PostgresURL, its RatePerMinute and Burst do
	// (the shared budget there does not learn: Adaptive is refused).
	Transport transport.Config
	// RedisURL makes every process that names the same Redis and account
	// share one rate budget (package redisbudget): together they never
	// spend past the venue's 100 requests a minute, and a 429 seen by any
	// of them pauses them all; with Transport.Adaptive their
	// budget learns the venue's rate per endpoint class, in Redis. New
	// connects at once: a Redis that cannot be reached is an error, never
	// a silent fallback to a private budget. Every process of the fleet
	// must give the same rate limit. AccountNumber keys the budget; when
	// it is zero, New takes it from Redis, where the first process to
	// resolve it left it, or reads the accounts list once itself. Unless
	// IntentStore or IntentStoreFile is set, intents are recorded in the
	// same Redis (package redisstore). Close the Client to release the
	// connection. Zero: no fleet.
	RedisURL string
	// PostgresURL makes every process that names the same PostgreSQL and
	// account a fleet on it, as RedisURL does on Redis: one rate budget
	// (package pgbudget) and, unless IntentStore or IntentStoreFile is
	// set, one intent store (package pgstore), so a fleet needs one
	// dependency. A postgres:// URL; several hosts with
	// target_session_attrs=read-write follow a failover. With a
	// synchronous standby the store vouches for a new key and a Place
	// costs one request; without one it says so (pgstore.GuaranteeOf) and
	// Place looks the symbol up first, as on Redis. New connects at once:
	// a server that cannot be reached is an error matching
	// ErrUnavailable. AccountNumber keys the budget; when it is zero, each
	// process reads the accounts list once, charged to the shared budget.
	// Set RedisURL or PostgresURL, not both. Zero: no fleet.
	PostgresURL string
	// IntentStore records placement intents. The Client does not close
	// it. Zero: the bolt file IntentStoreFile.
	IntentStore idempotency.Store
	// IntentStoreFile is the bolt file intents are recorded in, opened
	// (and locked against other processes) on the first Place, Recover or
	// intent lookup and closed by Close. Zero: idempotency.DefaultPath().
	// Set IntentStore or IntentStoreFile, not both.
	IntentStoreFile string
	// Limits are risk limits Place refuses an order for, and Preview
	// reports, before anything is sent: per order (symbols, notional,
	// quantity) and per account (the day's notional, open orders, counted
	// across every Client sharing the intent store). See Limits. Zero: no
	// limit.
	Limits Limits
	// Orders configures the placement engine (package orders), such as
	// Orders.Namespace ("momentum"), mixed into every client_order_id
	// derived from a key so that two strategies' keys never collide, or
	// Orders.MaxSends 1, which forbids every re-send. Its Logger is
	// replaced by Logger.
	Orders orders.Config
}

type config struct {
	apiKey   string
	key      *signing.PrivateKey
	getenv   func(string) string
	baseURL  string
	log      zerolog.Logger
	pageCap  int
	account  string
	redisURL string
	pgURL    string
	tcfg     transport.Config

	store     idempotency.Store
	storeFile string
	orders    orders.Config
	limits    Limits
}

func (c Config) internal() config {
	return config{
		apiKey: c.APIKey, key: c.PrivateKey, getenv: c.Getenv, baseURL: c.BaseURL, log: c.Logger,
		pageCap: orDefault(c.PageCap, defaultPageCap), account: c.AccountNumber, redisURL: c.RedisURL, pgURL: c.PostgresURL,
		tcfg: c.Transport, store: c.IntentStore, storeFile: c.IntentStoreFile, orders: c.Orders,
		limits: c.Limits,
	}
}

// orDefault is n, or def when n is zero.
func orDefault(n, def int) int {
	if n == 0 {
		return def
	}
	return n
}

// transportConfig returns the configuration New builds the transport
// with: Config.Transport, its zero Logger replaced by Config.Logger.
func (c *config) transportConfig() transport.Config {
	t := c.tcfg
	if reflect.ValueOf(t.Logger).IsZero() {
		t.Logger = c.log
	}
	return t
}

// New returns a Client for the venue's v2 API.
//
// Credentials come from Config.APIKey and Config.PrivateKey, else the
// environment read through Config.Getenv; the error says which source was
// missing what. Everything is validated here, before anything is sent.
func New(conf Config) (*Client, error) {
	cfg := conf.internal()
	signer, err := cfg.resolveSigner()
	if err != nil {
		return nil, err
	}
	base := cfg.baseURL
	if base == "" && cfg.getenv != nil {
		base = strings.TrimSpace(cfg.getenv(envBaseURL))
	}
	if base == "" {
		base = defaultBaseURL
	}
	if cfg.redisURL == "" && cfg.pgURL == "" && cfg.getenv != nil {
		cfg.redisURL = strings.TrimSpace(cfg.getenv(envRedisURL))
		cfg.pgURL = strings.TrimSpace(cfg.getenv(envPostgresURL))
	}
	if cfg.redisURL != "" && cfg.pgURL != "" {
		return nil, &ArgumentError{Field: "PostgresURL", Reason: "a fleet is on Redis (RedisURL) or on PostgreSQL (PostgresURL), not both"}
	}
	tcfg := cfg.transportConfig()
	// Built first even for a fleet: the transport's configuration is
	// checked before Redis is reached, and its rate limit is the fleet's.
	tc, err := transport.New(base, signer, tcfg)
	if err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	var fleet *fleetBudget
	if cfg.redisURL != "" || cfg.pgURL != "" {
		share := cfg.shareBudget
		if cfg.pgURL != "" {
			share = cfg.sharePostgres
		}
		if fleet, err = share(tc, signer); err != nil {
			return nil, err
		}
		cfg.account = fleet.account
		tcfg.Limiter = fleet.budget
		if tc, err = transport.New(base, signer, tcfg); err != nil {
			fleet.close()
			return nil, fmt.Errorf("broker: %w", err)
		}
	}
	c, err := newClient(tc, &cfg)
	if err != nil {
		fleet.close()
		return nil, err
	}
	c.fleet = fleet
	return c, nil
}

// NewFromTransport returns a Client that sends through tc, so that several
// clients can share one transport, one rate budget and one retry policy.
// The Client runs on tc's clock. The fields of Config that configure the
// transport (APIKey, PrivateKey, Getenv, BaseURL, Transport, RedisURL,
// PostgresURL) are refused: configure tc instead.
func NewFromTransport(tc *transport.Client, c Config) (*Client, error) {
	if tc == nil {
		return nil, errors.New("broker: a transport client is required")
	}
	cfg := c.internal()
	var refused []string
	if c.APIKey != "" || c.PrivateKey != nil {
		refused = append(refused, "APIKey, PrivateKey")
	}
	if c.Getenv != nil {
		refused = append(refused, "Getenv")
	}
	if c.BaseURL != "" {
		refused = append(refused, "BaseURL")
	}
	if c.RedisURL != "" {
		refused = append(refused, "RedisURL")
	}
	if c.PostgresURL != "" {
		refused = append(refused, "PostgresURL")
	}
	if !reflect.ValueOf(c.Transport).IsZero() {
		refused = append(refused, "Transport")
	}
	if len(refused) > 0 {
		return nil, fmt.Errorf("broker: NewFromTransport: Config's %s configure the transport; set them on the transport.Client instead", strings.Join(refused, ", "))
	}
	return newClient(tc, &cfg)
}

func newClient(tc *transport.Client, cfg *config) (*Client, error) {
	if cfg.pageCap < 1 {
		return nil, &ArgumentError{Field: "PageCap", Value: fmt.Sprint(cfg.pageCap), Reason: "must not be negative"}
	}
	if cfg.account != "" && !validAccountNumber(cfg.account) {
		return nil, &ArgumentError{Field: "AccountNumber", Value: cfg.account, Reason: "must be letters and digits"}
	}
	if cfg.store != nil && cfg.storeFile != "" {
		return nil, &ArgumentError{Field: "IntentStoreFile", Value: cfg.storeFile, Reason: "set IntentStore or IntentStoreFile, not both"}
	}
	if err := cfg.limits.check(); err != nil {
		return nil, err
	}
	tcfg := tc.Config()
	c := &Client{tc: tc, clock: tcfg.Clock, log: cfg.log, pageCap: cfg.pageCap, fixedAccount: cfg.account,
		tel: newTelemetry(tcfg.MeterProvider, tcfg.TracerProvider)}
	c.limits = cfg.limits
	c.limits.Symbols = slices.Clone(cfg.limits.Symbols)
	if err := c.initPlacing(cfg); err != nil {
		return nil, err
	}
	c.acct.init()
	return c, nil
}

// resolveSigner picks the credentials: explicit values, then the
// environment. Each error names the source that was missing something.
func (cfg *config) resolveSigner() (*signing.Signer, error) {
	if cfg.apiKey != "" || cfg.key != nil {
		switch {
		case cfg.apiKey == "":
			return nil, errors.New("broker: Config.APIKey is empty")
		case cfg.key == nil:
			return nil, errors.New("broker: Config.PrivateKey is nil")
		}
		s, err := signing.New(cfg.apiKey, cfg.key)
		if err != nil {
			return nil, fmt.Errorf("broker: Config.APIKey, PrivateKey: %w", err)
		}
		return s, nil
	}
	if cfg.getenv == nil {
		return nil, errors.New("broker: no credentials: set Config.APIKey and PrivateKey, or Config.Getenv (os.Getenv) to read " + envAPIKey + " and " + envPrivateKey + " or " + envPrivateKeyFile)
	}
	apiKey := strings.TrimSpace(cfg.getenv(envAPIKey))
	b64 := strings.TrimSpace(cfg.getenv(envPrivateKey))
	file := strings.TrimSpace(cfg.getenv(envPrivateKeyFile))
	var missing []string
	if apiKey == "" {
		missing = append(missing, envAPIKey+" is not set")
	}
	if b64 == "" && file == "" {
		missing = append(missing, "neither "+envPrivateKey+" nor "+envPrivateKeyFile+" is set")
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("broker: credentials from the environment: %s", strings.Join(missing, "; "))
	}
	if b64 != "" && file != "" {
		return nil, fmt.Errorf("broker: credentials from the environment: both %s and %s are set; set one", envPrivateKey, envPrivateKeyFile)
	}
	var key *signing.PrivateKey
	var err error
	if b64 != "" {
		key, err = signing.ParsePrivateKey(b64)
		if err != nil {
			return nil, fmt.Errorf("broker: %s: %w", envPrivateKey, err)
		}
	} else {
		key, err = signing.LoadPrivateKeyFile(file)
		if err != nil {
			return nil, fmt.Errorf("broker: %s: %w", envPrivateKeyFile, err)
		}
	}
	s, err := signing.New(apiKey, key)
	if err != nil {
		return nil, fmt.Errorf("broker: %s: %w", envAPIKey, err)
	}
	return s, nil
}

// Transport returns the transport client requests go through.
func (c *Client) Transport() *transport.Client { return c.tc }

// getJSON sends a GET for target and decodes the 2xx body into v.
func (c *Client) getJSON(ctx context.Context, target string, v any) error {
	resp, err := c.tc.Get(ctx, target)
	if err != nil {
		return err
	}
	return decodeBody(target, resp.Body, v)
}
