package cli

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/spf13/cobra"

	"github.com/tradewire/tradewire/venue"
)

const (
	defaultSimAddr = "127.0.0.1:8787"
	// simBodyTimeout bounds how long a client may take to send a request's
	// body, from its headers' end (venue.Config.BodyTimeout's default), so
	// that a slow or stuck client cannot pin the server.
	simBodyTimeout = 10 * time.Second
)

func newSimCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "Run tradewire's simulated venue",
		Long: `Run tradewire's simulated venue: a deterministic, fault-injecting stand-in for
the Robinhood Crypto Trading API, v1 and v2 (one venue under both paths, in each
version's shapes), that checks every signature as the real one does. It accepts
only its own published demo credentials.

To run a single command against an in-process simulated venue instead, pass
the global --sim flag (tradewire --sim api GET /api/v2/crypto/trading/accounts/).`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newSimServeCmd(a))
	return cmd
}

// simLedgerLimit is how many recent requests "sim serve" keeps in its
// venue's ledger (venue.Config.LedgerLimit), so that a venue left running
// for days holds bounded memory for them.
const simLedgerLimit = 10_000

// simServeFlags are the flags of "sim serve".
type simServeFlags struct {
	addr     string
	seed     int64
	pageSize int
	history  int
	faults   string
	limits   string // --rate-limits FILE
	retryAft string // --retry-after MODE; "" leaves the file's
	tls      bool
	caFile   string
	state    string
	status   string        // --account-status
	readOnly bool          // --read-only-key
	external time.Duration // --external-every; 0: none
	metrics  string        // --metrics-addr; "": none
}

