// Package skipclock is a fake clock on which waiting costs no wall time,
// for sequential simulations: the demo and the fee-sweep benchmarks.
// Tests, and anyone outside this module, use venue.Clock, driven by
// the usual BlockUntilContext + Advance idiom, which also suits several
// goroutines.
package skipclock

import (
	"time"

	"github.com/jonboulle/clockwork"
)

// Clock is a clockwork.FakeClock on which a timer for d moves the clock
// forward by d at once and fires. The client and the venue share it, so the
// venue sees exactly the time the client waited, and a run is
// deterministic. AfterFunc, the transport's per-attempt deadline, is not a
// wait: it fires only if something moves the clock past it while a request
// is in flight, such as a venue latency longer than the deadline.
//
// It suits one client sending one request at a time: two goroutines
// waiting at once would each move the clock by their wait.
type Clock struct {
	*clockwork.FakeClock
}

// New returns a Clock set to t.
func New(t time.Time) *Clock { return &Clock{FakeClock: clockwork.NewFakeClockAt(t)} }

// NewTimer moves the clock forward by d and returns the timer, fired.
func (c *Clock) NewTimer(d time.Duration) clockwork.Timer {
	t := c.FakeClock.NewTimer(d)
	if d > 0 {
		c.FakeClock.Advance(d)
	}
	return t
}

// After moves the clock forward by d and returns a channel that has fired.
func (c *Clock) After(d time.Duration) <-chan time.Time { return c.NewTimer(d).Chan() }

// Sleep moves the clock forward by d.
func (c *Clock) Sleep(d time.Duration) {
	if d > 0 {
		c.FakeClock.Advance(d)
	}
}
