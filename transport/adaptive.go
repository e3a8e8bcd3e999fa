package transport

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/tradewire/tradewire/internal/adaptive"
	"github.com/tradewire/tradewire/internal/wire"
)

// AdaptiveLimiter is a Limiter that keeps one budget per endpoint class of
// the venue — market data (best bid/ask, estimated price, trading pairs),
// account reads (accounts, holdings), order reads, and order writes
// (creates and cancels) — and learns each class's rate from the venue's
// answers, v1 and v2 paths alike. A Client whose Limiter is an
// AdaptiveLimiter calls WaitFor instead of Wait before every attempt and
// Answered after every answer it read. Implementations must be safe for
// concurrent use.
//
// WaitFor is Wait for one request of method to path (without its query
// string). Answered reports the status the venue answered such a request
// with; grantedAt is when WaitFor returned for it, on the clock the
// limiter and the client share. Wait takes from a class of its own, apart
// from the venue's endpoints; Pause pauses every class.
type AdaptiveLimiter interface {
	Limiter
	WaitFor(ctx context.Context, method, path string) error
	Answered(method, path string, grantedAt time.Time, status int)
}

// adaptiveLimiter is the AdaptiveLimiter NewAdaptiveLimiter returns.
type adaptiveLimiter struct {
	clock   clockwork.Clock
	ceiling float64 // requests a second; 0 means unlimited (pauses still apply)
	burst   float64 // at the ceiling; a class's burst scales with its rate

	mu          sync.Mutex
	pausedUntil time.Time
	classes     [wire.NumClasses]classBudget
}

// classBudget is one class's token bucket and what it learnt.
type classBudget struct {
	tokens float64
	last   time.Time
	// cutAt is the last cut, zero before the first (the class is then at
	// the ceiling); wmax is the rate the cut started from.
	cutAt time.Time
	wmax  float64
	// gen counts cuts: a waiter that reserved before a cut reserves again.
	gen uint64
	// sent is the measured sending rate (an exponentially weighted count
	// of grants, time constant adaptive.Tau), as of sentAt.
	sent   float64
	sentAt time.Time
}

// NewAdaptiveLimiter returns an AdaptiveLimiter on clock (the real clock
// when nil) that starts every class at the budget NewTokenBucket keeps to
// for a venue allowing perMinute requests a minute in bursts of burst
// (Headroom) and learns each class's rate from the venue's answers:
//
//   - A 429 cuts the class's rate to half of the lower of its rate and the
//     rate it was measured sending at, and empties its bucket (the venue's
//     is empty). Answers to requests granted before that cut do not cut
//     again: one congestion event, one cut.
//   - While no 429 comes, the rate grows back along CUBIC's cubic: quickly
//     at first, slowly near 90 % of the rate that drew the 429, then faster
//     again to probe for more. Cut from 99 to 49.5 a minute, it is back at
//     the ceiling 73 s later. It never goes above the ceiling (Headroom's
//     rate) nor under 1 % of it.
//   - A class's burst is the ceiling's burst scaled by its rate.
//
// Classes learn apart: a 429 on market data leaves order writes at their
// rate. Pause, which the client calls on every 429, still pauses every
// class, as NewTokenBucket's does. perMinute <= 0 turns the throttle and
// the learning off; pauses still apply. It is safe for concurrent use, and
// its waits behave as NewTokenBucket describes.
func NewAdaptiveLimiter(clock clockwork.Clock, perMinute float64, burst int) AdaptiveLimiter {
	if clock == nil {
		clock = clockwork.NewRealClock()
	}
	l := &adaptiveLimiter{clock: clock}
	now := clock.Now()
	if perMinute > 0 && !math.IsInf(perMinute, 1) {
		rate, n := Headroom(perMinute, burst)
		l.ceiling, l.burst = rate/60, float64(n)
	}
	for i := range l.classes {
		l.classes[i] = classBudget{tokens: l.burst, last: now, sentAt: now}
	}
	return l
}

// rate is the class's rate at now.
func (l *adaptiveLimiter) rate(cb *classBudget, now time.Time) float64 {
	if cb.cutAt.IsZero() {
		return l.ceiling
	}
	return adaptive.Rate(l.ceiling, cb.wmax, now.Sub(cb.cutAt).Seconds())
}

