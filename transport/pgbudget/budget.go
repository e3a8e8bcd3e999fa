package pgbudget

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/rs/zerolog"

	"github.com/tradewire/tradewire/internal/adaptive"
	"github.com/tradewire/tradewire/internal/pgconn"
	"github.com/tradewire/tradewire/internal/wire"
	"github.com/tradewire/tradewire/transport"
)

// defaultMaxPause is what a zero Config.MaxPause stands for.
const defaultMaxPause = time.Minute

// maxTolerance bounds how far ahead of now the GCRA's arrival time may
// run (the burst's span, in µs): a rate so slow that its burst spans
// more than a year is refused rather than overflow.
const maxTolerance = int64(365 * 24 * time.Hour / time.Microsecond)

// migrations is the budget's schema, step by step (pgconn.Migrate).
//
// tradewire_budget_take spends one token of account acct's GCRA, whose
// emission interval and tolerance (the burst's span) are given in µs, on
// the server's clock, unless the account is paused. It returns 0 when the
// token is granted, else the µs to wait; a denied call changes nothing.
// emission_us <= 0 means no throttle: only the pause is read.
// tradewire_budget_pause extends the account's pause to pause_us from the
// server's now, never shortening it. Neither waits for a standby.
var migrations = []string{`
CREATE TABLE tradewire_budget (
	account      text PRIMARY KEY,
	tat          timestamptz,
	paused_until timestamptz
);

CREATE FUNCTION tradewire_budget_take(acct text, emission_us bigint, tolerance_us bigint)
RETURNS bigint LANGUAGE plpgsql AS $fn$
DECLARE
	b        tradewire_budget%ROWTYPE;
	t        timestamptz;
	new_tat  timestamptz;
	allow_at timestamptz;
BEGIN
	SET LOCAL synchronous_commit = off;
	IF emission_us <= 0 THEN
		SELECT * INTO b FROM tradewire_budget WHERE account = acct;
		t := clock_timestamp();
		IF b.paused_until > t THEN
			RETURN ceil(extract(epoch FROM b.paused_until - t) * 1000000)::bigint;
		END IF;
		RETURN 0;
	END IF;
	SELECT * INTO b FROM tradewire_budget WHERE account = acct FOR UPDATE;
	IF NOT FOUND THEN
		INSERT INTO tradewire_budget (account) VALUES (acct) ON CONFLICT (account) DO NOTHING;
		SELECT * INTO b FROM tradewire_budget WHERE account = acct FOR UPDATE;
	END IF;
	-- Read after the row lock: the time a token is granted at is the
	-- time it was decided at.
	t := clock_timestamp();
	IF b.paused_until > t THEN
		RETURN ceil(extract(epoch FROM b.paused_until - t) * 1000000)::bigint;
	END IF;
	new_tat := greatest(coalesce(b.tat, t), t) + emission_us * interval '1 microsecond';
	allow_at := new_tat - tolerance_us * interval '1 microsecond';
	IF allow_at > t THEN
		RETURN greatest(1, ceil(extract(epoch FROM allow_at - t) * 1000000))::bigint;
	END IF;
	UPDATE tradewire_budget SET tat = new_tat WHERE account = acct;
	RETURN 0;
END
$fn$;

CREATE FUNCTION tradewire_budget_pause(acct text, pause_us bigint)
RETURNS void LANGUAGE plpgsql AS $fn$
BEGIN
	SET LOCAL synchronous_commit = off;
	INSERT INTO tradewire_budget AS b (account, paused_until)
	VALUES (acct, clock_timestamp() + pause_us * interval '1 microsecond')
	ON CONFLICT (account) DO UPDATE SET paused_until = EXCLUDED.paused_until
	WHERE b.paused_until IS NULL OR b.paused_until < EXCLUDED.paused_until;
END
$fn$;
`}

