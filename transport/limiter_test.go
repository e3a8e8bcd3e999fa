package transport

import (
	"context"
	"errors"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/tradewire/tradewire/internal/adaptive"
)

func TestTokenBucketBurstThenRate(t *testing.T) {
	ctx := testContext(t)
	clock := clockwork.NewFakeClockAt(t0)
	// One a second, bursts of 3 at the venue: the bucket holds 2, keeping
	// back the venue's refill over adaptive.MaxGrantDelay.
	b := NewTokenBucket(clock, 60, 3)
	for i := 0; i < 2; i++ {
		if err := b.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan time.Time, 1)
	go func() {
		if err := b.Wait(ctx); err != nil {
			t.Error(err)
		}
		done <- clock.Now()
	}()
	if err := clock.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal(err)
	}
	// One a second, refilled adaptive.RateMargin under: the third token is
	// 1/(1-margin) s away.
	want := time.Duration(math.Ceil(float64(time.Second) / (1 - adaptive.RateMargin)))
	clock.Advance(want - time.Millisecond)
	select {
	case <-done:
		t.Fatal("the third token came before the bucket refilled")
	default:
	}
	clock.Advance(time.Millisecond)
	if at := <-done; at.Sub(t0) != want {
		t.Fatalf("third token at +%v, want +%v", at.Sub(t0), want)
	}
	if want <= time.Second || want > 1011*time.Millisecond {
		t.Fatalf("margin gives %v a token; want just over 1s", want)
	}
}

func TestTokenBucketCancelRefunds(t *testing.T) {
	ctx := testContext(t)
	clock := clockwork.NewFakeClockAt(t0)
	b := NewTokenBucket(clock, 60, 1)
	if err := b.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { errc <- b.Wait(wctx) }()
	if err := clock.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	// The cancelled reservation was given back: one token's time later a
	// token is there at once.
	clock.Advance(time.Duration(math.Ceil(float64(time.Second) / (1 - adaptive.RateMargin))))
	if d := b.(*tokenBucket).reserveForTest(); d != 0 {
		t.Fatalf("token after refund is %v away, want 0", d)
	}
}

func (b *tokenBucket) reserveForTest() time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.reserve(b.clock.Now())
}

func TestTokenBucketRefusesWaitPastDeadline(t *testing.T) {
	ctx := testContext(t)
	clock := clockwork.NewFakeClockAt(t0)
	b := NewTokenBucket(clock, 60, 1)
	_ = b.Wait(ctx)
	dctx, cancel := withFakeDeadline(ctx, clock, 500*time.Millisecond)
	defer cancel()
	if err := b.Wait(dctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want an immediate deadline error", err)
	}
	if clock.Since(t0) != 0 {
		t.Fatal("time passed")
	}
}

func TestTokenBucketPauseHoldsEveryCaller(t *testing.T) {
	ctx := testContext(t)
	clock := clockwork.NewFakeClockAt(t0)
	b := NewTokenBucket(clock, 0, 0) // throttle off: pauses only
	b.Pause(5 * time.Second)
	b.Pause(time.Second) // never shortens a pause in force
	var wg sync.WaitGroup
	times := make(chan time.Duration, 3)
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := b.Wait(ctx); err != nil {
				t.Error(err)
			}
			times <- clock.Since(t0)
		}()
	}
	if err := clock.BlockUntilContext(ctx, 3); err != nil {
		t.Fatal(err)
	}
	clock.Advance(5 * time.Second)
	wg.Wait()
	close(times)
	for d := range times {
		if d != 5*time.Second {
			t.Errorf("a caller went at +%v, want +5s", d)
		}
	}
}

