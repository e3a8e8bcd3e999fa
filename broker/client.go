package broker

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"

	"github.com/jonboulle/clockwork"
	"github.com/rs/zerolog"

	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/orders"
	"github.com/tradewire/tradewire/signing"
	"github.com/tradewire/tradewire/transport"
)

// DefaultBaseURL is the venue's base URL, used unless WithBaseURL or
// TRADEWIRE_BASE_URL says otherwise.
const DefaultBaseURL = "https://trading.robinhood.com"

// DefaultPageCap is how many pages a listing reads before it fails with a
// *PageCapError, unless WithPageCap or MaxPages says otherwise.
const DefaultPageCap = 20

// Environment variables WithEnv reads.
const (
	EnvBaseURL        = "TRADEWIRE_BASE_URL"
	EnvAPIKey         = "TRADEWIRE_API_KEY"
	EnvPrivateKey     = "TRADEWIRE_PRIVATE_KEY"      // standard base64 of a 32- or 64-byte key
	EnvPrivateKeyFile = "TRADEWIRE_PRIVATE_KEY_FILE" // path to a key file, mode 0600
)

// Client is the facade a bot or batch script uses for the venue's v2 API:
// the account, holdings, trading pairs, quotes, estimated prices, orders,
// fee summaries and order previews, and placing (Place, once per key),
// finding (OrderByKey, OrderByClientOrderID), canceling (CancelOrder) and
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
	// fixedAccount is the account number chosen with WithAccountNumber, or
	// empty to resolve it from the venue's accounts list.
	fixedAccount string

	acct  accountCache
	pairs pairCache
	// fleet is the shared budget New built for WithRedisURL, or nil.
	fleet *fleetBudget
	place placing
}

// Option configures a Client built by New or NewFromTransport.
//
// The options name what a bot sets; settings of the lower packages reach
// them through one pass-through each: WithTransportConfig (package
// transport: retry policy, rate limit, limiter, attempt timeout, …) and
// WithPlacerOptions (package orders: namespace, send cap, …). They
// compose in a fixed order, whatever the order they are given in: this
// package's own options first (WithClock, WithLogger, WithRoundTripper
// for the transport; WithLogger for the placement engine), then the
// pass-through's settings (WithTransportConfig's Clock, Logger and
// RoundTripper where set; WithPlacerOptions' in the order given), so that
// a setting passed through wins for its own package. The Client itself runs on its
// transport's clock, so that WithTransportConfig(transport.Config{Clock: k})
// moves every wait and time of the Client to k, not only the transport's.
type Option func(*config)

type config struct {
	apiKey   string
	key      *signing.PrivateKey
	credsSet bool
	getenv   func(string) string
	baseURL  string
	log      *zerolog.Logger
	pageCap  int
	account  string
	redisURL string
	// own is the transport configuration this package's options set; pass
	// is WithTransportConfig's, whose Clock, Logger and RoundTripper win
	// over own's when set.
	own  transport.Config
	pass *transport.Config
	// ownNames names the options behind own, for NewFromTransport's
	// refusal.
	ownNames []string

	store      idempotency.Store
	storeFile  string
	placerOpts []orders.Option
}

// transportConfig returns the configuration New builds the transport
// with: pass, its Clock, Logger and RoundTripper taken from own where pass
// leaves them zero.
func (c *config) transportConfig() transport.Config {
	if c.pass == nil {
		return c.own
	}
	t := *c.pass
	if t.Clock == nil {
		t.Clock = c.own.Clock
	}
	if t.RoundTripper == nil {
		t.RoundTripper = c.own.RoundTripper
	}
	if reflect.ValueOf(t.Logger).IsZero() {
		t.Logger = c.own.Logger
	}
	return t
}

// WithCredentials sets the API key and private key to sign with. They win
// over the environment.
func WithCredentials(apiKey string, key *signing.PrivateKey) Option {
	return func(c *config) { c.apiKey, c.key, c.credsSet = apiKey, key, true }
}