// Config configures a Budget. Every process on the account must use the
// same RatePerMinute and Burst. The zero Config is the venue's budget on
// the real clock. There is no Adaptive: the budget keeps one configured
// rate for the account and learns nothing from the venue's 429s.
type Config struct {
	// RatePerMinute and Burst are the shared budget: RatePerMinute
	// requests a minute sustained, bursts of Burst, kept to with the same
	// headroom as transport's in-process bucket (99 a minute and 299 for
	// 100 and 300), to the microsecond. Zero means the venue's 100 a
	// minute and 300; a negative RatePerMinute turns throttling off
	// (pauses still apply).
	RatePerMinute float64
	Burst         int
	// MaxPause bounds one Pause, whatever delay it is asked for. Zero
	// means a minute.
	MaxPause time.Duration
	// Timeout bounds every wait on the server: connecting, and each
	// statement. Zero means 5 s.
	Timeout time.Duration
	// Clock times waits (the budget itself is computed on the server's
	// clock). Nil means the real clock.
	Clock clockwork.Clock
	// Logger hears of failed pause writes. The zero Logger logs nothing.
	Logger zerolog.Logger
}

// Budget is a transport.Limiter kept in PostgreSQL and shared by every
// process that uses the same account and database. It is safe for
// concurrent use; the zero value is not usable: construct one with Open,
// and Close it when done.
type Budget struct {
	pool      *pgconn.Pool
	account   string
	emission  int64 // µs between tokens; 0: throttle off
	tolerance int64 // µs: the burst's span
	clock     clockwork.Clock
	log       zerolog.Logger
	maxPause  time.Duration

	pause adaptive.Pause // local pause, on clock
}

var _ transport.Limiter = (*Budget)(nil)

// Open connects to the PostgreSQL at url (several hosts and
// target_session_attrs=read-write allowed), creates or migrates the
// budget's schema, and returns the Budget of accountNumber. A server that
// cannot be reached is an error matching transport.ErrUnavailable, not a
// silent fallback; no error shows the URL's password.
func Open(ctx context.Context, url, accountNumber string, cfg Config) (*Budget, error) {
	if !wire.ValidAccountNumber(accountNumber) {
		return nil, fmt.Errorf("pgbudget: account number %q: want 1 to 64 letters and digits", accountNumber)
	}
	if cfg.Clock == nil {
		cfg.Clock = clockwork.NewRealClock()
	}
	perMinute, burst, maxPause, err := adaptive.SharedSettings("pgbudget", cfg.RatePerMinute, cfg.Burst, cfg.MaxPause, defaultMaxPause)
	if err != nil {
		return nil, err
	}
	cfg.Burst, cfg.MaxPause = burst, maxPause
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("pgbudget: timeout %v: want 0 or more", cfg.Timeout)
	}
	emission, tolerance, err := gcra(perMinute, cfg.Burst)
	if err != nil {
		return nil, err
	}
	pool, err := pgconn.Connect(ctx, url, pgconn.Options{Timeout: cfg.Timeout, Unavailable: transport.ErrUnavailable})
	if err != nil {
		return nil, fmt.Errorf("pgbudget: %w", err)
	}
	if _, err := pool.Migrate(ctx, "budget", migrations); err != nil {
		pool.Close()
		return nil, fmt.Errorf("pgbudget: %w", err)
	}
	return &Budget{
		pool: pool, account: accountNumber,
		emission: emission, tolerance: tolerance,
		clock: cfg.Clock, log: cfg.Logger, maxPause: cfg.MaxPause,
	}, nil
}

// gcra returns the emission interval and tolerance, in µs, of the shared
// bucket for a venue allowing perMinute requests a minute in bursts of
// burst: adaptive.Headroom under it, the interval rounded up. perMinute
// 0 (off) gives 0, 0.
func gcra(perMinute float64, burst int) (emission, tolerance int64, err error) {
	if perMinute == 0 {
		return 0, 0, nil
	}
	rate, n := adaptive.Headroom(perMinute, burst)
	e := math.Ceil(float64(time.Minute/time.Microsecond) / rate)
	if e*float64(n) > float64(maxTolerance) {
		return 0, 0, fmt.Errorf("pgbudget: rate %v a minute in bursts of %d: a burst spanning more than a year is not supported", perMinute, burst)
	}
	return int64(e), int64(e) * int64(n), nil
}