func newSimServeCmd(a *app) *cobra.Command {
	var f simServeFlags
	cmd := &cobra.Command{
		Use:   "serve [--addr 127.0.0.1:8787] [--seed N] [--page-size N] [--faults FILE] [--rate-limits FILE] [--retry-after MODE] [--account-status S] [--read-only-key] [--external-every D] [--state FILE] [--metrics-addr HOST:PORT] [--tls [--ca-file FILE]]",
		Short: "Serve the simulated venue over HTTP, or HTTPS + HTTP/2, on a loopback address",
		Long: `Serve the simulated venue over HTTP on a loopback address until interrupted;
with --tls, over HTTPS with HTTP/2, as the real venue is served.

It first prints, on stdout, a comment line and three lines a shell can eval:

  # simulated venue demo credentials (throwaway: only this simulator accepts them)
  export TRADEWIRE_BASE_URL='http://127.0.0.1:8787'
  export TRADEWIRE_API_KEY='rh-api-…'
  export TRADEWIRE_PRIVATE_KEY='…'

The private key printed is the simulator's published demo key, not a secret:
the real venue has never heard of it. The account starts with cash, holdings
and a seeded history of orders over the past 30 days.

--addr must be on a loopback host (127.0.0.1, ::1, localhost); port 0 picks a
free port. --faults FILE installs a JSON fault plan (scripted 5xx, 429, lost
answers, latency, 2xx answers with a bad body, HTTP/2 stream faults, and the
hostile modes: a clock offset, a lagging orders list, rows without
client_order_id, pages without next; see
"go doc github.com/tradewire/tradewire/venue").
--external-every DURATION places an order in the account every DURATION as
another tool would, with a client_order_id of its own: a $20 BTC-USD limit
order at the bid (a buy) or the ask (a sell), in turn, which rests and fills
in parts as the market moves; each is reported on stderr. A bot's watch
should see them, flagged as orders it did not place.
--account-status sell_only or deactivated, and --read-only-key, give the
account the state a bot must cope with: buys refused (400), creates refused
(403), or every create and cancel refused (403) while reads work.

By default every endpoint draws on one token bucket per account, 100 a
minute in bursts of 300, the vendor's documented budget, and a 429 carries
no Retry-After, as the real venue's do not. The vendor also says its limits
are "applied per endpoint" and "fluctuate": --rate-limits FILE models that,
with a JSON file that gives endpoint classes (market_data, account_reads,
order_reads, order_writes; v1 and v2 paths alike) buckets of their own and a
schedule that lowers and restores them on the venue's clock:

  {"account": {"per_minute": 100, "burst": 300},
   "classes": {"order_writes": {"per_minute": 100, "burst": 300}},
   "schedule": [{"at": "10m", "class": "order_writes", "per_minute": 20, "burst": 20},
                {"at": "20m", "class": "order_writes", "per_minute": 100, "burst": 300}],
   "retry_after": "bucket"}

"at" is a Go duration after the venue starts; a step without "class" changes
the account-wide bucket. --retry-after sets what a 429 from a bucket says in
Retry-After, over the file's retry_after: off (none), bucket (the whole
seconds until the bucket holds a token again) or whole seconds such as 5s.

--tls serves HTTPS, as the real venue is served: HTTP/2 to a client that
offers h2, HTTP/1.1 to one that does not (curl --http1.1, Python's requests),
with a fresh server certificate for 127.0.0.1, ::1 and localhost signed by a
fresh certificate authority (CA). It writes the CA's certificate (PEM) to
--ca-file (by default a new file in the temporary directory, removed at
exit), and prints a fourth line, export SSL_CERT_FILE='…', which makes Go
programs (tradewire included), curl and OpenSSL trust it; rustls-based
clients (reqwest, Deno) take the same file as a root. SSL_CERT_FILE replaces the system's roots for those
programs: set it only for commands aimed at the simulator. Only over --tls do
the HTTP/2 stream faults (refused_stream, protocol_error, goaway) end the
stream with that frame after the commit; over HTTP/1.1 they drop the connection.

A request is judged on its headers before its body is read: one refused
on them (a signature header missing, an unknown key, a stale timestamp) is
answered without its body being read. A body over 64 KiB answers 413. A
client has 10 s to send its headers and 10 s more for its body (else 408,
and the connection closes), and a connection idle for 2 minutes is closed.

--metrics-addr HOST:PORT serves the venue's side as Prometheus text at
http://HOST:PORT/metrics: tradewire_venue_requests_total (by endpoint class
and status), tradewire_venue_throttled_total (its 429s) and
tradewire_venue_orders (by state); see docs/metrics.md.

Interrupt (Ctrl-C) stops it gracefully and exits 0.`,
		Example: `  tradewire sim serve --addr 127.0.0.1:0 > sim.env & server=$!
  while ! grep -qs TRADEWIRE_PRIVATE_KEY sim.env && kill -0 $server; do sleep 0.1; done
  . ./sim.env && tradewire api GET /api/v2/crypto/trading/accounts/
  tradewire sim serve --addr 127.0.0.1:0 --seed 7 --faults storm.json
  tradewire sim serve --rate-limits fluctuating.json --retry-after bucket
  tradewire sim serve --tls --addr 127.0.0.1:0 > sim.env &   # sim.env exports SSL_CERT_FILE too`,
		Args: noArgs,
		RunE: a.run(func(cmd *cobra.Command, _ []string) error {
			if err := a.checkSimFlags(true); err != nil {
				return err
			}
			f.seed = a.flags.seed
			return a.simServe(cmd.Context(), f)
		}),
	}
	fs := cmd.Flags()
	fs.StringVar(&f.addr, "addr", defaultSimAddr, "loopback host:port to listen on (port 0 picks a free one)")
	fs.IntVar(&f.pageSize, "page-size", 100, "results per page of a list")
	fs.IntVar(&f.history, "history", simHistory, "orders to seed over the past 30 days")
	fs.StringVar(&f.faults, "faults", "", "JSON fault plan file to install")
	fs.StringVar(&f.limits, "rate-limits", "", "JSON file of per-endpoint-class rate limits and their schedule")
	fs.StringVar(&f.retryAft, "retry-after", "", "what a 429 says in Retry-After: off, bucket or whole seconds such as 5s (default: the --rate-limits file's, else off)")
	fs.BoolVar(&f.tls, "tls", false, "serve HTTPS + HTTP/2 with a certificate signed by a fresh CA, whose certificate is written to --ca-file")
	fs.StringVar(&f.caFile, "ca-file", "", "with --tls, where to write the CA certificate clients must trust (default: a new temporary file)")
	fs.StringVar(&f.status, "account-status", "active", "the account's status: active, sell_only (buys refused with 400) or deactivated (creates refused with 403)")
	fs.BoolVar(&f.readOnly, "read-only-key", false, "make the API key read-only: every create and cancel answers 403")
	fs.DurationVar(&f.external, "external-every", 0, "place an order in the account every DURATION as another tool would (a client_order_id of its own): a $20 BTC-USD limit at the bid or ask, buy and sell in turn; 0 places none")
	addMetricsFlag(cmd, &f.metrics)
	fs.StringVar(&f.state, "state", "", "keep the venue's book (balances, orders, ids) in this file across restarts: loaded at start if it exists, saved every "+simStateEvery.String()+" and at stop")
	return cmd
}

