package cli

import (
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"reflect"
	"strconv"
	"strings"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/tradewire/tradewire/broker"
	"github.com/tradewire/tradewire/internal/adaptive"
	"github.com/tradewire/tradewire/signing"
	"github.com/tradewire/tradewire/transport"
)

// Flags and the environment variables behind them. A flag given on the
// command line wins over its variable; an empty variable counts as unset.
const (
	flagBaseURL        = "base-url"
	flagAPIKey         = "api-key"
	flagPrivateKeyFile = "private-key-file"
	flagRatePerMinute  = "rate-per-minute"
	flagBurst          = "burst"
	flagLogLevel       = "log-level"
	flagAccountNumber  = "account-number"
	flagCACert         = "ca-cert"
	flagStore          = "store"        // see place.go
	flagRedisURL       = "redis-url"    // see fleet.go
	flagPostgresURL    = "postgres-url" // see fleet.go

	envBaseURL        = "TRADEWIRE_BASE_URL"
	envAPIKey         = "TRADEWIRE_API_KEY"
	envPrivateKey     = "TRADEWIRE_PRIVATE_KEY" // base64; never a flag
	envPrivateKeyFile = "TRADEWIRE_PRIVATE_KEY_FILE"
	envRatePerMinute  = "TRADEWIRE_RATE_PER_MINUTE"
	envBurst          = "TRADEWIRE_BURST"
	envLogLevel       = "TRADEWIRE_LOG_LEVEL"
	envAccountNumber  = "TRADEWIRE_ACCOUNT_NUMBER"
	envCACert         = "TRADEWIRE_CA_CERT"
	envStore          = "TRADEWIRE_STORE"
	envRedisURL       = "TRADEWIRE_REDIS_URL"
	envPostgresURL    = "TRADEWIRE_POSTGRES_URL"

	defaultBaseURL  = "https://trading.robinhood.com"
	defaultLogLevel = "disabled"
)

// logLevels are the accepted --log-level values, quietest last.
var logLevels = []string{"trace", "debug", "info", "warn", "error", "disabled"}

// globalFlags holds the persistent flags as parsed; resolve them against
// the environment with app.setting.
type globalFlags struct {
	baseURL        string
	apiKey         string
	privateKeyFile string
	ratePerMinute  float64
	burst          int
	logLevel       string
	accountNumber  string
	caCert         string
	sim            bool   // --sim: see simflag.go
	seed           int64  // --seed: see simflag.go
	simTime        string // --sim-time: see simflag.go
	store          string // --store: see place.go
	redisURL       string // --redis-url: see fleet.go
	postgresURL    string // --postgres-url: see fleet.go
}

func (a *app) addGlobalFlags(root *cobra.Command) {
	fs := root.PersistentFlags()
	fs.StringVar(&a.flags.baseURL, flagBaseURL, defaultBaseURL, "venue base URL (env "+envBaseURL+"); https, or http on loopback only")
	fs.StringVar(&a.flags.apiKey, flagAPIKey, "", "API key (env "+envAPIKey+")")
	fs.StringVar(&a.flags.privateKeyFile, flagPrivateKeyFile, "", "file holding the Ed25519 private key, mode 0600 (env "+envPrivateKeyFile+"; or base64 in env "+envPrivateKey+")")
	fs.Float64Var(&a.flags.ratePerMinute, flagRatePerMinute, adaptive.PerMinute, "client-side requests per minute, 0 to turn the bucket off (env "+envRatePerMinute+")")
	fs.IntVar(&a.flags.burst, flagBurst, adaptive.Burst, "client-side burst (env "+envBurst+")")
	fs.StringVar(&a.flags.logLevel, flagLogLevel, defaultLogLevel, "log level on stderr: "+strings.Join(logLevels, ", ")+" (env "+envLogLevel+")")
	fs.StringVar(&a.flags.accountNumber, flagAccountNumber, "", "the account to act on, instead of reading the accounts list for it (env "+envAccountNumber+")")
	fs.StringVar(&a.flags.caCert, flagCACert, "", "PEM file of a CA to trust for the venue's TLS besides the system's, such as a simulated venue's (env "+envCACert+")")
	fs.StringVar(&a.flags.store, flagStore, "", "intent store file for order placement (env "+envStore+"; default "+defaultStoreHint+"; in memory with --sim)")
	fs.StringVar(&a.flags.redisURL, flagRedisURL, "",
		"Redis shared by a fleet of processes on one account: the rate budget and the intent store live there (env "+envRedisURL+")")
	fs.StringVar(&a.flags.postgresURL, flagPostgresURL, "",
		"PostgreSQL shared by a fleet of processes on one account, instead of Redis: the rate budget and the intent store live there; several hosts with target_session_attrs=read-write follow a failover (env "+envPostgresURL+")")
	a.addLimitFlags(fs)
}

