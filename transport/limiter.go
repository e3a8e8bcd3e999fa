package transport

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/tradewire/tradewire/internal/adaptive"
)

// Limiter is a rate budget that every attempt draws from before it is
// sent, retries included, and so does every send of a GET or HEAD that
// net/http makes again by itself on another try (see package doc). Implementations must be safe for concurrent use.
//
// Wait blocks until one request may be sent, or until ctx is done, in which
// case it returns an error that wraps ctx's. Pause stops every caller from
// sending for d (it never shortens a pause already in force); the client
// calls it when the venue answers 429, so that concurrent callers do not
// pile onto a limiter that already said no.
type Limiter interface {
	Wait(ctx context.Context) error
	Pause(d time.Duration)
}

// tokenBucket is the Limiter NewTokenBucket returns.
type tokenBucket struct {
	clock clockwork.Clock
	rate  float64 // tokens per second; 0 means unlimited (pauses still apply)
	burst float64

	// paused is set, for good, by the first Pause: until then, an
	// unlimited bucket has nothing to enforce and Wait takes no lock.
	paused atomic.Bool

	pause adaptive.Pause

	mu     sync.Mutex
	tokens float64
	last   time.Time

	// waited, when set, is told how long each Wait that had to wait for
	// its token waited (the client's telemetry).
	waited func(ctx context.Context, d time.Duration)
}

// NewTokenBucket returns the in-process Limiter, the one a Client builds
// unless its Config names another: a token bucket on clock (the real
// clock when nil) that keeps a venue allowing perMinute requests a minute
// in bursts of burst from answering 429, however its requests are spread:
// it refills 1 % below the rate and holds back from its burst what the
// venue regains in 250 ms, the longest it allows a granted request to take
// to reach the venue (at the venue's 100 a minute and 300, 99 a minute
// and 299), starting full. perMinute <= 0 turns the throttle off; the
// bucket then only enforces pauses. It is safe for concurrent use.
//
// Its Wait takes one token, waiting on the clock for it when the bucket is
// empty or paused; waiters are served in the order they reserve a token.
// Wait never starts a wait that would end after ctx's deadline, read on
// the bucket's clock: it returns at once with an error wrapping
// context.DeadlineExceeded instead (a deadline on another clock, such as
// a wall-clock context.WithTimeout with a fake clock, is compared as if it
// were on this one). A Wait cut off by ctx gives its token back. Its Pause
// stops every caller from taking a token for d from now, and never
// shortens a pause already in force.
func NewTokenBucket(clock clockwork.Clock, perMinute float64, burst int) Limiter {
	if clock == nil {
		clock = clockwork.NewRealClock()
	}
	b := &tokenBucket{clock: clock, last: clock.Now()}
	if perMinute > 0 && !math.IsInf(perMinute, 1) {
		rate, n := adaptive.Headroom(perMinute, burst)
		b.rate, b.burst = rate/60, float64(n)
		b.tokens = b.burst
	}
	return b
}

// Wait implements Limiter, as NewTokenBucket describes.
func (b *tokenBucket) Wait(ctx context.Context) error {
	// Done, not Err: some contexts' Err blocks until they are done
	// (clockwork.WithTimeout's, v0.5.0).
	select {
	case <-ctx.Done():
		return ctx.Err()
	default:
	}
	if b.rate == 0 && !b.paused.Load() {
		return nil
	}
	b.mu.Lock()
	now := b.clock.Now()
	d := b.reserve(now)
	b.mu.Unlock()
	if d <= 0 {
		return nil
	}
	from := now
	for d > 0 {
		if err := adaptive.WaitToken(ctx, b.clock, now, d, "transport"); err != nil {
			b.unreserve()
			return err
		}
		// A pause may have begun while this caller slept.
		now = b.clock.Now()
		d = b.pause.Left(now)
	}
	if b.waited != nil {
		b.waited(ctx, now.Sub(from))
	}
	return nil
}

// reserve takes a token (the balance may go negative: a debt that later
// callers queue behind) and returns how long the caller must wait for it.
func (b *tokenBucket) reserve(now time.Time) time.Duration {
	var d time.Duration
	if b.rate > 0 {
		if now.After(b.last) {
			b.tokens = math.Min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
			b.last = now
		}
		b.tokens--
		if b.tokens < 0 {
			d = time.Duration(math.Ceil(-b.tokens / b.rate * float64(time.Second)))
		}
	}
	if p := b.pause.Left(now); p > d {
		d = p
	}
	return d
}

// Tokens returns the tokens the bucket holds now, negative when callers
// are waiting for tokens not yet refilled, for the tokens gauge; false
// when the bucket is unlimited.
func (b *tokenBucket) Tokens(context.Context) (float64, bool, error) {
	if b.rate == 0 {
		return 0, false, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	n := b.tokens
	if now := b.clock.Now(); now.After(b.last) {
		n = math.Min(b.burst, n+now.Sub(b.last).Seconds()*b.rate)
	}
	return n, true, nil
}

func (b *tokenBucket) unreserve() {
	if b.rate == 0 {
		return
	}
	b.mu.Lock()
	b.tokens = math.Min(b.burst, b.tokens+1)
	b.mu.Unlock()
}

// Pause implements Limiter, as NewTokenBucket describes.
func (b *tokenBucket) Pause(d time.Duration) {
	if b.pause.Extend(b.clock.Now(), d) {
		b.paused.Store(true)
	}
}