// simServe runs "sim serve": it checks the flags, listens, prints the
// export lines and serves until ctx ends.
func (a *app) simServe(ctx context.Context, f simServeFlags) error {
	a.opts.Stderr = &syncWriter{w: a.opts.Stderr} // the goroutines below write to it too
	if err := checkLoopbackAddr(f.addr); err != nil {
		return err
	}
	if f.pageSize <= 0 {
		return usagef("--page-size %d: want 1 or more", f.pageSize)
	}
	if f.history < 0 {
		return usagef("--history %d: want 0 or more", f.history)
	}
	if f.external < 0 {
		return usagef("--external-every %v: want 0 (none) or a positive duration", f.external)
	}
	if f.caFile != "" && !f.tls {
		return usagef("--ca-file without --tls: only the HTTPS simulator has a certificate")
	}
	if f.metrics != "" {
		if err := checkMetricsAddr(f.metrics); err != nil {
			return err
		}
	}
	clk := a.opts.Clock
	if clk == nil {
		clk = clockwork.NewRealClock()
	}
	cfg := venue.Config{Clock: clk, Seed: f.seed, PageSize: f.pageSize, History: f.history,
		// A venue left running keeps a bounded ledger: its counts stay exact.
		LedgerLimit: simLedgerLimit, StateFile: f.state}
	if f.faults != "" {
		b, err := os.ReadFile(f.faults)
		if err != nil {
			return usagef("--faults %s: %v", f.faults, err)
		}
		plan, err := venue.ParseFaultPlan(b)
		if err != nil {
			return usagef("--faults %s: %s", f.faults, strings.TrimPrefix(err.Error(), "venue: "))
		}
		cfg.Faults = plan
	}
	limits, err := simRateLimits(f)
	if err != nil {
		return err
	}
	cfg.RateLimits = limits
	if f.status != "active" || f.readOnly {
		cfg.AccountStatus, cfg.ReadOnly = f.status, f.readOnly
	}
	// The global --seed (simflag.go) seeds prices, ids, partial fills and
	// history. Build the venue once before listening, so that a bad setting is a
	// usage error with no socket opened.
	if _, err := venue.New(cfg); err != nil {
		return usagef("sim serve: %s", strings.TrimPrefix(err.Error(), "venue: "))
	}

	if f.metrics != "" {
		m, err := a.startMetrics(ctx, "sim serve", f.metrics)
		if err != nil {
			return err
		}
		defer m.stop()
		cfg.MeterProvider = m.provider
	}

	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", f.addr)
	if err != nil {
		return fmt.Errorf("sim serve: cannot listen on %s: %w", f.addr, err)
	}
	base := "http://" + ln.Addr().String()
	if f.tls {
		base = "https://" + ln.Addr().String()
	}
	// The venue writes its "next" links on the address it listens on.
	cfg.PublicBaseURL = base
	v, err := venue.New(cfg)
	if err != nil {
		ln.Close()
		return usagef("sim serve: %s", strings.TrimPrefix(err.Error(), "venue: "))
	}
	if f.state != "" {
		stop := a.keepSimState(v, f.state, clk)
		defer stop()
	}
	if f.external > 0 {
		stop := a.placeSimExternalEvery(v, f.external, clk)
		defer stop()
	}
	if f.tls {
		return a.simServeTLS(ctx, ln, base, v, f)
	}

	hs := v.Serve(ln, false)
	if err := writeSimExports(a.opts.Stdout, base, v, ""); err != nil {
		hs.Close()
		return err
	}
	fmt.Fprintf(a.opts.Stderr, "sim serve: simulated venue on %s, account %s, seed %d; interrupt (Ctrl-C) to stop\n", base, v.Config().AccountNumber, f.seed)
	<-ctx.Done()
	hs.Close() // waits for the requests in flight, a few seconds at most
	fmt.Fprintf(a.opts.Stderr, "sim serve: stopped; %s\n", ledgerSummary(v.Ledger().Counts()))
	return nil
}

