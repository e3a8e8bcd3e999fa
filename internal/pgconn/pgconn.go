// Package pgconn connects tradewire's PostgreSQL stores to their server:
// one pool per URL with every wait bounded whatever the URL says, errors
// that never carry the password, and versioned schema migrations that
// tradewire applies itself.
package pgconn

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DefaultTimeout bounds every wait on the server when the caller sets
// none: a connection (with its authentication), and each statement.
const DefaultTimeout = 5 * time.Second

// Pool is a connection pool with the password it must never show.
type Pool struct {
	*pgxpool.Pool
	// Timeout bounds each statement (callers set it on their contexts with
	// Bound) and each connection attempt.
	Timeout     time.Duration
	password    string
	unavailable error
}

// Options configure Connect. The zero value of each is its default.
type Options struct {
	// Timeout bounds every wait on the server: each connection attempt and
	// each statement. Zero: DefaultTimeout.
	Timeout time.Duration
	// Unavailable is the sentinel the errors of a server that could not be
	// reached or did not answer match, besides ErrUnavailable: the
	// caller's "try again later" (transport.ErrUnavailable).
	Unavailable error
	// AfterConnect, when set, runs on every new connection of the pool
	// (the first one, and each one made after a failover) before the pool
	// hands it out, bounded by Timeout; an error from it discards the
	// connection.
	AfterConnect func(context.Context, *pgx.Conn) error
}

// ErrUnavailable is matched by the errors of a server that could not be
// reached or did not answer: try again later.
var ErrUnavailable = errors.New("pgconn: the server is unavailable")

// Connect opens a pool on rawURL (a postgres:// URL, several hosts
// allowed, or a keyword/value string) and checks that a read-write
// server answers within the timeout. The pool's connection attempts are
// bounded by the timeout whatever connect_timeout the URL gives, and each
// new connection sets statement_timeout to it. Errors name the hosts,
// never the password; an unreachable or unanswering server is an error
// matching ErrUnavailable and opts.Unavailable, a URL that does not parse
// an error that does not.
func Connect(ctx context.Context, rawURL string, opts Options) (*Pool, error) {
	timeout, afterConnect := opts.Timeout, opts.AfterConnect
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	pw := password(rawURL)
	cfg, err := pgxpool.ParseConfig(rawURL)
	if err != nil {
		return nil, fmt.Errorf("PostgreSQL URL %s: %s", Redact(rawURL), scrub(err.Error(), pw))
	}
	if cfg.ConnConfig.Password != "" {
		pw = cfg.ConnConfig.Password
	}
	cc := cfg.ConnConfig
	if cc.ConnectTimeout <= 0 || cc.ConnectTimeout > timeout {
		cc.ConnectTimeout = timeout
	}
	if cc.RuntimeParams == nil {
		cc.RuntimeParams = map[string]string{}
	}
	cc.RuntimeParams["statement_timeout"] = fmt.Sprint(timeout.Milliseconds())
	cc.RuntimeParams["idle_in_transaction_session_timeout"] = fmt.Sprint((4 * timeout).Milliseconds())
	cc.RuntimeParams["application_name"] = "tradewire"
	// A connection that went quiet (a server that stopped answering) is
	// found by the statement's deadline; idle ones are checked every
	// timeout.
	cfg.HealthCheckPeriod = timeout
	cfg.MaxConnIdleTime = time.Minute
	if afterConnect != nil {
		cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			return afterConnect(ctx, c)
		}
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("PostgreSQL URL %s: %s", Redact(rawURL), scrub(err.Error(), pw))
	}
	p := &Pool{Pool: pool, Timeout: timeout, password: pw, unavailable: opts.Unavailable}
	pctx, cancel := p.Bound(ctx)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		return nil, p.Err(err, "PostgreSQL at %s does not answer", Hosts(rawURL))
	}
	return p, nil
}

// Bound returns ctx with the pool's Timeout as its deadline, unless it has
// an earlier one.
func (p *Pool) Bound(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, p.Timeout)
}

// unavailableError is a server that could not be reached or did not
// answer: try again later.
type unavailableError struct {
	msg  string
	also error // Options.Unavailable
}

func (e *unavailableError) Error() string { return e.msg }
func (e *unavailableError) Is(target error) bool {
	return target == ErrUnavailable || (e.also != nil && target == e.also)
}

// Err returns err, prefixed with what was being done, with the password
// scrubbed from its text. A failure to reach or hear from the server
// (connection refused or lost, a timeout, the server shutting down or in
// recovery) matches ErrUnavailable and Options.Unavailable; other errors (a constraint,
// a statement the server refused) are returned as they are, scrubbed. The
// result never wraps the driver's error, whose fields may name the
// connection.
func (p *Pool) Err(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	msg := scrub(fmt.Sprintf(format, args...)+": "+err.Error(), p.password)
	if Unavailable(err) {
		return &unavailableError{msg: msg, also: p.unavailable}
	}
	return errors.New(msg)
}

