package transport

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/tradewire/tradewire/internal/adaptive"
	"github.com/tradewire/tradewire/internal/wire"
)

// classLimiter is a Limiter that keeps one budget per endpoint class of
// the venue — market data (best bid/ask, estimated price, trading pairs),
// account reads (accounts, holdings), order reads, and order writes
// (creates and cancels) — and learns each class's rate from the venue's
// answers, v1 and v2 paths alike: Config.Adaptive's, or a Limiter in
// Config.Limiter with these methods too (package redisbudget's Budget). A
// Client with one calls WaitFor instead of Wait before every attempt (and
// every replay by net/http) and Answered after every answer it read.
//
// WaitFor is Wait for one request of method to path (without its query
// string). Answered reports the status the venue answered such a request
// with; grantedAt is when WaitFor returned for it, on the clock the
// limiter and the client share. Wait takes from a class of its own, apart
// from the venue's endpoints; Pause pauses every class.
type classLimiter interface {
	Limiter
	WaitFor(ctx context.Context, method, path string) error
	Answered(method, path string, grantedAt time.Time, status int)
}

// adaptiveLimiter is the classLimiter newAdaptiveLimiter returns.
type adaptiveLimiter struct {
	clock   clockwork.Clock
	ceiling float64       // requests a second; 0 means unlimited (pauses still apply)
	burst   float64       // at the ceiling; a class's burst scales with its rate
	every   time.Duration // adaptive.Every: a measured class's hold before its probe

	pause adaptive.Pause

	mu      sync.Mutex
	classes [wire.NumClasses]classBudget

	// waited, when set, is told how long each wait that had to wait for
	// its token waited (the client's telemetry).
	waited func(ctx context.Context, d time.Duration)
}

// classBudget is one class's token bucket and what it learnt.
type classBudget struct {
	tokens float64
	last   time.Time
	// emptyAt is the class's last cut, when a 429 showed the venue's
	// bucket empty (zero before the first: the class is at the ceiling);
	// granted counts the tokens granted since.
	emptyAt time.Time
	granted float64
	// Until probeAt the class holds at hold (nothing at all when 0); from
	// it on, it is back at the ceiling.
	hold    float64
	probeAt time.Time
	// gen counts cuts: a waiter that reserved before a cut reserves again.
	gen uint64
}

// newAdaptiveLimiter returns a classLimiter on clock (the real clock
// when nil) that starts every class at the budget NewTokenBucket keeps to
// for a venue allowing perMinute requests a minute in bursts of burst
// (adaptive.Headroom), its ceiling, and learns each class's rate from the venue's
// 429s, the one signal the venue gives:
//
//   - A 429 to a request granted since the class's last cut cuts it and
//     empties its bucket (the venue's is empty); 429s to requests granted
//     before that cut are the same congestion and do not cut again.
//   - The first cut, or one less than 10 s after the last, holds the
//     class at nothing for 10 s and then sends at the ceiling: the venue's
//     bucket gains 10 s of its rate, which the ceiling spends until the
//     next 429.
//   - A cut 10 s to 2 min after the last measures the venue's rate: its
//     bucket was empty at both 429s, so the requests granted in between
//     (less the one refused) over the interval are its refill rate. The
//     class holds just under it, at (admitted-1)/interval, for 55 s, and
//     then probes: back at the ceiling, it draws one 429 as soon as what
//     the venue's bucket gained during the hold is spent (the next
//     measurement), or none if the venue's capacity is back.
//
// A drop in the venue's capacity so costs two 429s (the one that reveals
// it, the one that measures it) and one more about each 55 s it lasts,
// and a restore is back at the ceiling within 55 s of its time; package
// internal/adaptive states why no budget can find restores within a
// minute with fewer than one 429 a minute. The count of granted requests
// includes any that never reached the venue (a transport failure after
// the grant), which the margin of one in (admitted-1) absorbs when rare.
// A class never goes above the ceiling (adaptive.Headroom's rate) and,
// while held, never under 1 % of it; its burst is the ceiling's scaled by
// its rate.
//
// Classes learn apart: a 429 on market data leaves order writes at their
// rate. Pause, which the client calls on every 429, still pauses every
// class, as NewTokenBucket's does. perMinute <= 0 turns the throttle and
// the learning off; pauses still apply. It is safe for concurrent use, and
// its waits behave as NewTokenBucket describes.
func newAdaptiveLimiter(clock clockwork.Clock, perMinute float64, burst int) *adaptiveLimiter {
	if clock == nil {
		clock = clockwork.NewRealClock()
	}
	l := &adaptiveLimiter{clock: clock, every: adaptive.Every}
	now := clock.Now()
	if perMinute > 0 && !math.IsInf(perMinute, 1) {
		rate, n := adaptive.Headroom(perMinute, burst)
		l.ceiling, l.burst = rate/60, float64(n)
	}
	for i := range l.classes {
		l.classes[i] = classBudget{tokens: l.burst, last: now}
	}
	return l
}

