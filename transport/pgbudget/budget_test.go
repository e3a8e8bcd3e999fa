package pgbudget_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/tradewire/tradewire/broker/brokertest"
	"github.com/tradewire/tradewire/internal/pgconn"
	"github.com/tradewire/tradewire/internal/pgtest"
	"github.com/tradewire/tradewire/signing"
	"github.com/tradewire/tradewire/transport"
	"github.com/tradewire/tradewire/transport/internal/budgettest"
	"github.com/tradewire/tradewire/transport/pgbudget"
	"github.com/tradewire/tradewire/venue"
)

func open(t testing.TB, u, acct string, cfg pgbudget.Config) *pgbudget.Budget {
	t.Helper()
	b, err := pgbudget.Open(context.Background(), u, acct, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

// inspect returns a pool for reading the budget's rows behind its back.
func inspect(t testing.TB, u string) *pgconn.Pool {
	t.Helper()
	p, err := pgconn.Connect(context.Background(), u, pgconn.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// pauseLeft is how long the account's pause lasts, on the server's clock.
func pauseLeft(t *testing.T, p *pgconn.Pool, acct string) time.Duration {
	t.Helper()
	var us float64
	err := p.QueryRow(context.Background(), `SELECT coalesce(extract(epoch FROM paused_until - clock_timestamp()) * 1000000, 0)::float8
		FROM tradewire_budget WHERE account = $1`, acct).Scan(&us)
	if err != nil {
		t.Fatal(err)
	}
	return time.Duration(us) * time.Microsecond
}

// tat is the account's GCRA arrival time, as text ("" when unset).
func tat(t *testing.T, p *pgconn.Pool, acct string) string {
	t.Helper()
	var s string
	err := p.QueryRow(context.Background(), `SELECT coalesce(tat::text, '') FROM tradewire_budget WHERE account = $1`, acct).Scan(&s)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestBurstThenWaitForRate: budgettest.BurstThenRate on PostgreSQL.
func TestBurstThenWaitForRate(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewRealClock() // the server's GCRA runs on the real clock
	budgettest.BurstThenRate(t, open(t, pgtest.URL(t), pgtest.Account(t), pgbudget.Config{RatePerMinute: 60, Burst: 4, Clock: clock}), clock)
}

// TestRateHoldsAcrossBudgets: four Budgets (four processes, each with its
// own connections) hammering one account for 2 s are granted no more than
// the budget allows together; another account's budget is untouched.
func TestRateHoldsAcrossBudgets(t *testing.T) {
	t.Parallel()
	u := pgtest.URL(t)
	acct, other := pgtest.Account(t), pgtest.Account(t)
	// 600 a minute, bursts of 1: 594 a minute (9.9 a second) and 1 here.
	cfg := pgbudget.Config{RatePerMinute: 600, Burst: 1}
	const rate, burst = 9.9, 1
	var budgets []*pgbudget.Budget
	for i := 0; i < 4; i++ {
		budgets = append(budgets, open(t, u, acct, cfg))
	}
	c := open(t, u, other, cfg)
	var granted atomic.Int64
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	for _, b := range budgets {
		for w := 0; w < 2; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for b.Wait(ctx) == nil {
					granted.Add(1)
				}
			}()
		}
	}
	// Meanwhile another account spends its own budget.
	time.Sleep(500 * time.Millisecond) // the budgets spend on the server's real clock
	octx, ocancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer ocancel()
	if err := c.Wait(octx); err != nil {
		t.Errorf("another account's budget was spent: %v", err)
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	n := float64(granted.Load())
	limit := rate*elapsed + burst + 1
	t.Logf("%d Budgets × 2 callers, %.2f s: %.0f granted; the budget allows %.1f", len(budgets), elapsed, n, rate*elapsed+burst)
	if n > limit {
		t.Errorf("%.0f tokens granted in %.2f s, more than %.1f", n, elapsed, limit)
	}
	if n < 0.8*rate*elapsed {
		t.Errorf("only %.0f tokens granted in %.2f s at %.1f a second", n, elapsed, rate)
	}
}

func TestPauseHoldsTheFleet(t *testing.T) {
	t.Parallel()
	u := pgtest.URL(t)
	acct := pgtest.Account(t)
	p := inspect(t, u)
	a := open(t, u, acct, pgbudget.Config{})
	b := open(t, u, acct, pgbudget.Config{})
	a.Pause(500 * time.Millisecond)
	a.Pause(time.Millisecond) // never shortens a pause in force
	b.Pause(time.Millisecond) // nor does another process's
	if d := pauseLeft(t, p, acct); d < 300*time.Millisecond {
		t.Fatalf("the pause lasts %v after a shorter Pause", d)
	}
	start := time.Now()
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := b.Wait(context.Background()); err != nil {
				t.Error(err)
			}
			if d := time.Since(start); d < 300*time.Millisecond {
				t.Errorf("a caller of another Budget went after %v, inside the pause", d)
			}
		}()
	}
	wg.Wait()
	// A longer pause extends the one in force.
	b.Pause(2 * time.Second)
	if d := pauseLeft(t, p, acct); d < time.Second {
		t.Fatalf("the pause lasts %v after a 2 s Pause", d)
	}
}

func TestPauseIsClamped(t *testing.T) {
	t.Parallel()
	u := pgtest.URL(t)
	acct := pgtest.Account(t)
	a := open(t, u, acct, pgbudget.Config{MaxPause: 200 * time.Millisecond})
	a.Pause(time.Hour)
	if d := pauseLeft(t, inspect(t, u), acct); d > 200*time.Millisecond || d <= 0 {
		t.Fatalf("the pause lasts %v, want at most the 200ms cap", d)
	}
}

// TestNoThrottle: a negative RatePerMinute grants at once past any
// burst, keeps no arrival time, and still honours pauses.
func TestNoThrottle(t *testing.T) {
	t.Parallel()
	u := pgtest.URL(t)
	acct := pgtest.Account(t)
	b := open(t, u, acct, pgbudget.Config{RatePerMinute: -1, Burst: 1})
	for i := 0; i < 50; i++ {
		// Throttled at 100 a minute, the second token would be 600 ms
		// away: past this deadline, an immediate error.
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		err := b.Wait(ctx)
		cancel()
		if err != nil {
			t.Fatalf("Wait %d: %v", i, err)
		}
	}
	paused := time.Now()
	b.Pause(300 * time.Millisecond)
	p := inspect(t, u)
	if got := tat(t, p, acct); got != "" {
		t.Fatalf("an unthrottled budget kept an arrival time: %s", got)
	}
	// Another process, also unthrottled, waits the pause out.
	c := open(t, u, acct, pgbudget.Config{RatePerMinute: -1})
	if err := c.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(paused); d < 280*time.Millisecond {
		t.Fatalf("an unthrottled Budget went %v after a 300ms pause began", d)
	}
}

// TestCancelEndsWait: cancelling a Wait, in a pause or for the rate, ends
// it at once and spends nothing.
func TestCancelEndsWait(t *testing.T) {
	t.Parallel()
	u := pgtest.URL(t)
	p := inspect(t, u)

	t.Run("pause", func(t *testing.T) {
		acct := pgtest.Account(t)
		clk := clockwork.NewFakeClock()
		a := open(t, u, acct, pgbudget.Config{Clock: clk})
		a.Pause(10 * time.Second)
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() { errc <- a.Wait(ctx) }()
		clk.BlockUntilContext(ctx, 1) // the Wait sleeps out the pause
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v", err)
		}
		if d := pauseLeft(t, p, acct); d <= time.Second {
			t.Fatalf("the pause lasts %v: the wait was not cut short", d)
		}
		if got := tat(t, p, acct); got != "" {
			t.Fatalf("a token was taken: arrival time %s", got)
		}
	})
	t.Run("rate", func(t *testing.T) {
		acct := pgtest.Account(t)
		clk := clockwork.NewFakeClock()
		a := open(t, u, acct, pgbudget.Config{RatePerMinute: 6, Burst: 1, Clock: clk}) // a token every 10 s
		if err := a.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
		before := tat(t, p, acct)
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() { errc <- a.Wait(ctx) }()
		clk.BlockUntilContext(ctx, 1) // the Wait sleeps until its token
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v", err)
		}
		// A deadline before the token refuses at once.
		dctx, dcancel := context.WithTimeout(context.Background(), time.Second)
		defer dcancel()
		if err := a.Wait(dctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want a deadline error", err)
		}
		if after := tat(t, p, acct); after != before {
			t.Fatalf("the arrival time moved from %s to %s: a cancelled Wait spent a token", before, after)
		}
	})
}