// maxCACertFile bounds a --ca-cert file: a bundle of a few hundred CAs.
const maxCACertFile = 1 << 20

// caCertPool returns the roots (transport.Config.RootCAs) that trust
// --ca-cert's CAs besides the system's, or nil when none is given. The HTTP transport is
// net/http's default with no proxy, as package transport builds its own;
// a round tripper given later (a simulated venue's, a test's) replaces it.
func (a *app) caCertPool() (*x509.CertPool, error) {
	path, source := a.setting(flagCACert, envCACert)
	if path = strings.TrimSpace(path); path == "" {
		return nil, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, usagef("%s %s: cannot read it", source, path)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxCACertFile+1))
	switch {
	case err != nil:
		return nil, usagef("%s %s: cannot read it", source, path)
	case len(data) > maxCACertFile:
		return nil, usagef("%s %s: larger than %d bytes; not a CA certificate file", source, path, maxCACertFile)
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(data) {
		return nil, usagef("%s %s: holds no PEM \"CERTIFICATE\" block", source, path)
	}
	return pool, nil
}

// accountNumberFlag returns --account-number (or its variable), "" when
// the account is to be read from the venue's accounts list.
func (a *app) accountNumberFlag() string {
	n, _ := a.setting(flagAccountNumber, envAccountNumber)
	return strings.TrimSpace(n)
}

// setting returns the value of a flag-or-variable and where it came from:
// "--flag" when given on the command line, the variable's name when set
// in the environment, or "default".
func (a *app) setting(flag, env string) (value, source string) {
	if f := a.root.PersistentFlags().Lookup(flag); f != nil && f.Changed {
		return f.Value.String(), "--" + flag
	}
	if v := a.getenv(env); v != "" {
		return v, env
	}
	if f := a.root.PersistentFlags().Lookup(flag); f != nil {
		return f.DefValue, "default"
	}
	return "", "default"
}

func (a *app) getenv(name string) string {
	if a.opts.Getenv == nil {
		return ""
	}
	return a.opts.Getenv(name)
}

// venueConfig is everything needed to reach one venue.
type venueConfig struct {
	baseURL string
	// apiKey and key are the credentials signer signs with.
	apiKey string
	key    *signing.PrivateKey
	signer *signing.Signer
	// opts' set fields win over the CLI's own transport configuration,
	// such as a simulated venue's RoundTripper.
	opts transport.Config
}

// venue resolves the base URL and credentials from flags and the
// environment, or returns app.override when one is set (--sim sets it to
// an in-process simulated venue on first use). Every error is a
// *usageError naming the flag or variable at fault and holding no secret.
func (a *app) venue() (*venueConfig, error) {
	if err := a.checkSimFlags(false); err != nil {
		return nil, err
	}
	if a.override == nil && a.flags.sim {
		v, err := a.simVenue()
		if err != nil {
			return nil, err
		}
		a.override = v
	}
	if a.override != nil {
		return a.override, nil
	}
	baseURL, _ := a.setting(flagBaseURL, envBaseURL)

	apiKey, keySource := a.setting(flagAPIKey, envAPIKey)
	switch {
	case keySource == "default":
		return nil, usagef("%s is not set (or pass --%s)", envAPIKey, flagAPIKey)
	case apiKey == "":
		return nil, usagef("%s is empty", keySource)
	}
	key, err := a.privateKey()
	if err != nil {
		return nil, err
	}
	signer, err := signing.New(apiKey, key)
	if err != nil {
		// The only reasons left are about the API key; name its source,
		// never its value.
		return nil, usagef("%s: %s", keySource, strings.TrimPrefix(strings.TrimPrefix(err.Error(), "signing: "), "API key "))
	}
	return &venueConfig{baseURL: baseURL, apiKey: apiKey, key: key, signer: signer}, nil
}