// rate is the class's rate at now.
func (l *adaptiveLimiter) rate(cb *classBudget, now time.Time) float64 {
	if cb.emptyAt.IsZero() || !now.Before(cb.probeAt) {
		return l.ceiling
	}
	return cb.hold
}

// refill brings the class's bucket to now, and returns its rate there.
func (l *adaptiveLimiter) refill(cb *classBudget, now time.Time) float64 {
	if now.After(cb.last) {
		if from := cb.last; from.Before(cb.probeAt) {
			// The hold, then the ceiling from probeAt.
			to := now
			if to.After(cb.probeAt) {
				to = cb.probeAt
			}
			cb.tokens += to.Sub(from).Seconds() * cb.hold
			cb.tokens += now.Sub(to).Seconds() * l.ceiling
		} else {
			cb.tokens += now.Sub(from).Seconds() * l.rate(cb, now)
		}
		cb.last = now
	}
	r := l.rate(cb, now)
	cb.tokens = math.Min(cb.tokens, math.Max(1, l.burst*r/l.ceiling))
	return r
}

// until is how long after now the class's bucket gains need tokens.
func (l *adaptiveLimiter) until(cb *classBudget, now time.Time, need float64) time.Duration {
	secs := 0.0
	if now.Before(cb.probeAt) {
		held := cb.probeAt.Sub(now).Seconds()
		if cb.hold > 0 && need <= held*cb.hold {
			return time.Duration(math.Ceil(need / cb.hold * float64(time.Second)))
		}
		secs, need = held, need-held*cb.hold
	}
	return time.Duration(math.Ceil((secs + need/l.ceiling) * float64(time.Second)))
}

// reserve takes a token of the class (the balance may go negative: a debt
// later callers queue behind) and returns how long the caller must wait
// for it, and the class's generation it was taken in.
func (l *adaptiveLimiter) reserve(cb *classBudget, now time.Time) (time.Duration, uint64) {
	var d time.Duration
	if l.ceiling > 0 {
		l.refill(cb, now)
		cb.tokens--
		if cb.tokens < 0 {
			d = l.until(cb, now, -cb.tokens)
		}
	}
	if p := l.pause.Left(now); p > d {
		d = p
	}
	return d, cb.gen
}

// Wait implements Limiter: it takes from ClassOther.
func (l *adaptiveLimiter) Wait(ctx context.Context) error {
	return l.wait(ctx, &l.classes[wire.ClassOther])
}

// WaitFor implements classLimiter.
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
	if d <= 0 {
		cb.granted++
	}
	l.mu.Unlock()
	if d <= 0 {
		return nil
	}
	from := now
	for d > 0 {
		if err := adaptive.WaitToken(ctx, l.clock, now, d, "transport"); err != nil {
			l.unreserve(cb, gen)
			return err
		}
		l.mu.Lock()
		now = l.clock.Now()
		if cb.gen != gen {
			// The class was cut while this caller slept: its token was
			// dropped with the bucket; queue again at the new rate.
			d, gen = l.reserve(cb, now)
		} else {
			d = l.pause.Left(now) // a pause may have begun
		}
		if d <= 0 {
			cb.granted++
		}
		l.mu.Unlock()
	}
	if l.waited != nil {
		l.waited(ctx, now.Sub(from))
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

// Answered implements classLimiter: a 429 to a request granted since
// the class's last cut cuts it again.
func (l *adaptiveLimiter) Answered(method, path string, grantedAt time.Time, status int) {
	if status != 429 || l.ceiling == 0 {
		return
	}
	cb := &l.classes[wire.ClassOf(method, path)]
	l.mu.Lock()
	defer l.mu.Unlock()
	if !cb.emptyAt.IsZero() && !grantedAt.After(cb.emptyAt) {
		return // already cut for this congestion
	}
	l.cut(cb, l.clock.Now())
}

// cut is a congestion that began with a 429 answered at now: the class's
// bucket is empty, as the venue's is, and it holds at what the interval
// since its last cut measured, or at nothing, until its next probe.
func (l *adaptiveLimiter) cut(cb *classBudget, now time.Time) {
	hold, measured := 0.0, false
	if !cb.emptyAt.IsZero() {
		hold, measured = adaptive.Hold(l.ceiling, cb.granted, now.Sub(cb.emptyAt).Seconds())
	}
	cb.probeAt = now.Add(adaptive.Measure)
	if measured {
		cb.probeAt = now.Add(l.every)
	}
	cb.hold = hold
	cb.emptyAt = now
	cb.granted = 0
	cb.tokens = 0
	cb.last = now
	cb.gen++
}

// Pause implements Limiter: it pauses every class.
func (l *adaptiveLimiter) Pause(d time.Duration) { l.pause.Extend(l.clock.Now(), d) }
