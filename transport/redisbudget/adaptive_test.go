package redisbudget

import (
	"context"
	"errors"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/tradewire/tradewire/internal/adaptive"
	"github.com/tradewire/tradewire/internal/redistest"
	"github.com/tradewire/tradewire/internal/wire"
)

const (
	pathBBA    = "/api/v2/crypto/marketdata/best_bid_ask/"
	pathOrders = "/api/v2/crypto/trading/orders/"
)

func adaptiveBudget(t *testing.T, acct string, perMinute float64, burst int) *Budget {
	t.Helper()
	b, err := New(context.Background(), redistest.Client(t), acct, WithRateLimit(perMinute, burst), WithAdaptive())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// redisNow is Redis's clock, in ms.
func redisNow(t *testing.T, b *Budget) float64 {
	t.Helper()
	tm, err := b.rdb.Time(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	return float64(tm.UnixMicro()) / 1000
}

func field(t *testing.T, b *Budget, c wire.Class, name string) float64 {
	t.Helper()
	v, err := b.rdb.HGet(context.Background(), b.classKey(c), name).Result()
	if err != nil {
		t.Fatalf("%v %s: %v", c, name, err)
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// luaRate is the rate (a second) the script allows a class whose last cut,
// from wmax, was since ago: read from the wait it asks for when the
// class's arrival time is far ahead.
func luaRate(t *testing.T, b *Budget, c wire.Class, wmax float64, since time.Duration) float64 {
	t.Helper()
	ctx := context.Background()
	now := redisNow(t, b)
	const ahead = 1e6 // ms
	if err := b.rdb.HSet(ctx, b.classKey(c), "wmax", wmax, "cut", now-float64(since.Milliseconds()), "tat", now+ahead).Err(); err != nil {
		t.Fatal(err)
	}
	res, err := adaptiveTake.Run(ctx, b.rdb, []string{b.classKey(c), b.pauseKey}, b.adaptiveArgs(0)...).Int64Slice()
	if err != nil || res[0] != 0 {
		t.Fatalf("take: %v %v", res, err)
	}
	// wait = (tat - the script's now) + 1/r - tolerance, the tolerance
	// burst/ceiling.
	waitMS, scriptNow := float64(res[1])/1000, float64(res[2])/1000
	return 1000 / (waitMS - (now + ahead - scriptNow) + b.burst*1000/b.ceiling)
}

// The cubic Redis computes is package adaptive's.
func TestAdaptiveLuaIsTheCubic(t *testing.T) {
	t.Parallel()
	// 60 a minute: a token a second or more, so that the milliseconds
	// between the test's reading of the time and the script's are small
	// beside the interval the wait reveals.
	b := adaptiveBudget(t, redistest.Account(t, redistest.URL(t)), 60, 300)
	wmax := b.ceiling / 3
	for _, since := range []time.Duration{0, 10 * time.Second, 30 * time.Second, 45 * time.Second, time.Minute, 2 * time.Minute, time.Hour} {
		got := luaRate(t, b, wire.ClassMarketData, wmax, since)
		want := adaptive.Rate(b.ceiling, wmax, since.Seconds())
		// The script reads the time a little later than the test did.
		later := adaptive.Rate(b.ceiling, wmax, since.Seconds()+0.05)
		if got < want*0.99 || got > later*1.01 {
			t.Errorf("%v after a cut from %.2f/s: Redis allows %.4f/s, want %.4f (to %.4f)", since, wmax, got, want, later)
		}
	}
}

// A 429 seen by one process cuts the class for the fleet, once per
// congestion, and leaves the other classes alone.
func TestAdaptiveFleetSharesTheCut(t *testing.T) {
	t.Parallel()
	acct := redistest.Account(t, redistest.URL(t))
	// 100 a second, bursts of 300: 99 a second and 275 here.
	a := adaptiveBudget(t, acct, 6000, 300)
	b := adaptiveBudget(t, acct, 6000, 300)
	ctx := context.Background()
	for i := 0; i < 275; i++ {
		if err := a.WaitFor(ctx, "GET", pathBBA); err != nil {
			t.Fatal(err)
		}
	}
	granted := time.Now()
	a.Answered("GET", pathBBA, granted, 429)
	// The burst went out at once: the measured rate (275 grants with a
	// 10 s time constant, 27.5 a second) is what the cut starts from.
	wmax := field(t, a, wire.ClassMarketData, "wmax")
	if wmax < 25 || wmax > 27.6 {
		t.Fatalf("cut from %.2f/s, want the measured ~27.5", wmax)
	}
	cut := field(t, a, wire.ClassMarketData, "cut")
	// The other process sees the cut: its bucket is empty, a token is
	// 1/(13.75/s) = 73 ms away, and a 20 ms deadline is refused at once.
	dctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if err := b.WaitFor(dctx, "GET", "/api/v1/crypto/marketdata/best_bid_ask/"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the other process took a market-data token after the cut: %v", err)
	}
	// Its other classes keep their whole burst.
	for i := 0; i < 275; i++ {
		if err := b.WaitFor(ctx, "POST", pathOrders); err != nil {
			t.Fatalf("order write %d: %v", i, err)
		}
	}
	// A 429 to a request granted before the cut, from either process, is
	// the same congestion.
	b.Answered("GET", pathBBA, granted.Add(-time.Millisecond), 429)
	if got := field(t, a, wire.ClassMarketData, "cut"); got != cut {
		t.Fatalf("a 429 to a request granted before the cut cut again")
	}
	// Other answers never cut; a later 429 does.
	b.Answered("GET", pathBBA, time.Now(), 200)
	if got := field(t, a, wire.ClassMarketData, "cut"); got != cut {
		t.Fatalf("a 200 cut")
	}
	b.Answered("GET", pathBBA, time.Now(), 429)
	if got := field(t, a, wire.ClassMarketData, "cut"); got == cut {
		t.Fatalf("a 429 to a request granted after the cut did not cut")
	}
	// The second cut starts from the rate since the first (half of wmax,
	// grown a little while the test ran), not from wmax.
	if got := field(t, a, wire.ClassMarketData, "wmax"); got > wmax*0.6 {
		t.Fatalf("second cut from %.2f/s, want from about half of %.2f", got, wmax)
	}
}

// The rate grows back, for the fleet, to the ceiling and no further.
func TestAdaptiveFleetProbesBackToTheCeiling(t *testing.T) {
	t.Parallel()
	b := adaptiveBudget(t, redistest.Account(t, redistest.URL(t)), 60, 300)
	wmax := b.ceiling / 2
	prev := 0.0
	for _, since := range []time.Duration{0, 20 * time.Second, 40 * time.Second, time.Minute, 90 * time.Second, 10 * time.Minute} {
		r := luaRate(t, b, wire.ClassOrderReads, wmax, since)
		if r < prev*0.99 {
			t.Fatalf("at +%v the rate fell to %.3f/s with no 429", since, r)
		}
		if r > b.ceiling*1.01 {
			t.Fatalf("at +%v the rate %.3f/s is above the ceiling %.3f", since, r, b.ceiling)
		}
		prev = r
	}
	if math.Abs(prev-b.ceiling) > 0.01*b.ceiling {
		t.Fatalf("10 min after a cut the rate is %.3f/s, not the ceiling %.3f", prev, b.ceiling)
	}
	// Control: the cut's own rate is half.
	if r := luaRate(t, b, wire.ClassOrderReads, wmax, 0); math.Abs(r-wmax*adaptive.Beta) > 0.01*wmax {
		t.Fatalf("just after the cut: %.3f/s, want %.3f", r, wmax*adaptive.Beta)
	}
}

// Without WithAdaptive the budget is the account-wide GCRA: a 429 cuts
// nothing.
func TestNotAdaptiveLearnsNothing(t *testing.T) {
	t.Parallel()
	acct := redistest.Account(t, redistest.URL(t))
	b, err := New(context.Background(), redistest.Client(t), acct, WithRateLimit(6000, 300))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := b.WaitFor(ctx, "GET", pathBBA); err != nil {
		t.Fatal(err)
	}
	b.Answered("GET", pathBBA, time.Now(), 429)
	if n, err := b.rdb.Exists(ctx, b.classKey(wire.ClassMarketData)).Result(); err != nil || n != 0 {
		t.Fatalf("a budget without WithAdaptive kept class state (%d, %v)", n, err)
	}
}