// simRateLimits reads --rate-limits, if given, and applies --retry-after
// over it.
func simRateLimits(f simServeFlags) (venue.RateLimits, error) {
	var l venue.RateLimits
	if f.limits != "" {
		b, err := os.ReadFile(f.limits)
		if err != nil {
			return l, usagef("--rate-limits %s: %v", f.limits, err)
		}
		if l, err = venue.ParseRateLimits(b); err != nil {
			return l, usagef("--rate-limits %s: %s", f.limits, strings.TrimPrefix(err.Error(), "venue: rate limits: "))
		}
	}
	if f.retryAft != "" {
		l.RetryAfter = f.retryAft
		if _, err := venue.New(venue.Config{RateLimits: venue.RateLimits{RetryAfter: f.retryAft}}); err != nil {
			return l, usagef("--retry-after %q: want off, bucket or whole seconds such as 5s", f.retryAft)
		}
	}
	return l, nil
}

// simStateEvery is how often "sim serve --state" saves the venue's book
// while it serves; it saves it at stop too.
const simStateEvery = 30 * time.Second

// keepSimState saves srv's book to path every simStateEvery on clk, until
// the returned func is called, which saves it a last time. A failed save is
// reported on stderr, and the venue serves on.
func (a *app) keepSimState(srv *venue.Venue, path string, clk clockwork.Clock) (stop func()) {
	save := func() {
		if err := srv.SaveState(path); err != nil {
			fmt.Fprintf(a.opts.Stderr, "sim serve: %s\n", strings.TrimPrefix(err.Error(), "venue: "))
		}
	}
	done, exited := make(chan struct{}), make(chan struct{})
	tick := clk.NewTicker(simStateEvery)
	go func() {
		defer close(exited)
		for {
			select {
			case <-done:
				return
			case <-tick.Chan():
				save()
			}
		}
	}()
	return func() {
		tick.Stop()
		close(done)
		<-exited
		save()
		fmt.Fprintf(a.opts.Stderr, "sim serve: book saved to %s\n", path)
	}
}

// checkLoopbackAddr refuses a listen address that is not on a loopback
// host: the simulator accepts a published key, so it must not be
// reachable from other machines. An empty host (":8787") would listen on
// every interface.
func checkLoopbackAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port == "" {
		return usagef("--addr %q: want host:port on a loopback host, such as %s", addr, defaultSimAddr)
	}
	if !strings.EqualFold(host, "localhost") {
		ip := net.ParseIP(host)
		if ip == nil || !ip.IsLoopback() {
			return usagef("--addr %q: the simulated venue listens on loopback only (127.0.0.1, ::1, localhost): it accepts a published demo key", addr)
		}
	}
	return nil
}

// writeSimExports prints the comment line and the three export lines,
// and with a CA certificate file a fourth, SSL_CERT_FILE.
func writeSimExports(w io.Writer, base string, v *venue.Venue, caPath string) error {
	cfg := v.Config()
	var b strings.Builder
	b.WriteString("# simulated venue demo credentials (throwaway: only this simulator accepts them)\n")
	vars := [][2]string{
		{envBaseURL, base},
		{envAPIKey, cfg.APIKey},
		{envPrivateKey, base64.StdEncoding.EncodeToString(cfg.PrivateKey.Seed())},
	}
	if caPath != "" {
		vars = append(vars, [2]string{envSSLCertFile, caPath})
	}
	for _, kv := range vars {
		fmt.Fprintf(&b, "export %s=%s\n", kv[0], shellQuote(kv[1]))
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("sim serve: writing the credentials: %w", err)
	}
	return nil
}