// TestSynchronousCommitOffIsLocal: the budget's transaction commits with
// synchronous_commit off, and only its own: the session's setting is
// untouched afterwards, for the next transaction on the connection.
func TestSynchronousCommitOffIsLocal(t *testing.T) {
	t.Parallel()
	u := pgtest.URL(t)
	acct := pgtest.Account(t)
	open(t, u, acct, pgbudget.Config{}) // creates the schema
	p := inspect(t, u)
	ctx := context.Background()
	conn, err := p.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var inTx string
	if err := tx.QueryRow(ctx, `SELECT tradewire_budget_take($1, 1000, 1000), current_setting('synchronous_commit')`, acct).Scan(new(int64), &inTx); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	var after string
	if err := conn.QueryRow(ctx, `SELECT current_setting('synchronous_commit')`).Scan(&after); err != nil {
		t.Fatal(err)
	}
	if inTx != "off" || after != "on" {
		t.Fatalf("synchronous_commit: %q in the budget's transaction, %q after it; want off, then on", inTx, after)
	}
}

// TestTokenDoesNotWaitForTheStandby: on a server whose synchronous
// standby never answers, where every synchronously committed write
// waits, tokens and pauses are still granted and written at once.
func TestTokenDoesNotWaitForTheStandby(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := pgtest.Start(t, pgtest.NoStandby)
	acct := pgtest.Account(t)
	b := open(t, c.URL(), acct, pgbudget.Config{Timeout: time.Second}) // creates the schema
	p := inspect(t, c.URL())
	if _, err := p.Exec(ctx, `CREATE TABLE sync_probe (n integer)`); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Exec(ctx, `ALTER SYSTEM SET synchronous_standby_names = 'absent'`); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Exec(ctx, `SELECT pg_reload_conf()`); err != nil {
		t.Fatal(err)
	}
	// A synchronously committed write now waits for the absent standby
	// until its deadline, once the server has taken the setting up (a
	// moment after the reload, connection by connection): try until one
	// waits.
	for i := 0; ; i++ {
		ictx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		start := time.Now()
		p.Exec(ictx, `INSERT INTO sync_probe VALUES (1)`)
		cancel()
		if time.Since(start) >= 250*time.Millisecond {
			break
		}
		if i == 100 {
			t.Fatal("commits still return at once 100 tries after synchronous_standby_names was set: the test would show nothing")
		}
	}
	start := time.Now()
	for i := 0; i < 5; i++ {
		if err := b.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	b.Pause(time.Millisecond)
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Fatalf("5 tokens and a pause took %v with no standby answering", d)
	}
}

