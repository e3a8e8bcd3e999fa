package venue

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
)

// Clock is the fake clock NewClock makes for simulation tests, shared by
// the venue and the client: time moves only when the test calls Advance,
// so a wait costs no wall time. It is a clockwork.Clock with
// clockwork.FakeClock's Advance and BlockUntilContext, so the usual idiom
// drives it:
//
//	go func() {
//		for clk.BlockUntilContext(ctx, 1) == nil {
//			clk.Advance(100 * time.Millisecond)
//		}
//	}()
//
// Unlike a clockwork.FakeClock it tells a wait from a bound.
// BlockUntilContext counts waits only: a pending NewTimer, After, Sleep or
// NewTicker, on which a goroutine is blocked. An AfterFunc is a bound —
// the client's per-attempt timeout, or a context deadline made by
// WithTimeout — and is not counted, though Advance fires it when it passes
// it. So the idiom above advances only while the bot waits, never while a
// request is in flight, and the test's own advancing cannot time a request
// out. (On a clockwork.FakeClock the per-attempt timeout is a waiter, so
// the same idiom moves the time while a request runs and times it out.)
// With several goroutines, block until all of them wait:
// BlockUntilContext(ctx, n) for n goroutines.
//
// Timers due at the same instant fire in the order they were made. An
// AfterFunc's function runs on the goroutine calling Advance, before
// Advance returns. A Clock is safe for concurrent use.
type Clock interface {
	clockwork.Clock
	// Advance moves the clock forward by d, firing in order every timer
	// due by then, each at its own deadline.
	Advance(d time.Duration)
	// BlockUntilContext blocks until at least n waits are pending on the
	// clock (AfterFunc bounds are not counted), or until ctx is done,
	// when it returns ctx's error.
	BlockUntilContext(ctx context.Context, n int) error
	// SkipWaits makes the clock advance by itself, for n goroutines that
	// share it and wait on it one wait each: whenever n timer waits
	// (NewTimer, After, Sleep; not tickers, not AfterFunc bounds) are
	// pending, the clock advances at once to the earliest of them and
	// fires it, and before it every timer due earlier, on the goroutine
	// that made the last wait. A run then costs no wall time, and its timeline depends on its
	// waits alone. SkipWaits(1) suits a sequential run (a client and the
	// venue it calls): every wait moves the clock by exactly the time
	// waited. n <= 0 stops it.
	SkipWaits(n int)
}

// simClock is the Clock NewClock returns.
type simClock struct {
	mu       sync.Mutex
	now      time.Time
	seq      uint64
	timers   []*clockTimer // pending, by deadline then seq
	waits    int           // pending timers that are waits, not bounds
	blockers []clockBlocker
	skipN    int  // SkipWaits's n; 0 when off
	skipping bool // a goroutine is in skip
}

var _ Clock = (*simClock)(nil)

type clockBlocker struct {
	n  int
	ch chan struct{}
}

// NewClock returns a Clock set to t.
func NewClock(t time.Time) Clock { return &simClock{now: t} }