// Wait takes one request from the shared budget, first sleeping out any
// fleet-wide pause, then waiting on the clock while the budget is spent.
// It never starts a wait that would end after ctx's deadline: it returns
// at once with an error wrapping context.DeadlineExceeded instead. A
// server that cannot be reached or does not answer within Config.Timeout
// is an error matching transport.ErrUnavailable: nothing may be sent then.
func (b *Budget) Wait(ctx context.Context) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		d := b.pause.Left(b.clock.Now())
		if d <= 0 {
			us, err := b.take(ctx)
			if err != nil {
				return err
			}
			if us <= 0 {
				return nil
			}
			d = max(time.Duration(us)*time.Microsecond, time.Millisecond)
		}
		if err := adaptive.WaitToken(ctx, b.clock, b.clock.Now(), d, "pgbudget"); err != nil {
			return err
		}
	}
}

// take runs one step of the GCRA on the server: 0 when a token was
// granted, else the µs to wait.
func (b *Budget) take(ctx context.Context) (int64, error) {
	sctx, cancel := b.pool.Bound(ctx)
	defer cancel()
	var us int64
	err := b.pool.QueryRow(sctx, `SELECT tradewire_budget_take($1, $2, $3)`, b.account, b.emission, b.tolerance).Scan(&us)
	if err == nil {
		return us, nil
	}
	if cerr := ctx.Err(); cerr != nil {
		// The caller gave up: its error, not an outage.
		return 0, fmt.Errorf("pgbudget: taking a token for account %s: %w", b.account, cerr)
	}
	return 0, b.pool.Err(err, "pgbudget: taking a token for account %s", b.account)
}

// Tokens returns the tokens left in the account's shared budget, read
// on the server's clock: the burst when none was taken lately, down to
// 0 while the fleet spends faster than the rate. ok is false when the
// budget does not throttle (a negative RatePerMinute). An error matches
// transport.ErrUnavailable when the server cannot be reached within
// Config.Timeout.
func (b *Budget) Tokens(ctx context.Context) (n float64, ok bool, err error) {
	if b.emission <= 0 {
		return 0, false, nil
	}
	sctx, cancel := b.pool.Bound(ctx)
	defer cancel()
	var ahead int64 // µs the GCRA's tat runs ahead of the server's now
	err = b.pool.QueryRow(sctx, `SELECT coalesce((SELECT ceil(extract(epoch FROM greatest(tat - clock_timestamp(), interval '0')) * 1000000)::bigint
		FROM tradewire_budget WHERE account = $1), 0)`, b.account).Scan(&ahead)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return 0, false, fmt.Errorf("pgbudget: reading the tokens of account %s: %w", b.account, cerr)
		}
		return 0, false, b.pool.Err(err, "pgbudget: reading the tokens of account %s", b.account)
	}
	return float64(b.tolerance-ahead) / float64(b.emission), true, nil
}

// Pause holds back every process on the account for d (clamped to the
// maximum pause) from the server's now, unless a longer pause is already
// in force: it never shortens one. It pauses this process even if the
// write fails; that failure is logged. The write is bounded by
// Config.Timeout.
func (b *Budget) Pause(d time.Duration) {
	d = min(d, b.maxPause)
	if !b.pause.Extend(b.clock.Now(), d) {
		return
	}
	us := max(1, d.Microseconds())
	ctx, cancel := b.pool.Bound(context.Background())
	defer cancel()
	if _, err := b.pool.Exec(ctx, `SELECT tradewire_budget_pause($1, $2)`, b.account, us); err != nil {
		err = b.pool.Err(err, "pgbudget: pausing account %s", b.account)
		b.log.Error().Str("account", b.account).Dur("pause", d).Str("error", err.Error()).Msg("pgbudget: the fleet-wide pause was not written")
	}
}

// Close closes the Budget's connections. A Wait after Close fails with
// an error matching transport.ErrUnavailable.
func (b *Budget) Close() {
	b.pool.Close()
}