// privateKey loads the private key from --private-key-file, or from
// TRADEWIRE_PRIVATE_KEY (base64) or TRADEWIRE_PRIVATE_KEY_FILE. The key is
// never taken from a flag's value: a command line is visible to every
// user of the machine.
func (a *app) privateKey() (*signing.PrivateKey, error) {
	file, fileSource := a.setting(flagPrivateKeyFile, envPrivateKeyFile)
	b64 := a.getenv(envPrivateKey)
	switch {
	case fileSource == "--"+flagPrivateKeyFile || (fileSource == envPrivateKeyFile && b64 == ""):
		if file == "" {
			return nil, usagef("%s is empty", fileSource)
		}
		k, err := signing.LoadPrivateKeyFile(file)
		if err != nil {
			return nil, keyError(fileSource+" "+file, err)
		}
		return k, nil
	case fileSource == envPrivateKeyFile:
		return nil, usagef("both %s and %s are set; set only one", envPrivateKey, envPrivateKeyFile)
	case b64 != "":
		k, err := signing.ParsePrivateKey(b64)
		if err != nil {
			return nil, keyError(envPrivateKey, err)
		}
		return k, nil
	default:
		return nil, usagef("no private key: set %s (base64) or %s (or pass --%s)", envPrivateKey, envPrivateKeyFile, flagPrivateKeyFile)
	}
}

// keyError names the key's source and keeps only signing's reason, which
// never holds key material.
func keyError(source string, err error) error {
	var ke *signing.KeyError
	if errors.As(err, &ke) {
		return usagef("%s: %s", source, ke.Reason)
	}
	return usagef("%s: cannot load the private key", source)
}

// rateLimit resolves --rate-per-minute and --burst.
func (a *app) rateLimit() (float64, int, error) {
	rateText, rateSource := a.setting(flagRatePerMinute, envRatePerMinute)
	rate, err := strconv.ParseFloat(strings.TrimSpace(rateText), 64)
	if err != nil || math.IsNaN(rate) || math.IsInf(rate, 0) || rate < 0 {
		return 0, 0, usagef("%s %q: want a number of requests per minute, 0 or more", rateSource, rateText)
	}
	burstText, burstSource := a.setting(flagBurst, envBurst)
	burst, err := strconv.Atoi(strings.TrimSpace(burstText))
	if err != nil || burst < 0 || (rate > 0 && burst < 1) {
		return 0, 0, usagef("%s %q: want a whole number of requests, 1 or more", burstSource, burstText)
	}
	return rate, burst, nil
}

// logger builds the logger for --log-level. Logs go to stderr: coloured
// console lines on a terminal, one JSON object a line otherwise. Every
// line passes through the same redaction as the error line.
func (a *app) logger() (zerolog.Logger, error) {
	text, source := a.setting(flagLogLevel, envLogLevel)
	name := strings.ToLower(strings.TrimSpace(text))
	ok := false
	for _, l := range logLevels {
		ok = ok || name == l
	}
	if !ok {
		return zerolog.Nop(), usagef("%s %q: want one of %s", source, text, strings.Join(logLevels, ", "))
	}
	level, err := zerolog.ParseLevel(name)
	if err != nil || level == zerolog.Disabled {
		return zerolog.Nop(), nil
	}
	var w io.Writer = &redactingWriter{w: a.opts.Stderr, secrets: a.secrets}
	if f, isFile := a.opts.Stderr.(*os.File); isFile && term.IsTerminal(int(f.Fd())) {
		w = zerolog.ConsoleWriter{Out: w}
	}
	return zerolog.New(w).Level(level).With().Timestamp().Logger(), nil
}

