package simulation

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

// lockstep is the simulated clock shared by the venue and the client, and
// the scheduler that drives the simulated bots in lockstep.
//
// It implements clockwork.Clock. Exactly one bot goroutine runs at a time;
// every other is parked on a timer of this clock. A bot parks when it
// creates a timer it is about to wait on (NewTimer, After, Sleep, or a
// Reset of such a timer); an AfterFunc does not park anyone. When the
// running bot parks or ends, the driver pops the earliest pending timer
// (ties broken by creation order), sets the time to its deadline, and
// fires it, which wakes exactly the bot that created it. Time therefore
// jumps straight from one event to the next, and the interleaving of the
// bots is a pure function of the workload: same seed, same history. Once
// every bot has started, a bot that parks on the very next event fires it
// itself (park): the same order, without two goroutine switches.
//
// The one assumption: a bot waits on at most one timer at a time, and an
// AfterFunc's function wakes the bot that created it. Both hold for
// package transport (its AfterFunc cancels the attempt that bot is waiting
// on) and for the venue (its latency wait selects on the request's
// context). When a bot is woken, any other timer it was parked on is
// abandoned and dropped.
type lockstep struct {
	mu    sync.Mutex
	now   time.Time
	seq   uint64
	queue timerQueue
	cur   int // the bot that runs now; timers it creates are its own

	parked chan park     // a bot reports that it parked or ended
	done   chan struct{} // closed at teardown: nobody listens any more
	fired  int64         // events fired, for the figures
	// direct is set once every bot has started: from then on a bot that
	// parks on the very next event fires it itself (see park).
	direct bool
	// idle, when set (before drive), is called between the bots' steps
	// once every bot has started, while every bot is parked: by the
	// driver before it fires the next event, and by a bot about to park
	// (see park). It must touch neither this clock nor the bots; the run
	// samples its floor there (floorMeter.idle).
	idle func()
}

type park struct {
	bot   int
	ended bool
}

var _ clockwork.Clock = (*lockstep)(nil)

func newLockstep(start time.Time) *lockstep {
	return &lockstep{now: start, cur: -1, parked: make(chan park, 1), done: make(chan struct{})}
}

// Now returns the simulated time.
func (c *lockstep) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Since returns the simulated time elapsed since t.
func (c *lockstep) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// Until returns the simulated time until t.
func (c *lockstep) Until(t time.Time) time.Duration { return t.Sub(c.Now()) }

// NewTimer returns a timer the calling bot is about to wait on: it parks.
func (c *lockstep) NewTimer(d time.Duration) clockwork.Timer {
	t := &simTimer{c: c, ch: make(chan time.Time, 1), blocking: true}
	owner := c.schedule(t, d)
	c.park(t, owner)
	return t
}

// park hands the turn of the running bot, which is about to wait on t, to
// the driver. When t is the next event anyway (the earliest pending timer,
// ties in creation order), the driver would fire it and wake this same
// bot: then the bot fires it itself, exactly as the driver would, and
// goes on without the two goroutine switches of a round trip through the
// driver.
func (c *lockstep) park(t *simTimer, owner int) {
	c.mu.Lock()
	if c.direct && c.idle != nil {
		c.mu.Unlock()
		c.idle()
		c.mu.Lock()
	}
	if c.direct && len(c.queue) > 0 && c.queue[0] == t {
		c.queue.pop()
		c.fire(t)
		now := c.now
		c.mu.Unlock()
		t.ch <- now // buffered, and only ever sent once per scheduling
		return
	}
	c.mu.Unlock()
	c.report(park{bot: owner})
}

// fire sets the time to t's deadline, makes t's owner the running bot and
// drops any other timer that bot was parked on. The caller holds mu and
// has popped t.
func (c *lockstep) fire(t *simTimer) {
	if t.deadline.After(c.now) {
		c.now = t.deadline
	}
	c.cur = t.owner
	// The owner is woken: any other timer it was parked on is abandoned.
	c.queue = slices.DeleteFunc(c.queue, func(o *simTimer) bool {
		if o.owner == t.owner && o.blocking {
			o.pending = false
			return true
		}
		return false
	})
	c.fired++
}

// After is NewTimer(d).Chan().
func (c *lockstep) After(d time.Duration) <-chan time.Time { return c.NewTimer(d).Chan() }

// Sleep parks the calling bot for d of simulated time.
func (c *lockstep) Sleep(d time.Duration) { <-c.After(d) }

// AfterFunc runs f, on the driver, when d of simulated time has passed.
// It does not park the calling bot.
func (c *lockstep) AfterFunc(d time.Duration, f func()) clockwork.Timer {
	t := &simTimer{c: c, fn: f}
	c.schedule(t, d)
	return t
}

// NewTicker is not supported: a ticker's waiter cannot be told apart from
// a bot that runs, so the driver could not keep the bots in lockstep.
func (c *lockstep) NewTicker(time.Duration) clockwork.Ticker {
	panic("simulation: the lockstep clock does not support tickers")
}

func (c *lockstep) schedule(t *simTimer, d time.Duration) (owner int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	t.seq, t.owner = c.seq, c.cur
	t.deadline = c.now.Add(max(0, d))
	c.queue.push(t)
	return t.owner
}

// report tells the driver that bot parked or ended. At teardown nobody
// listens and the report is dropped.
func (c *lockstep) report(p park) {
	select {
	case c.parked <- p:
	case <-c.done:
	}
}