// shellQuote quotes s for a POSIX shell: in single quotes, where nothing
// is special, with each single quote inside closing the quotes, adding an
// escaped quote and reopening them.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// ledgerSummary renders a ledger's counts on one line.
func ledgerSummary(c venue.Counts) string {
	return fmt.Sprintf("%d requests (%s), %d answered 401, %d answered 429, %d dropped, %d orders created",
		c.Total, byStatus(c.ByStatus), c.Unauthorized, c.Throttled, c.Dropped, c.Creates)
}

// byStatus renders counts by status, in status order: "200 ×12, 503 ×2".
func byStatus(m map[int]int) string {
	if len(m) == 0 {
		return "none"
	}
	codes := make([]int, 0, len(m))
	for code := range m {
		codes = append(codes, code)
	}
	sort.Ints(codes)
	parts := make([]string, len(codes))
	for i, code := range codes {
		label := fmt.Sprint(code)
		if code == 0 {
			label = "no answer"
		}
		parts[i] = fmt.Sprintf("%s ×%d", label, m[code])
	}
	return strings.Join(parts, ", ")
}

// envSSLCertFile is the variable Go's crypto/x509 (and curl, OpenSSL)
// read the trusted roots from on Unix.
const envSSLCertFile = "SSL_CERT_FILE"

// simServeTLS serves v over TLS on ln (venue.Venue.Serve), which
// controls HTTP/2 at the frame level (so the stream faults refuse the
// stream or send GOAWAY) and serves clients that cannot speak HTTP/2 over
// HTTP/1.1, writes its CA certificate to --ca-file or a
// temporary file, prints the exports with SSL_CERT_FILE, and serves until
// ctx ends.
func (a *app) simServeTLS(ctx context.Context, ln net.Listener, base string, v *venue.Venue, f simServeFlags) error {
	hs := v.Serve(ln, true)
	defer hs.Close()
	path, temp, err := writeSimCA(f.caFile, hs.CACertPEM)
	if err != nil {
		return err
	}
	if temp {
		defer os.Remove(path)
	}
	if err := writeSimExports(a.opts.Stdout, base, v, path); err != nil {
		return err
	}
	fmt.Fprintf(a.opts.Stderr, "sim serve: simulated venue on %s (HTTPS: HTTP/2, or HTTP/1.1 to a client without h2), account %s, seed %d; interrupt (Ctrl-C) to stop\n", base, v.Config().AccountNumber, f.seed)
	fmt.Fprintf(a.opts.Stderr, "sim serve: trust the CA certificate in %s (%s=%s, curl --cacert %s)\n", path, envSSLCertFile, path, path)
	<-ctx.Done()
	hs.Close() // ends the connections and waits for the handlers
	fmt.Fprintf(a.opts.Stderr, "sim serve: stopped; %s\n", ledgerSummary(v.Ledger().Counts()))
	return nil
}

// writeSimCA writes the CA certificate PEM to path, or, when path is empty,
// to a new temporary file (temp: remove it at exit), and returns the
// absolute path written.
func writeSimCA(path string, pemBytes []byte) (written string, temp bool, err error) {
	if path == "" {
		fh, err := os.CreateTemp("", "tradewire-sim-ca-*.pem")
		if err != nil {
			return "", false, fmt.Errorf("sim serve: writing the CA certificate: %w", err)
		}
		_, werr := fh.Write(pemBytes)
		if cerr := fh.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			os.Remove(fh.Name())
			return "", false, fmt.Errorf("sim serve: writing the CA certificate: %w", werr)
		}
		return fh.Name(), true, nil
	}
	if err := os.WriteFile(path, pemBytes, 0o644); err != nil {
		return "", false, usagef("--ca-file %s: %v", path, err)
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	return path, false, nil
}
