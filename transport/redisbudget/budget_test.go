package redisbudget_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/redis/go-redis/v9"

	"github.com/tradewire/tradewire/internal/redistest"
	"github.com/tradewire/tradewire/transport"
	"github.com/tradewire/tradewire/transport/internal/budgettest"
	"github.com/tradewire/tradewire/transport/redisbudget"
)

// setup returns a Redis client and a fresh account namespace in it.
func setup(t *testing.T) (*redis.Client, string) { return redistest.Setup(t) }

func newBudget(t *testing.T, rdb *redis.Client, acct string, cfg redisbudget.Config) *redisbudget.Budget {
	t.Helper()
	b, err := redisbudget.New(context.Background(), rdb, acct, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBurstThenWaitForRate: budgettest.BurstThenRate on Redis.
func TestBurstThenWaitForRate(t *testing.T) {
	t.Parallel()
	rdb, acct := setup(t)
	clock := clockwork.NewRealClock() // Redis's GCRA runs on the real clock
	budgettest.BurstThenRate(t, newBudget(t, rdb, acct, redisbudget.Config{RatePerMinute: 60, Burst: 4, Clock: clock}), clock)
}

// TestSharedAcrossBudgets: two Budgets on one account (two processes)
// spend one budget; another account's is untouched.
func TestSharedAcrossBudgets(t *testing.T) {
	t.Parallel()
	rdb, acct := setup(t)
	other := redistest.Account(t, redistest.URL(t))
	a := newBudget(t, rdb, acct, redisbudget.Config{RatePerMinute: 60, Burst: 4})
	b := newBudget(t, rdb, acct, redisbudget.Config{RatePerMinute: 60, Burst: 4})
	c := newBudget(t, rdb, other, redisbudget.Config{RatePerMinute: 60, Burst: 4})
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		for _, x := range []*redisbudget.Budget{a, b} {
			if err := x.Wait(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	dctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if err := b.Wait(dctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a fifth token within the second: err = %v", err)
	}
	if err := c.Wait(dctx); err != nil {
		t.Fatalf("another account's budget was spent: %v", err)
	}
}

func TestPauseHoldsTheFleet(t *testing.T) {
	t.Parallel()
	rdb, acct := setup(t)
	a := newBudget(t, rdb, acct, redisbudget.Config{RatePerMinute: -1})
	b := newBudget(t, rdb, acct, redisbudget.Config{RatePerMinute: -1})
	a.Pause(300 * time.Millisecond)
	a.Pause(time.Millisecond) // never shortens a pause in force
	if ms, _ := rdb.PTTL(context.Background(), "tradewire:{"+acct+"}:pause").Result(); ms < 200*time.Millisecond {
		t.Fatalf("pause key PTTL = %v after a shorter Pause", ms)
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
			if d := time.Since(start); d < 250*time.Millisecond {
				t.Errorf("a caller of another Budget went after %v, inside the 300ms pause", d)
			}
		}()
	}
	wg.Wait()
}

func TestPauseIsClamped(t *testing.T) {
	t.Parallel()
	rdb, acct := setup(t)
	a := newBudget(t, rdb, acct, redisbudget.Config{MaxPause: 200 * time.Millisecond})
	a.Pause(time.Hour)
	if ms, _ := rdb.PTTL(context.Background(), "tradewire:{"+acct+"}:pause").Result(); ms > 200*time.Millisecond || ms <= 0 {
		t.Fatalf("pause key PTTL = %v, want at most the 200ms cap", ms)
	}
}

func TestCancelEndsWait(t *testing.T) {
	t.Parallel()
	rdb, acct := setup(t)
	a := newBudget(t, rdb, acct, redisbudget.Config{})
	a.Pause(10 * time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- a.Wait(ctx) }()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	// The wait ended on the cancellation, not on the pause: the pause is
	// still in force.
	if ms := rdb.PTTL(context.Background(), "tradewire:{"+acct+"}:pause").Val(); ms <= 0 {
		t.Fatalf("the pause had already ended (PTTL %v): the wait was not cut short", ms)
	}
}

func TestRedisErrorsAreNotSilent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dead := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	defer dead.Close()
	if _, err := redisbudget.New(ctx, dead, "AB1", redisbudget.Config{}); err == nil || !strings.Contains(err.Error(), "PING") || !errors.Is(err, transport.ErrUnavailable) {
		t.Fatalf("New with no Redis: err = %v, want one matching transport.ErrUnavailable", err)
	}
	// A Redis that goes away later fails Wait: nothing may be sent.
	url := redistest.URL(t)
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opt)
	b, err := redisbudget.New(ctx, rdb, redistest.Account(t, url), redisbudget.Config{})
	if err != nil {
		t.Fatal(err)
	}
	rdb.Close()
	if err := b.Wait(ctx); !errors.Is(err, transport.ErrUnavailable) {
		t.Fatalf("Wait on a closed connection: err = %v, want one matching transport.ErrUnavailable", err)
	}
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	rdb, _ := setup(t)
	ctx := context.Background()
	for name, tc := range map[string]struct {
		acct string
		cfg  redisbudget.Config
		want string
	}{
		"hash tag in account": {acct: "AB}1", want: "account number"},
		"empty account":       {acct: "", want: "account number"},
		"NaN rate":            {acct: "AB1", cfg: redisbudget.Config{RatePerMinute: math.NaN()}, want: "rate"},
		"negative burst":      {acct: "AB1", cfg: redisbudget.Config{Burst: -1}, want: "burst"},
		"nil client":          {acct: "AB1", want: "client"},
	} {
		t.Run(name, func(t *testing.T) {
			c := redis.UniversalClient(rdb)
			if name == "nil client" {
				c = nil
			}
			_, err := redisbudget.New(ctx, c, tc.acct, tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one naming %q", err, tc.want)
			}
		})
	}
}

// TestTokens: the budget counts the tokens left in the fleet's bucket,
// as transport's tokens gauge reports them; a budget that does not
// throttle, or keeps a bucket per endpoint class, counts none.
func TestTokens(t *testing.T) {
	t.Parallel()
	rdb, acct := setup(t)
	budgettest.Tokens(t, newBudget(t, rdb, acct, redisbudget.Config{RatePerMinute: 60, Burst: 10}), 60, 10)
	for _, cfg := range []redisbudget.Config{{RatePerMinute: -1}, {Adaptive: true}} {
		_, other := setup(t)
		if n, ok, err := newBudget(t, rdb, other, cfg).Tokens(context.Background()); ok || err != nil {
			t.Errorf("%+v: Tokens = %v, %v, %v; want none", cfg, n, ok, err)
		}
	}
}