// TestThrottleKeepsUnderBudget sends more requests than the burst through
// one client from many goroutines and checks, from the venue's side, that
// no window of a minute saw more than the burst plus the minute's refill.
func TestThrottleKeepsUnderBudget(t *testing.T) {
	ctx := testContext(t)
	clock := clockwork.NewFakeClockAt(t0)
	v := newVenue(t, clock)
	v.arrived = make(chan received, 1000)
	// Attempts get a long timeout: the clock runs on while requests are in flight.
	c, err := New(v.srv.URL, testSigner(t), Config{Clock: clock, RatePerMinute: 60, Burst: 10, AttemptTimeout: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	const n = 40
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		go func() { _, err := c.Get(ctx, "/a/"); errs <- err }()
	}
	// Play the clock forward whenever someone waits on it, until all are
	// through.
	driveCtx, stop := context.WithCancel(ctx)
	go func() {
		for clock.BlockUntilContext(driveCtx, 1) == nil {
			clock.Advance(100 * time.Millisecond)
		}
	}()
	for i := 0; i < n; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	stop()
	reqs := v.requests()
	first := t0 // the bucket started full at t0
	for _, r := range reqs {
		// At most burst (10) plus one a second since the start.
		allowed := 10 + int(r.at.Sub(first)/time.Second)
		count := 0
		for _, q := range reqs {
			if !q.at.After(r.at) {
				count++
			}
		}
		if count > allowed {
			t.Fatalf("%d requests by +%v, budget allows %d", count, r.at.Sub(first), allowed)
		}
	}
	if last := reqs[len(reqs)-1].at.Sub(first); last < 29*time.Second {
		t.Fatalf("40 requests at 1/s after a burst of 10 finished in %v", last)
	}
}

// TestRateLimitedPausesWholeClient: a 429 to one caller holds back a
// concurrent caller on the same client for the clamped delay.
func TestRateLimitedPausesWholeClient(t *testing.T) {
	ctx := testContext(t)
	clock := clockwork.NewFakeClockAt(t0)
	v := newVenue(t, clock, withRetryAfter(429, "4"), reply{status: 200, body: `{}`})
	log := newEventLog()
	c := newTestClient(t, v, log, Config{RatePerMinute: 6000, Burst: 100})
	first := make(chan error, 1)
	go func() { _, err := c.Get(ctx, "/first/"); first <- err }()
	if ev := <-log.events; ev.Status != 429 || !ev.Retry {
		t.Fatalf("event = %+v", ev)
	}
	second := make(chan error, 1)
	go func() { _, err := c.Get(ctx, "/second/"); second <- err }()
	if err := clock.BlockUntilContext(ctx, 2); err != nil { // the backoff and the paused caller
		t.Fatal(err)
	}
	if n := len(v.requests()); n != 1 {
		t.Fatalf("the venue saw %d requests during the pause", n)
	}
	clock.Advance(4 * time.Second)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := <-second; err != nil {
		t.Fatal(err)
	}
	for _, r := range v.requests()[1:] {
		if r.at.Sub(t0) < 4*time.Second {
			t.Fatalf("%s sent at +%v, inside the pause", r.target, r.at.Sub(t0))
		}
	}
}

// clockwork.WithTimeout's context (v0.5.0) blocks in Err until it is done;
// Wait must not ask it before waiting.
func TestTokenBucketWaitsUnderClockworkTimeout(t *testing.T) {
	ctx := testContext(t)
	clock := clockwork.NewFakeClockAt(t0)
	b := NewTokenBucket(clock, 60, 1)
	cctx, cancel := clockwork.WithTimeout(ctx, clock, time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- b.Wait(cctx) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("first token: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("Wait hung on a clockwork.WithTimeout context")
	}
}

// TestRateLimitNegativeIsOff: a negative RatePerMinute turns the client's
// bucket off (as an infinite venue.RateLimit turns the simulated venue's off): more
// tokens than the default burst are taken on a clock that never moves,
// and no one ever waits on it. Config reports the setting, its zero
// filled in with the venue's budget.
func TestRateLimitNegativeIsOff(t *testing.T) {
	ctx := testContext(t)
	clock := clockwork.NewFakeClockAt(t0)
	c, err := New("https://trading.robinhood.com", testSigner(t), Config{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	if cfg := c.Config(); cfg.RatePerMinute != adaptive.PerMinute || cfg.Burst != adaptive.Burst {
		t.Errorf("default Config() rate %v, burst %d; want %v, %d", cfg.RatePerMinute, cfg.Burst, adaptive.PerMinute, adaptive.Burst)
	}
	for _, tc := range []struct {
		name string
		rate float64
		off  bool
	}{
		{"RatePerMinute -1", -1, true},
		{"default", 0, false},
	} {
		c, err := New("https://trading.robinhood.com", testSigner(t), Config{Clock: clock, RatePerMinute: tc.rate})
		if err != nil {
			t.Fatal(err)
		}
		wctx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			for range adaptive.Burst + 50 {
				if err := c.limiter.Wait(wctx); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
		waited := make(chan error, 1)
		go func() { waited <- clock.BlockUntilContext(wctx, 1) }()
		select {
		case err := <-done:
			if !tc.off || err != nil {
				t.Errorf("%s: %d tokens taken without a wait (err %v); want off %v", tc.name, adaptive.Burst+50, err, tc.off)
			}
			stop()
			<-waited
		case <-waited:
			if tc.off {
				t.Errorf("%s: a token was waited for; want the bucket off", tc.name)
			}
			stop()
			<-done
		}
	}
}