// TestUnavailable: no server at Open, a closed Budget, and a server
// killed under a running Budget are all errors matching
// transport.ErrUnavailable, within the timeout, without the password.
func TestUnavailable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const dead = "postgres://bot:hunter2@127.0.0.1:1/trade?sslmode=disable"
	_, err := pgbudget.Open(ctx, dead, "AB1", pgbudget.Config{Timeout: 300 * time.Millisecond})
	if !errors.Is(err, transport.ErrUnavailable) || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("Open with no server: err = %v, want one matching transport.ErrUnavailable without the password", err)
	}

	u := pgtest.URL(t)
	b, err := pgbudget.Open(ctx, u, pgtest.Account(t), pgbudget.Config{})
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	if err := b.Wait(ctx); !errors.Is(err, transport.ErrUnavailable) {
		t.Fatalf("Wait after Close: err = %v, want one matching transport.ErrUnavailable", err)
	}
	// A client on the budget sends nothing.
	srv := brokertest.NewServer(venue.Config{})
	defer srv.Close()
	pk, err := signing.ParsePrivateKey(srv.PrivateKeyBase64)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := signing.New(srv.APIKey, pk)
	if err != nil {
		t.Fatal(err)
	}
	tc, err := transport.New(srv.URL, signer, transport.Config{Limiter: b})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tc.Get(ctx, "/api/v2/crypto/trading/accounts/"); !errors.Is(err, transport.ErrUnavailable) {
		t.Fatalf("a GET through a closed budget: err = %v, want one matching transport.ErrUnavailable", err)
	}
	if n := len(srv.Ledger().Requests()); n != 0 {
		t.Fatalf("the venue saw %d requests through a budget that could not be reached", n)
	}

	c := pgtest.Start(t, pgtest.NoStandby)
	pw := c.Password
	b = open(t, c.URL(), pgtest.Account(t), pgbudget.Config{Timeout: time.Second})
	if err := b.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.KillPrimary(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = b.Wait(ctx)
	if !errors.Is(err, transport.ErrUnavailable) {
		t.Fatalf("Wait with the server killed: err = %v, want one matching transport.ErrUnavailable", err)
	}
	if strings.Contains(err.Error(), pw) {
		t.Fatalf("error %q shows the password", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("Wait took %v to fail with a 1 s timeout", d)
	}
	t.Logf("with the server killed: %v after %v", err, time.Since(start).Round(time.Millisecond))
}

func TestOpenValidates(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// Validation comes first: this URL is never dialled.
	const u = "postgres://bot:hunter2@127.0.0.1:1/trade?sslmode=disable"
	for name, tc := range map[string]struct {
		acct string
		cfg  pgbudget.Config
		want string
	}{
		"quote in account":  {acct: "AB'1", want: "account number"},
		"empty account":     {acct: "", want: "account number"},
		"NaN rate":          {acct: "AB1", cfg: pgbudget.Config{RatePerMinute: math.NaN()}, want: "rate"},
		"infinite rate":     {acct: "AB1", cfg: pgbudget.Config{RatePerMinute: math.Inf(1)}, want: "rate"},
		"negative burst":    {acct: "AB1", cfg: pgbudget.Config{Burst: -1}, want: "burst"},
		"negative pause":    {acct: "AB1", cfg: pgbudget.Config{MaxPause: -time.Second}, want: "max pause"},
		"negative timeout":  {acct: "AB1", cfg: pgbudget.Config{Timeout: -time.Second}, want: "timeout"},
		"a burst of years":  {acct: "AB1", cfg: pgbudget.Config{RatePerMinute: 1e-6, Burst: 300}, want: "year"},
		"unparsable URL":    {acct: "AB1", want: "URL"},
		"no server answers": {acct: "AB1", want: "does not answer"},
	} {
		t.Run(name, func(t *testing.T) {
			url := u
			if name == "unparsable URL" {
				url = "postgres://bot:hunter2@127.0.0.1:notaport/trade"
			}
			if tc.cfg.Timeout == 0 {
				tc.cfg.Timeout = 300 * time.Millisecond
			}
			_, err := pgbudget.Open(ctx, url, tc.acct, tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one naming %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Fatalf("error %q shows the password", err)
			}
		})
	}
}

// TestFailover: with the primary killed, Wait fails as unavailable (the
// transport sends nothing); once the standby is promoted, the same Budget
// grants tokens again within 10 s, with no operator action.
func TestFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("starts, kills and promotes a cluster")
	}
	t.Parallel()
	ctx := context.Background()
	c := pgtest.Start(t, pgtest.SyncStandby)
	b := open(t, c.URL(), pgtest.Account(t), pgbudget.Config{RatePerMinute: 6000, Burst: 30, Timeout: time.Second})
	if err := b.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.KillPrimary(); err != nil {
		t.Fatal(err)
	}
	if err := b.Wait(ctx); !errors.Is(err, transport.ErrUnavailable) {
		t.Fatalf("Wait with no primary: err = %v, want one matching transport.ErrUnavailable", err)
	}
	if err := c.Promote(); err != nil {
		t.Fatal(err)
	}
	promoted := time.Now()
	var err error
	for time.Since(promoted) < 10*time.Second {
		if err = b.Wait(ctx); err == nil {
			break
		}
		if !errors.Is(err, transport.ErrUnavailable) {
			t.Fatalf("Wait after the promotion: %v", err)
		}
		time.Sleep(100 * time.Millisecond) // the real servers' time
	}
	if err != nil {
		t.Fatalf("no token within 10 s of the promotion: %v\n%s", err, c.Logs())
	}
	t.Logf("a token %v after the promotion", time.Since(promoted).Round(time.Millisecond))
}

// TestTokens: the budget counts the tokens left in the fleet's bucket,
// as transport's tokens gauge reports them; a budget that does not
// throttle counts none.
func TestTokens(t *testing.T) {
	t.Parallel()
	u := pgtest.URL(t)
	budgettest.Tokens(t, open(t, u, pgtest.Account(t), pgbudget.Config{RatePerMinute: 60, Burst: 10}), 60, 10)
	if n, ok, err := open(t, u, pgtest.Account(t), pgbudget.Config{RatePerMinute: -1}).Tokens(context.Background()); ok || err != nil {
		t.Errorf("no throttle: Tokens = %v, %v, %v; want none", n, ok, err)
	}
}