var (
	errDeadlock = errors.New("simulation: every bot waits and no timer is pending (deadlock)")
	errHang     = errors.New("simulation: a bot neither parked nor ended before the wall-clock watchdog (hang)")
)

// drive starts n bots, one at a time, each running body(id) with id as the
// running bot, then fires timers in deadline order until every bot has
// ended. It returns errDeadlock or errHang (after watchdog of wall time
// without progress, measured on wall) if the bots stop making progress,
// or ctx's error. On error it has already called stop, which must make
// every bot return.
func (c *lockstep) drive(ctx context.Context, n int, body func(id int), stop func(), wall clockwork.Clock, watchdog time.Duration) error {
	var wg sync.WaitGroup
	defer func() {
		close(c.done)
		// Bots unwind once stopped; one that is truly hung is left behind
		// rather than hanging the caller too.
		exited := make(chan struct{})
		go func() { wg.Wait(); close(exited) }()
		t := wall.NewTimer(watchdog)
		defer t.Stop()
		select {
		case <-exited:
		case <-t.Chan():
		}
	}()
	fail := func(err error) error { stop(); return err }
	timer := wall.NewTimer(watchdog)
	defer timer.Stop()
	wait := func(want int) (bool, error) {
		progress := c.firedNow()
		timer.Reset(watchdog)
		for {
			select {
			case p := <-c.parked:
				if p.bot != want {
					return false, fmt.Errorf("simulation: bot %d reported while bot %d was running (lockstep broken)", p.bot, want)
				}
				return p.ended, nil
			case <-timer.Chan():
				// A bot that fires its own events (park) makes progress
				// without reporting: only a bot that fired nothing for a
				// whole watchdog period hangs.
				if now := c.firedNow(); now != progress {
					progress = now
					timer.Reset(watchdog)
					continue
				}
				return false, errHang
			case <-ctx.Done():
				return false, ctx.Err()
			}
		}
	}
	live := 0
	for id := range n {
		c.mu.Lock()
		c.cur = id
		c.mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			body(id)
			c.report(park{bot: id, ended: true})
		}()
		ended, err := wait(id)
		if err != nil {
			return fail(err)
		}
		if !ended {
			live++
		}
	}
	c.mu.Lock()
	c.direct = true
	c.mu.Unlock()
	for live > 0 {
		if c.idle != nil {
			c.idle()
		}
		c.mu.Lock()
		if len(c.queue) == 0 {
			c.mu.Unlock()
			return fail(errDeadlock)
		}
		t := c.queue.pop()
		c.fire(t)
		now, owner, fn, ch := c.now, t.owner, t.fn, t.ch
		c.mu.Unlock()
		if fn != nil {
			fn()
		} else {
			ch <- now // buffered, and only ever sent once per scheduling
		}
		ended, err := wait(owner)
		if err != nil {
			return fail(err)
		}
		if ended {
			live--
		}
	}
	return nil
}

// firedNow returns how many events have fired.
func (c *lockstep) firedNow() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fired
}

// simTimer is a lockstep timer: a channel timer a bot waits on, or an
// AfterFunc the driver runs.
type simTimer struct {
	c        *lockstep
	deadline time.Time
	seq      uint64
	pending  bool // in the queue
	owner    int
	blocking bool
	ch       chan time.Time
	fn       func()
}

// Chan returns the channel the timer fires on (nil for an AfterFunc).
func (t *simTimer) Chan() <-chan time.Time { return t.ch }

// Stop cancels the timer and reports whether it was pending.
func (t *simTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	return t.c.queue.remove(t)
}

// moveTo reschedules a pending timer to deadline, which must not be in the
// past, keeping its owner and its creation order among timers due at the
// same time; it reports whether the timer was pending.
func (t *simTimer) moveTo(deadline time.Time) bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	if !t.c.queue.remove(t) {
		return false
	}
	t.deadline = deadline
	t.c.queue.push(t)
	return true
}

// Reset reschedules the timer d from now and reports whether it was
// pending. A channel timer's Reset parks the calling bot, like NewTimer.
func (t *simTimer) Reset(d time.Duration) bool {
	wasPending := t.Stop()
	if t.ch != nil {
		select { // drop a value fired but not received
		case <-t.ch:
		default:
		}
	}
	owner := t.c.schedule(t, d)
	if t.blocking {
		t.c.park(t, owner)
	}
	return wasPending
}

// timerQueue holds the pending timers in firing order: by deadline, ties
// in creation order. It holds about one timer per bot.
type timerQueue []*simTimer

func firesBefore(a, b *simTimer) int {
	if r := a.deadline.Compare(b.deadline); r != 0 {
		return r
	}
	return cmp.Compare(a.seq, b.seq)
}

func (q *timerQueue) push(t *simTimer) {
	i, _ := slices.BinarySearchFunc(*q, t, firesBefore)
	*q = slices.Insert(*q, i, t)
	t.pending = true
}

// pop takes off the first timer to fire; q is not empty.
func (q *timerQueue) pop() *simTimer {
	t := (*q)[0]
	*q = slices.Delete(*q, 0, 1)
	t.pending = false
	return t
}

// remove takes t off q and reports whether it was pending.
func (q *timerQueue) remove(t *simTimer) bool {
	if !t.pending {
		return false
	}
	i, _ := slices.BinarySearchFunc(*q, t, firesBefore)
	*q = slices.Delete(*q, i, i+1)
	t.pending = false
	return true
}