// Now returns the clock's time.
func (c *simClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Since returns the time elapsed on the clock since t.
func (c *simClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// Until returns the time on the clock until t.
func (c *simClock) Until(t time.Time) time.Duration { return t.Sub(c.Now()) }

// After returns a channel that receives the clock's time once it has
// advanced by d: a wait.
func (c *simClock) After(d time.Duration) <-chan time.Time { return c.NewTimer(d).Chan() }

// Sleep blocks until the clock has advanced by d: a wait.
func (c *simClock) Sleep(d time.Duration) { <-c.After(d) }

// NewTimer returns a timer that fires once the clock has advanced by d: a
// wait while it is pending. A d <= 0 fires at once.
func (c *simClock) NewTimer(d time.Duration) clockwork.Timer {
	t := &clockTimer{c: c, ch: make(chan time.Time, 1), wait: true}
	c.mu.Lock()
	c.schedule(t, d)
	c.mu.Unlock()
	c.skip()
	return t
}

// AfterFunc returns a timer that calls f, on the goroutine calling Advance,
// once the clock has advanced by d. It is a bound, not a wait:
// BlockUntilContext does not count it.
func (c *simClock) AfterFunc(d time.Duration, f func()) clockwork.Timer {
	t := &clockTimer{c: c, f: f}
	c.mu.Lock()
	due := c.schedule(t, d)
	c.mu.Unlock()
	if due {
		f()
	}
	return t
}

// NewTicker returns a ticker that ticks every d of the clock's time: a wait
// until it is stopped. It panics if d <= 0, as time.NewTicker does.
func (c *simClock) NewTicker(d time.Duration) clockwork.Ticker {
	if d <= 0 {
		panic(errors.New("venue: non-positive interval for NewTicker"))
	}
	t := &clockTimer{c: c, ch: make(chan time.Time, 1), wait: true, period: d}
	c.mu.Lock()
	c.schedule(t, d)
	c.mu.Unlock()
	c.skip()
	return clockTicker{t}
}

// Advance moves the clock forward by d, firing in order every timer due
// by then, each at its own deadline.
func (c *simClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.advance(c.now.Add(d), nil)
}

// advance moves the clock to end, firing in order every timer due by then;
// with last (a pending channel timer due by end), it stops once last has
// fired. The caller holds c.mu, which advance releases.
func (c *simClock) advance(end time.Time, last *clockTimer) {
	for len(c.timers) > 0 && !c.timers[0].at.After(end) {
		t := c.timers[0]
		c.remove(t)
		c.now = t.at
		if t.f != nil {
			c.mu.Unlock()
			t.f()
			c.mu.Lock()
			continue
		}
		select {
		case t.ch <- c.now:
		default:
		}
		if t.period > 0 {
			c.schedule(t, t.period)
		}
		if t == last {
			break
		}
	}
	if last == nil && end.After(c.now) {
		c.now = end
	}
	c.mu.Unlock()
}

// BlockUntilContext blocks until at least n waits are pending on the clock
// (AfterFunc bounds are not counted), or until ctx is done, when it
// returns ctx's error.
func (c *simClock) BlockUntilContext(ctx context.Context, n int) error {
	c.mu.Lock()
	if c.waits >= n {
		c.mu.Unlock()
		return nil
	}
	b := clockBlocker{n: n, ch: make(chan struct{})}
	c.blockers = append(c.blockers, b)
	c.mu.Unlock()
	select {
	case <-b.ch:
		return nil
	case <-ctx.Done():
		c.mu.Lock()
		c.blockers = slices.DeleteFunc(c.blockers, func(o clockBlocker) bool { return o.ch == b.ch })
		c.mu.Unlock()
		return ctx.Err()
	}
}

// SkipWaits makes the clock advance to its earliest timer wait whenever n
// of them are pending; n <= 0 stops it.
func (c *simClock) SkipWaits(n int) {
	c.mu.Lock()
	c.skipN = max(n, 0)
	c.mu.Unlock()
	c.skip()
}

// skip advances the clock to its earliest pending timer wait while
// SkipWaits's n of them are pending. One goroutine skips at a time; a wait
// made meanwhile (by another goroutine, or by an AfterFunc's function that
// Advance runs) is left to it.
func (c *simClock) skip() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.skipping {
		return
	}
	for c.skipN > 0 {
		var first *clockTimer
		n := 0
		for _, t := range c.timers {
			if t.wait && t.period == 0 {
				first = cmp.Or(first, t)
				n++
			}
		}
		if n < c.skipN {
			return
		}
		c.skipping = true
		c.advance(first.at, first)
		c.mu.Lock()
		c.skipping = false
	}
}

// schedule makes t pending d from now and reports whether it is due at
// once (d <= 0): then a channel timer has fired and a bound's function is
// the caller's to call, outside the lock. The caller holds c.mu.
func (c *simClock) schedule(t *clockTimer, d time.Duration) (due bool) {
	if d <= 0 {
		if t.ch != nil {
			select {
			case t.ch <- c.now:
			default:
			}
		}
		return true
	}
	c.seq++
	t.at, t.seq, t.pending = c.now.Add(d), c.seq, true
	i, _ := slices.BinarySearchFunc(c.timers, t, func(a, b *clockTimer) int {
		if r := a.at.Compare(b.at); r != 0 {
			return r
		}
		return int(a.seq) - int(b.seq)
	})
	c.timers = slices.Insert(c.timers, i, t)
	if t.wait {
		c.waits++
		c.blockers = slices.DeleteFunc(c.blockers, func(b clockBlocker) bool {
			if c.waits >= b.n {
				close(b.ch)
				return true
			}
			return false
		})
	}
	return false
}

// remove takes a pending t off the clock and reports whether it was
// pending. The caller holds c.mu.
func (c *simClock) remove(t *clockTimer) bool {
	if !t.pending {
		return false
	}
	t.pending = false
	if i := slices.Index(c.timers, t); i >= 0 {
		c.timers = slices.Delete(c.timers, i, i+1)
	}
	if t.wait {
		c.waits--
	}
	return true
}

// clockTimer is a simClock's timer, ticker or AfterFunc.
type clockTimer struct {
	c      *simClock
	ch     chan time.Time // nil for an AfterFunc
	f      func()         // an AfterFunc's function
	wait   bool           // counted by BlockUntilContext while pending
	period time.Duration  // a ticker's interval

	// Guarded by c.mu.
	at      time.Time
	seq     uint64
	pending bool
}

// Chan returns the channel the timer fires on (nil for an AfterFunc).
func (t *clockTimer) Chan() <-chan time.Time { return t.ch }

// Stop stops the timer and reports whether it was pending.
func (t *clockTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	return t.c.remove(t)
}

// Reset makes the timer fire d from now and reports whether it was pending.
func (t *clockTimer) Reset(d time.Duration) bool {
	t.c.mu.Lock()
	was := t.c.remove(t)
	due := t.c.schedule(t, d)
	t.c.mu.Unlock()
	if due && t.f != nil {
		t.f()
	}
	if t.wait {
		t.c.skip()
	}
	return was
}

type clockTicker struct{ t *clockTimer }

func (k clockTicker) Chan() <-chan time.Time { return k.t.ch }
func (k clockTicker) Stop()                  { k.t.Stop() }
func (k clockTicker) Reset(d time.Duration) {
	if d <= 0 {
		panic(errors.New("venue: non-positive interval for Ticker.Reset"))
	}
	k.t.c.mu.Lock()
	k.t.c.remove(k.t)
	k.t.period = d
	k.t.c.schedule(k.t, d)
	k.t.c.mu.Unlock()
	k.t.c.skip()
}

// WithTimeout returns a context that is done once d has passed on clock,
// or when parent is done or cancel is called, whichever is first; its
// Deadline is clock's now plus d (or parent's, when earlier). Err returns
// context.DeadlineExceeded when the deadline ended it, and never blocks.
//
// Use it, not clockwork.WithTimeout, with a Clock: clockwork's falls back
// to the wall clock for any clock but its own FakeClock, and (v0.5.0) its
// context's Err blocks until the context is done, so every caller that
// checks Err before waiting hangs. On a Clock the deadline is a bound (an
// AfterFunc), which BlockUntilContext does not count. On any other clock
// it is that clock's AfterFunc.
func WithTimeout(parent context.Context, clock clockwork.Clock, d time.Duration) (context.Context, context.CancelFunc) {
	ctx := &clockContext{parent: parent, deadline: clock.Now().Add(d), done: make(chan struct{})}
	if pd, ok := parent.Deadline(); ok && pd.Before(ctx.deadline) {
		ctx.deadline = pd
	}
	select {
	case <-parent.Done(): // not Err, which blocks on some contexts
		ctx.end(parent.Err())
		return ctx, func() {}
	default:
	}
	stopParent := context.AfterFunc(parent, func() { ctx.end(parent.Err()) })
	timer := clock.AfterFunc(d, func() { ctx.end(context.DeadlineExceeded) })
	return ctx, func() {
		stopParent()
		timer.Stop()
		ctx.end(context.Canceled)
	}
}

// clockContext is WithTimeout's context.
type clockContext struct {
	parent   context.Context
	deadline time.Time
	done     chan struct{}

	mu  sync.Mutex
	err error
}

func (c *clockContext) end(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.err = err
		close(c.done)
	}
}

func (c *clockContext) Deadline() (time.Time, bool) { return c.deadline, true }
func (c *clockContext) Done() <-chan struct{}       { return c.done }
func (c *clockContext) Value(key any) any           { return c.parent.Value(key) }

func (c *clockContext) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *clockContext) String() string { return fmt.Sprintf("venue.WithTimeout(%v)", c.deadline) }
