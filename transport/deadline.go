package transport

import (
	"context"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
)

// deadlines ends, on one timer, every attempt that outlives the attempt
// timeout. A runtime timer started and stopped per attempt cost about
// 0.5 % of a loopback GET (BenchmarkSignedGET/paired; the runtime may wake
// the network poller for a new timer). One timer for all attempts is
// reset when it fires, for the oldest attempt then in flight: about once a
// timeout period while attempts keep coming, each of them costing two
// short critical sections.
//
// The timer is lazy: an attempt that ends removes its deadline and leaves
// the timer running. When it fires, it ends the attempts whose deadline
// has passed and re-arms for the earliest left, or stops when none is.
// Each attempt is therefore ended at its own deadline, as an AfterFunc of
// its own would end it, but the clock holds a timer for up to a timeout
// after the last attempt ended. A clockwork.FakeClock counts that timer as
// a waiter, which would mislead a test driving the clock, so the client
// uses deadlines on the real clock only and an AfterFunc per attempt on
// any other.
//
// All attempts share one timeout, so deadlines fall in the order the
// attempts began; add places each after the last one not later, which is
// the tail but for attempts that began together on different goroutines,
// so the list stays in that order without sorting.
type deadlines struct {
	clock   clockwork.Clock
	timeout time.Duration

	mu         sync.Mutex
	head, tail *deadline // attempts in flight, earliest deadline first
	timer      clockwork.Timer
	armed      bool
}

// deadline is one attempt's entry in deadlines: it ends actx when set,
// else calls cancel with errAttemptTimeout.
type deadline struct {
	at         time.Time
	actx       *attemptCtx
	cancel     context.CancelCauseFunc
	prev, next *deadline
	listed     bool
}

// expire ends the attempt d is for.
func (d *deadline) expire() {
	if d.actx != nil {
		d.actx.end()
	} else {
		d.cancel(errAttemptTimeout)
	}
}

func newDeadlines(clock clockwork.Clock, timeout time.Duration) *deadlines {
	return &deadlines{clock: clock, timeout: timeout}
}

// start records an attempt that cancel ends, with errAttemptTimeout as the
// cause, once the timeout has passed; stop must be called when it ends.
func (w *deadlines) start(cancel context.CancelCauseFunc) *deadline {
	d := &deadline{cancel: cancel}
	w.add(d, w.clock.Now())
	return d
}

// add is start for an entry the caller made (with actx or cancel set),
// such as one inside a larger allocation, for an attempt that began at
// now on the clock; stop removes it. Attempts that began at the same time
// on different goroutines may be added in either order: an entry is
// placed after the last one whose deadline is not later, almost always
// the tail.
func (w *deadlines) add(d *deadline, now time.Time) {
	d.listed = true
	d.at = now.Add(w.timeout)
	w.mu.Lock()
	after := w.tail
	for after != nil && after.at.After(d.at) {
		after = after.prev
	}
	if after == nil {
		d.next = w.head
		w.head = d
	} else {
		d.prev, d.next = after, after.next
		after.next = d
	}
	if d.next == nil {
		w.tail = d
	} else {
		d.next.prev = d
	}
	if !w.armed {
		w.armed = true
		if w.timer == nil {
			w.timer = w.clock.AfterFunc(w.timeout, w.fire)
		} else {
			w.timer.Reset(w.timeout)
		}
	}
	w.mu.Unlock()
}

// stop removes an attempt's deadline. A fire already under way may still
// call its cancel, as an AfterFunc already running would.
func (w *deadlines) stop(d *deadline) {
	w.mu.Lock()
	w.unlink(d)
	w.mu.Unlock()
}

func (w *deadlines) unlink(d *deadline) {
	if !d.listed {
		return
	}
	d.listed = false
	if d.prev == nil {
		w.head = d.next
	} else {
		d.prev.next = d.next
	}
	if d.next == nil {
		w.tail = d.prev
	} else {
		d.next.prev = d.prev
	}
	d.prev, d.next = nil, nil
}

// fire ends the attempts whose deadline has passed, then re-arms the timer
// for the earliest left (start does not arm it while fire runs).
func (w *deadlines) fire() {
	w.mu.Lock()
	now := w.clock.Now()
	var expired []*deadline
	for w.head != nil && !w.head.at.After(now) {
		expired = append(expired, w.head)
		w.unlink(w.head)
	}
	w.mu.Unlock()
	for _, d := range expired {
		d.expire()
	}
	w.mu.Lock()
	if w.head != nil {
		w.timer.Reset(w.head.at.Sub(w.clock.Now()))
	} else {
		w.armed = false
	}
	w.mu.Unlock()
}