// WithEnv reads the credentials and base URL from an environment through
// getenv (usually os.Getenv): TRADEWIRE_BASE_URL, TRADEWIRE_API_KEY, and
// one of TRADEWIRE_PRIVATE_KEY (base64) or TRADEWIRE_PRIVATE_KEY_FILE.
// Explicit options (WithCredentials, WithBaseURL) win over it. Without
// WithEnv, New reads no environment at all.
func WithEnv(getenv func(string) string) Option {
	return func(c *config) { c.getenv = getenv }
}

// WithBaseURL sets the venue's base URL (default DefaultBaseURL). It must
// be https, or http on a loopback host.
func WithBaseURL(u string) Option { return func(c *config) { c.baseURL = u } }

// WithClock sets the clock that times every wait, timestamps signatures and
// anchors fee-summary windows (default: the real clock): the transport's
// (transport.Config.Clock), which the Client runs on. A Clock passed with
// WithTransportConfig wins over it.
func WithClock(clk clockwork.Clock) Option {
	return func(c *config) { c.own.Clock = clk; c.ownNames = append(c.ownNames, "WithClock") }
}

// WithLogger sets the logger for one event per attempt and for the
// Client's and the placement engine's own events (default zerolog.Nop()).
// No event holds a key, a signature or a request body. A logger passed
// with WithTransportConfig or WithPlacerOptions wins for that package;
// with NewFromTransport the attempts are logged where tc logs them.
func WithLogger(l zerolog.Logger) Option {
	return func(c *config) {
		c.log = &l
		c.own.Logger = l // not refused by NewFromTransport: the Client logs too
	}
}

// WithTransportConfig configures the transport New builds (see package
// transport): its rate limit, retry policy, limiter, attempt timeout and
// the rest. Its Clock, Logger and RoundTripper, when set, win over those
// this package's options set; see Option. With WithRedisURL, its
// RatePerMinute, Burst and Adaptive set the fleet's shared budget, which
// replaces the transport's own bucket and any Limiter. Given twice, the
// last wins.
func WithTransportConfig(cfg transport.Config) Option {
	return func(c *config) { c.pass = &cfg }
}

// WithRoundTripper sends requests through rt, such as a simulated venue's
// in-memory transport (transport.Config.RoundTripper).
func WithRoundTripper(rt http.RoundTripper) Option {
	return func(c *config) { c.own.RoundTripper = rt; c.ownNames = append(c.ownNames, "WithRoundTripper") }
}

// WithPageCap sets how many pages a listing may read before it fails with
// a *PageCapError (default DefaultPageCap). MaxPages overrides it per call.
func WithPageCap(n int) Option { return func(c *config) { c.pageCap = n } }

// WithAccountNumber picks the account to act on. Without it the client
// resolves the account from the venue's accounts list, which must then hold
// exactly one account.
func WithAccountNumber(n string) Option { return func(c *config) { c.account = n } }

