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
	b, err := New(context.Background(), redistest.Client(t), acct, Config{RatePerMinute: perMinute, Burst: burst, Adaptive: true})
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

// take runs the take script once for class c and returns whether it
// granted a token and the wait it asks for otherwise.
func take(t *testing.T, b *Budget, c wire.Class) (bool, time.Duration) {
	t.Helper()
	res, err := adaptiveTake.Run(context.Background(), b.rdb, []string{b.classKey(c), b.pauseKey}, b.adaptiveArgs(0)...).Int64Slice()
	if err != nil || len(res) != 3 {
		t.Fatalf("take: %v %v", res, err)
	}
	return res[0] == 1, time.Duration(res[1]) * time.Microsecond
}

// backdate moves class c's last cut and probe since earlier, as if that
// much time had passed on Redis's clock.
func backdate(t *testing.T, b *Budget, c wire.Class, since time.Duration) {
	t.Helper()
	ms := float64(since.Milliseconds())
	ctx := context.Background()
	for _, f := range []string{"empty", "probe", "tat"} {
		if err := b.rdb.HSet(ctx, b.classKey(c), f, field(t, b, c, f)-ms).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// The schedule Redis runs is package adaptive's: a first 429 holds the
// class at nothing until Measure; one Measure to Window after the last
// holds it at adaptive.Hold of the tokens granted between, until Every;
// one outside that window measures nothing.
func TestAdaptiveLuaIsTheSchedule(t *testing.T) {
	t.Parallel()
	// 60 a minute: a token a second or more, so that the milliseconds
	// between the test's reading of the time and the script's are small
	// beside the intervals the waits reveal.
	b := adaptiveBudget(t, redistest.Account(t, redistest.URL(t)), 60, 300)
	c := wire.ClassMarketData
	for i := 0; i < 5; i++ {
		if ok, _ := take(t, b, c); !ok {
			t.Fatalf("token %d of the burst refused", i+1)
		}
	}
	b.Answered("GET", pathBBA, time.Now(), 429)
	before := redisNow(t, b)
	if got := field(t, b, c, "hold"); got != 0 {
		t.Fatalf("a first 429 holds at %v/s, want nothing", got)
	}
	if got := field(t, b, c, "probe") - before; math.Abs(got-float64(adaptive.Measure.Milliseconds())) > 50 {
		t.Fatalf("a first 429's probe is %.0f ms on, want Measure", got)
	}
	if ok, wait := take(t, b, c); ok || math.Abs(wait.Seconds()-adaptive.Measure.Seconds()) > 0.05 {
		t.Fatalf("held at nothing, take: %v, wait %v; want refused for Measure", ok, wait)
	}
	// Measure later, the class is at the ceiling with an empty bucket.
	backdate(t, b, c, adaptive.Measure)
	if ok, wait := take(t, b, c); ok || math.Abs(wait.Seconds()-1/b.ceiling) > 0.05 {
		t.Fatalf("at the probe, take: %v, wait %v; want one interval of the ceiling", ok, wait)
	}
	// 30 granted (by any process) over the 25 s to the next 429.
	if err := b.rdb.HSet(context.Background(), b.classKey(c), "granted", 30).Err(); err != nil {
		t.Fatal(err)
	}
	backdate(t, b, c, 15*time.Second)
	b.Answered("GET", pathBBA, time.Now(), 429)
	want, _ := adaptive.Hold(b.ceiling, 30, 25)
	if got := field(t, b, c, "hold"); math.Abs(got-want) > 0.01*want {
		t.Fatalf("30 granted in 25 s: holds at %.4f/s, want adaptive.Hold's %.4f", got, want)
	}
	now := redisNow(t, b)
	if got := field(t, b, c, "probe") - now; math.Abs(got-float64(adaptive.Every.Milliseconds())) > 50 {
		t.Fatalf("a measured 429's probe is %.0f ms on, want Every", got)
	}
	if got := field(t, b, c, "granted"); got != 0 {
		t.Fatalf("granted %v after a cut, want 0", got)
	}
	// Empty at the hold's rate: a token is an interval of the hold away.
	if ok, wait := take(t, b, c); ok || math.Abs(wait.Seconds()-1/want) > 0.05 {
		t.Fatalf("held, take: %v, wait %v; want %.3fs", ok, wait, 1/want)
	}
	// Every later, the probe: the ceiling again.
	backdate(t, b, c, adaptive.Every)
	if err := b.rdb.HSet(context.Background(), b.classKey(c), "tat", redisNow(t, b)).Err(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if ok, wait := take(t, b, c); !ok {
			t.Fatalf("at the probe, token %d refused (wait %v)", i+1, wait)
		}
	}
	if got := field(t, b, c, "granted"); got != 3 {
		t.Fatalf("granted %v, want the 3 taken", got)
	}
	// A 429 after more than Window measures nothing.
	backdate(t, b, c, adaptive.Window)
	b.Answered("GET", pathBBA, time.Now(), 429)
	if got := field(t, b, c, "hold"); got != 0 {
		t.Fatalf("a 429 past Window holds at %v/s, want nothing", got)
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
	cut := field(t, a, wire.ClassMarketData, "empty")
	// The other process sees the cut: the class holds at nothing for
	// Measure, and a 20 ms deadline is refused at once.
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
	if got := field(t, a, wire.ClassMarketData, "empty"); got != cut {
		t.Fatalf("a 429 to a request granted before the cut cut again")
	}
	// Other answers never cut; a later 429 does.
	b.Answered("GET", pathBBA, time.Now(), 200)
	if got := field(t, a, wire.ClassMarketData, "empty"); got != cut {
		t.Fatalf("a 200 cut")
	}
	b.Answered("GET", pathBBA, time.Now(), 429)
	if got := field(t, a, wire.ClassMarketData, "empty"); got == cut {
		t.Fatalf("a 429 to a request granted after the cut did not cut")
	}
}

// The tokens every process takes count toward the measurement.
func TestAdaptiveFleetCountsEveryGrant(t *testing.T) {
	t.Parallel()
	acct := redistest.Account(t, redistest.URL(t))
	a := adaptiveBudget(t, acct, 6000, 300)
	b := adaptiveBudget(t, acct, 6000, 300)
	a.Answered("GET", pathOrders, time.Now(), 429)
	backdate(t, a, wire.ClassOrderReads, adaptive.Measure)
	ctx := context.Background()
	for i := 0; i < 4; i++ {
		for _, m := range []*Budget{a, b} {
			if err := m.WaitFor(ctx, "GET", pathOrders); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got := field(t, a, wire.ClassOrderReads, "granted"); got != 8 {
		t.Fatalf("granted %v after 4 tokens each from two processes, want 8", got)
	}
}

// Without Adaptive the budget is the account-wide GCRA: a 429 cuts
// nothing.
func TestNotAdaptiveLearnsNothing(t *testing.T) {
	t.Parallel()
	acct := redistest.Account(t, redistest.URL(t))
	b, err := New(context.Background(), redistest.Client(t), acct, Config{RatePerMinute: 6000, Burst: 300})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := b.WaitFor(ctx, "GET", pathBBA); err != nil {
		t.Fatal(err)
	}
	b.Answered("GET", pathBBA, time.Now(), 429)
	if n, err := b.rdb.Exists(ctx, b.classKey(wire.ClassMarketData)).Result(); err != nil || n != 0 {
		t.Fatalf("a budget without Adaptive kept class state (%d, %v)", n, err)
	}
}