// transport builds a *transport.Client for the resolved venue. Nothing is
// sent here: every error is a *usageError (exit 2).
func (a *app) transport() (*transport.Client, error) { return a.transportWith() }

// brokerClient builds a *broker.Client on a transport configured exactly
// as app.transport configures one: the same venue (or --sim override),
// logger, rate limit, clock and Options.TransportConfig. extra transport
// settings (a progress bar's limiter) go over the CLI's own and under the
// venue's and the caller's. Nothing is sent here: every error is a
// *usageError (exit 2).
func (a *app) brokerClient(extra ...transport.Config) (*broker.Client, error) {
	tc, err := a.transportWith(extra...)
	if err != nil {
		return nil, err
	}
	log, err := a.logger()
	if err != nil {
		return nil, err
	}
	c, err := broker.NewFromTransport(tc, broker.Config{Logger: log, AccountNumber: a.accountNumberFlag()})
	if err != nil {
		return nil, usagef("%s", strings.Replace(err.Error(), "AccountNumber", "--"+flagAccountNumber, 1))
	}
	return c, nil
}

// transportWith is transport with extra settings over the CLI's own.
func (a *app) transportWith(extra ...transport.Config) (*transport.Client, error) {
	v, err := a.venue()
	if err != nil {
		return nil, err
	}
	log, err := a.logger()
	if err != nil {
		return nil, err
	}
	rate, burst, err := a.rateLimit()
	if err != nil {
		return nil, err
	}
	if rate == 0 {
		rate = -1 // the CLI's 0 is off
	}
	roots, err := a.caCertPool()
	if err != nil {
		return nil, err
	}
	opts := transport.Config{Logger: log, RatePerMinute: rate, Burst: burst, RootCAs: roots, Clock: a.injectedClock(),
		MeterProvider: a.meterProvider}
	for _, e := range extra {
		overlay(&opts, e)
	}
	overlay(&opts, v.opts)
	overlay(&opts, a.opts.TransportConfig)
	if f, err := a.fleet(); err != nil || f.url != "" {
		if err != nil {
			return nil, err
		}
		return a.fleetTransport(f, v, opts)
	}
	c, err := transport.New(v.baseURL, v.signer, opts)
	if err != nil {
		return nil, &usageError{msg: err.Error()}
	}
	return c, nil
}

// secrets lists the values no output may show: the API key as given by
// flag or environment, and the base64 private key. Values too short to be
// real keys are left out so that they cannot garble a message.
func (a *app) secrets() []string {
	var out []string
	for _, s := range []string{a.flags.apiKey, a.getenv(envAPIKey), a.getenv(envPrivateKey), strings.TrimSpace(a.getenv(envPrivateKey))} {
		if len(s) >= minSecretLen {
			out = append(out, s)
		}
	}
	return out
}

const minSecretLen = 8

// redactingWriter replaces secrets in everything written through it.
// zerolog writes each event in one Write call.
type redactingWriter struct {
	w       io.Writer
	secrets func() []string
}

func (r *redactingWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(r.w, redact(string(p), r.secrets())); err != nil {
		return 0, err
	}
	return len(p), nil
}

// describeFlagError adds a hint to cobra's flag errors.
func describeFlagError(err error) error {
	msg := err.Error()
	if strings.Contains(msg, "--private-key") && !strings.Contains(msg, "--private-key-file") {
		msg += fmt.Sprintf(" (the private key is never taken on the command line: set %s or %s, or pass --%s)", envPrivateKey, envPrivateKeyFile, flagPrivateKeyFile)
	}
	return &usageError{msg: msg}
}

// overlay sets on dst every field src sets (every field not zero).
func overlay(dst *transport.Config, src transport.Config) {
	d, s := reflect.ValueOf(dst).Elem(), reflect.ValueOf(src)
	for i := range s.NumField() {
		if f := s.Field(i); !f.IsZero() {
			d.Field(i).Set(f)
		}
	}
}