// Unavailable reports whether err is the server unreachable or not
// answering, rather than an answer.
func Unavailable(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return true
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		// Class 08 connection exception, 57P0x shutdown / cannot connect
		// now, 25006 read-only transaction (a standby, or a demoted
		// primary), 57014 query canceled (statement_timeout).
		return strings.HasPrefix(pe.Code, "08") || strings.HasPrefix(pe.Code, "57P0") || pe.Code == "25006" || pe.Code == "57014"
	}
	if pgconn.SafeToRetry(err) || pgconn.Timeout(err) {
		return true
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return true
	}
	// Anything else from the network: a connection reset, EOF.
	return !isAnswer(err)
}

// isAnswer reports whether err came from the server's answer (a PgError)
// or from this side (a scan, an encoding), not from the network.
func isAnswer(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return true
	}
	return errors.Is(err, pgx.ErrNoRows) || errors.Is(err, pgx.ErrTxClosed)
}

// password returns the password rawURL carries, if it can tell.
func password(rawURL string) string {
	if u, err := url.Parse(rawURL); err == nil && u.User != nil {
		if pw, ok := u.User.Password(); ok {
			return pw
		}
		if pw := u.Query().Get("password"); pw != "" {
			return pw
		}
	}
	if m := kvPassword.FindStringSubmatch(rawURL); m != nil {
		return strings.Trim(m[1], "'")
	}
	return ""
}

var (
	kvPassword  = regexp.MustCompile(`(?:^|\s)password\s*=\s*('(?:[^'\\]|\\.)*'|\S+)`)
	queryPasswd = regexp.MustCompile(`([?&]password=)[^&]*`)
	userPasswd  = regexp.MustCompile(`(://[^/?#@:]*:)[^@/?#]*@`)
)

// scrub replaces every occurrence of pw in s.
func scrub(s, pw string) string {
	if pw == "" {
		return s
	}
	return strings.ReplaceAll(s, pw, "xxxxx")
}

// Redact returns rawURL fit for messages and logs: its password, in the
// user information, a password parameter or a keyword/value string,
// replaced by xxxxx.
func Redact(rawURL string) string {
	s := rawURL
	if pw := password(rawURL); pw != "" {
		s = scrub(s, pw)
	}
	// The password as written (percent-encoded, or in a URL that does not
	// parse), in the user information.
	s = userPasswd.ReplaceAllString(s, "${1}xxxxx@")
	s = queryPasswd.ReplaceAllString(s, "${1}xxxxx")
	return kvPassword.ReplaceAllStringFunc(s, func(m string) string {
		i := strings.Index(m, "=")
		return m[:i+1] + "xxxxx"
	})
}

// Hosts returns the host:port list of rawURL, for messages.
func Hosts(rawURL string) string {
	cfg, err := pgconn.ParseConfig(rawURL)
	if err != nil {
		return "(unparsable URL)"
	}
	hosts := []string{fmt.Sprintf("%s:%d", cfg.Host, cfg.Port)}
	for _, fb := range cfg.Fallbacks {
		h := fmt.Sprintf("%s:%d", fb.Host, fb.Port)
		if h != hosts[len(hosts)-1] {
			hosts = append(hosts, h)
		}
	}
	return strings.Join(hosts, ",")
}

// Migrate brings component's tables to the newest of steps, in one
// transaction under an advisory lock, so that processes starting together
// apply each step once. steps[i] takes the schema from version i to i+1;
// the version is kept in tradewire_schema. A database whose version of
// component is newer than this binary knows is refused: an older binary
// must not write to a schema it does not know.
func (p *Pool) Migrate(ctx context.Context, component string, steps []string) (int, error) {
	ctx, cancel := p.Bound(ctx)
	defer cancel()
	tx, err := p.Begin(ctx)
	if err != nil {
		return 0, p.Err(err, "migrating the %s schema", component)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(7242010421)`); err != nil {
		return 0, p.Err(err, "migrating the %s schema", component)
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS tradewire_schema (component text PRIMARY KEY, version integer NOT NULL)`); err != nil {
		return 0, p.Err(err, "migrating the %s schema", component)
	}
	var have int
	err = tx.QueryRow(ctx, `SELECT version FROM tradewire_schema WHERE component = $1`, component).Scan(&have)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return 0, p.Err(err, "reading the %s schema's version", component)
	}
	if have > len(steps) {
		return have, fmt.Errorf("the database's %s schema is version %d, newer than this tradewire knows (%d): upgrade tradewire", component, have, len(steps))
	}
	if have == len(steps) {
		// Nothing to write: a commit with no change does not wait for a
		// synchronous standby, so a server whose standby is gone still
		// opens (and its stores then time out their writes).
		return have, nil
	}
	for v := have; v < len(steps); v++ {
		if _, err := tx.Exec(ctx, steps[v]); err != nil {
			return have, p.Err(err, "migrating the %s schema to version %d", component, v+1)
		}
	}
	if _, err := tx.Exec(ctx, `INSERT INTO tradewire_schema (component, version) VALUES ($1, $2)
		ON CONFLICT (component) DO UPDATE SET version = EXCLUDED.version`, component, len(steps)); err != nil {
		return have, p.Err(err, "migrating the %s schema", component)
	}
	if err := tx.Commit(ctx); err != nil {
		return have, p.Err(err, "migrating the %s schema", component)
	}
	return len(steps), nil
}