// New returns a Client for the venue's v2 API.
//
// Credentials come from WithCredentials, else the environment given with
// WithEnv; the error says which source was missing what. Everything is
// validated here, before anything is sent.
func New(opts ...Option) (*Client, error) {
	cfg := config{pageCap: DefaultPageCap}
	for _, o := range opts {
		o(&cfg)
	}
	signer, err := cfg.resolveSigner()
	if err != nil {
		return nil, err
	}
	base := cfg.baseURL
	if base == "" && cfg.getenv != nil {
		base = strings.TrimSpace(cfg.getenv(EnvBaseURL))
	}
	if base == "" {
		base = DefaultBaseURL
	}
	if cfg.redisURL == "" && cfg.getenv != nil {
		cfg.redisURL = strings.TrimSpace(cfg.getenv(EnvRedisURL))
	}
	tcfg := cfg.transportConfig()
	// Built first even for a fleet: the transport's configuration is
	// checked before Redis is reached, and its rate limit is the fleet's.
	tc, err := transport.New(base, signer, tcfg)
	if err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	var fleet *fleetBudget
	if cfg.redisURL != "" {
		if fleet, err = cfg.shareBudget(tc, signer); err != nil {
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
// The Client runs on tc's clock. Options that configure the transport
// (WithCredentials, WithEnv, WithBaseURL, WithClock, WithRoundTripper,
// WithTransportConfig, WithRedisURL) are refused: configure tc instead.
func NewFromTransport(tc *transport.Client, opts ...Option) (*Client, error) {
	if tc == nil {
		return nil, errors.New("broker: a transport client is required")
	}
	cfg := config{pageCap: DefaultPageCap}
	for _, o := range opts {
		o(&cfg)
	}
	var refused []string
	if cfg.credsSet {
		refused = append(refused, "WithCredentials")
	}
	if cfg.getenv != nil {
		refused = append(refused, "WithEnv")
	}
	if cfg.baseURL != "" {
		refused = append(refused, "WithBaseURL")
	}
	if cfg.redisURL != "" {
		refused = append(refused, "WithRedisURL")
	}
	refused = append(refused, cfg.ownNames...)
	if cfg.pass != nil {
		refused = append(refused, "WithTransportConfig")
	}
	if len(refused) > 0 {
		return nil, fmt.Errorf("broker: NewFromTransport: %s configure the transport; set them on the transport.Client instead", strings.Join(refused, ", "))
	}
	return newClient(tc, &cfg)
}

func newClient(tc *transport.Client, cfg *config) (*Client, error) {
	if cfg.pageCap < 1 {
		return nil, &ArgumentError{Field: "WithPageCap", Value: fmt.Sprint(cfg.pageCap), Reason: "must be at least 1"}
	}
	if cfg.account != "" && !validAccountNumber(cfg.account) {
		return nil, &ArgumentError{Field: "WithAccountNumber", Value: cfg.account, Reason: "must be letters and digits"}
	}
	if cfg.store != nil && cfg.storeFile != "" {
		return nil, &ArgumentError{Field: "WithIntentStoreFile", Value: cfg.storeFile, Reason: "give WithIntentStore or WithIntentStoreFile, not both"}
	}
	c := &Client{tc: tc, clock: tc.Config().Clock, log: zerolog.Nop(), pageCap: cfg.pageCap, fixedAccount: cfg.account}
	if cfg.log != nil {
		c.log = *cfg.log
	}
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
			return nil, errors.New("broker: WithCredentials: the API key is empty")
		case cfg.key == nil:
			return nil, errors.New("broker: WithCredentials: the private key is nil")
		}
		s, err := signing.New(cfg.apiKey, cfg.key)
		if err != nil {
			return nil, fmt.Errorf("broker: WithCredentials: %w", err)
		}
		return s, nil
	}
	if cfg.credsSet {
		return nil, errors.New("broker: WithCredentials was given no credentials (an empty API key and a nil key)")
	}
	if cfg.getenv == nil {
		return nil, errors.New("broker: no credentials: pass WithCredentials or WithEnv(os.Getenv) to read " + EnvAPIKey + " and " + EnvPrivateKey + " or " + EnvPrivateKeyFile)
	}
	apiKey := strings.TrimSpace(cfg.getenv(EnvAPIKey))
	b64 := strings.TrimSpace(cfg.getenv(EnvPrivateKey))
	file := strings.TrimSpace(cfg.getenv(EnvPrivateKeyFile))
	var missing []string
	if apiKey == "" {
		missing = append(missing, EnvAPIKey+" is not set")
	}
	if b64 == "" && file == "" {
		missing = append(missing, "neither "+EnvPrivateKey+" nor "+EnvPrivateKeyFile+" is set")
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("broker: credentials from the environment: %s", strings.Join(missing, "; "))
	}
	if b64 != "" && file != "" {
		return nil, fmt.Errorf("broker: credentials from the environment: both %s and %s are set; set one", EnvPrivateKey, EnvPrivateKeyFile)
	}
	var key *signing.PrivateKey
	var err error
	if b64 != "" {
		key, err = signing.ParsePrivateKey(b64)
		if err != nil {
			return nil, fmt.Errorf("broker: %s: %w", EnvPrivateKey, err)
		}
	} else {
		key, err = signing.LoadPrivateKeyFile(file)
		if err != nil {
			return nil, fmt.Errorf("broker: %s: %w", EnvPrivateKeyFile, err)
		}
	}
	s, err := signing.New(apiKey, key)
	if err != nil {
		return nil, fmt.Errorf("broker: %s: %w", EnvAPIKey, err)
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