// refill brings the class's bucket to now.
func (l *adaptiveLimiter) refill(cb *classBudget, now time.Time) float64 {
	r := l.rate(cb, now)
	if now.After(cb.last) {
		r0 := l.rate(cb, cb.last)
		cb.tokens += now.Sub(cb.last).Seconds() * (r0 + r) / 2
		cb.last = now
	}
	cb.tokens = math.Min(cb.tokens, math.Max(1, l.burst*r/l.ceiling))
	return r
}

// measured is the class's sending rate at now, counting one more grant
// when add.
func (cb *classBudget) measured(now time.Time, add bool) float64 {
	if now.After(cb.sentAt) {
		cb.sent *= math.Exp(-now.Sub(cb.sentAt).Seconds() / adaptive.Tau.Seconds())
		cb.sentAt = now
	}
	if add {
		cb.sent += 1 / adaptive.Tau.Seconds()
	}
	return cb.sent
}

// reserve takes a token of the class (the balance may go negative: a debt
// later callers queue behind) and returns how long the caller must wait
// for it, and the class's generation it was taken in.
func (l *adaptiveLimiter) reserve(cb *classBudget, now time.Time) (time.Duration, uint64) {
	var d time.Duration
	if l.ceiling > 0 {
		r := l.refill(cb, now)
		cb.tokens--
		if cb.tokens < 0 {
			d = time.Duration(math.Ceil(-cb.tokens / r * float64(time.Second)))
		}
		cb.measured(now.Add(d), true)
	}
	if p := l.pausedUntil.Sub(now); p > d {
		d = p
	}
	return d, cb.gen
}

// Wait implements Limiter: it takes from ClassOther.
func (l *adaptiveLimiter) Wait(ctx context.Context) error {
	return l.wait(ctx, &l.classes[wire.ClassOther])
}

// WaitFor implements AdaptiveLimiter.
func (l *adaptiveLimiter) WaitFor(ctx context.Context, method, path string) error {
	return l.wait(ctx, &l.classes[wire.ClassOf(method, path)])
}

func (l *adaptiveLimiter) wait(ctx context.Context, cb *classBudget) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	default:
	}
	l.mu.Lock()
	now := l.clock.Now()
	d, gen := l.reserve(cb, now)
	l.mu.Unlock()
	for d > 0 {
		if dl, ok := ctx.Deadline(); ok && now.Add(d).After(dl) {
			l.unreserve(cb, gen)
			return fmt.Errorf("transport: rate budget: a token is %v away, past the context deadline: %w", d, context.DeadlineExceeded)
		}
		t := l.clock.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			l.unreserve(cb, gen)
			return ctx.Err()
		case <-t.Chan():
		}
		l.mu.Lock()
		now = l.clock.Now()
		if cb.gen != gen {
			// The class was cut while this caller slept: its token was
			// dropped with the bucket; queue again at the new rate.
			d, gen = l.reserve(cb, now)
		} else {
			d = l.pausedUntil.Sub(now) // a pause may have begun
		}
		l.mu.Unlock()
	}
	return nil
}

func (l *adaptiveLimiter) unreserve(cb *classBudget, gen uint64) {
	if l.ceiling == 0 {
		return
	}
	l.mu.Lock()
	if cb.gen == gen {
		cb.tokens++
	}
	l.mu.Unlock()
}

// Answered implements AdaptiveLimiter: a 429 to a request granted since
// the class's last cut cuts it again.
func (l *adaptiveLimiter) Answered(method, path string, grantedAt time.Time, status int) {
	if status != 429 || l.ceiling == 0 {
		return
	}
	cb := &l.classes[wire.ClassOf(method, path)]
	l.mu.Lock()
	defer l.mu.Unlock()
	if !cb.cutAt.IsZero() && !grantedAt.After(cb.cutAt) {
		return // already cut for this congestion
	}
	now := l.clock.Now()
	cb.wmax = adaptive.Cut(l.ceiling, l.refill(cb, now), cb.measured(now, false))
	cb.cutAt = now
	cb.tokens = 0
	cb.last = now
	cb.gen++
}

// Pause implements Limiter: it pauses every class.
func (l *adaptiveLimiter) Pause(d time.Duration) {
	if d <= 0 {
		return
	}
	l.mu.Lock()
	if until := l.clock.Now().Add(d); until.After(l.pausedUntil) {
		l.pausedUntil = until
	}
	l.mu.Unlock()
}
