package transport

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

// deadlineHarness drives deadlines on a fake clock. A fake timer's
// function runs in a goroutine of its own; deadlines re-arms its timer
// only after it has ended every expired attempt, so once the clock has a
// waiter again, a fire is complete.
type deadlineHarness struct {
	t     *testing.T
	ctx   context.Context
	clock *clockwork.FakeClock
	w     *deadlines
}

type testAttempt struct {
	ctx context.Context
	d   *deadline
}

func (h *deadlineHarness) begin() testAttempt {
	actx, cancel := context.WithCancelCause(h.ctx)
	h.t.Cleanup(func() { cancel(nil) })
	return testAttempt{actx, h.w.start(cancel)}
}

// advance moves the clock by d once the timer is armed, and waits until it
// is armed again (the fire, if any, complete).
func (h *deadlineHarness) advance(d time.Duration) {
	h.t.Helper()
	if err := h.clock.BlockUntilContext(h.ctx, 1); err != nil {
		h.t.Fatal(err)
	}
	h.clock.Advance(d)
	if err := h.clock.BlockUntilContext(h.ctx, 1); err != nil {
		h.t.Fatal(err)
	}
}

func timedOut(a testAttempt) bool { return errors.Is(context.Cause(a.ctx), errAttemptTimeout) }

// TestDeadlinesEndEachAttemptAtItsOwnDeadline: one timer ends every
// attempt exactly when its timeout has passed, whatever ended before it,
// and a new attempt after an idle spell is ended at its own deadline.
func TestDeadlinesEndEachAttemptAtItsOwnDeadline(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	clock := clockwork.NewFakeClockAt(t0)
	h := &deadlineHarness{t: t, ctx: ctx, clock: clock, w: newDeadlines(clock, 10*time.Second)}

	a := h.begin() // deadline t0+10s
	clock.Advance(3 * time.Second)
	b := h.begin() // t0+13s
	clock.Advance(2 * time.Second)
	c := h.begin() // t0+15s
	h.w.stop(a.d)  // the timer stays armed for a's deadline
	h.advance(5*time.Second - time.Nanosecond)
	if timedOut(a) || timedOut(b) || timedOut(c) {
		t.Fatal("an attempt ended before its deadline")
	}
	h.advance(time.Nanosecond) // t0+10s: a's deadline, a is gone; re-armed for b
	if timedOut(a) || timedOut(b) {
		t.Fatal("a stopped attempt, or one before its deadline, was ended")
	}
	h.advance(3*time.Second - time.Nanosecond)
	if timedOut(b) {
		t.Fatal("b ended before its deadline")
	}
	h.advance(time.Nanosecond) // t0+13s: re-armed for c
	if !timedOut(b) || timedOut(c) {
		t.Fatalf("at b's deadline: b ended %v, c ended %v; want true, false", timedOut(b), timedOut(c))
	}
	if err := clock.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Second) // t0+15s
	select {
	case <-c.ctx.Done():
	case <-ctx.Done():
		t.Fatal("c did not end at its deadline")
	}
	if !timedOut(c) {
		t.Fatalf("c ended with %v", context.Cause(c.ctx))
	}

	// Idle, then a new attempt is ended at its own deadline, not earlier.
	clock.Advance(time.Minute)
	d := h.begin()
	h.advance(10*time.Second - time.Nanosecond)
	if timedOut(d) {
		t.Fatal("d ended before its deadline")
	}
	if err := clock.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Nanosecond)
	<-d.ctx.Done()
	if !timedOut(d) {
		t.Fatalf("d ended with %v", context.Cause(d.ctx))
	}
}

// TestDeadlinesStopBeforeTheTimerFires: attempts that end in time are
// never cancelled, even when the timer they leave behind fires.
func TestDeadlinesStopBeforeTheTimerFires(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	clock := clockwork.NewFakeClockAt(t0)
	h := &deadlineHarness{t: t, ctx: ctx, clock: clock, w: newDeadlines(clock, time.Second)}
	var done []testAttempt
	for range 3 {
		a := h.begin()
		clock.Advance(100 * time.Millisecond)
		h.w.stop(a.d)
		h.w.stop(a.d) // twice is harmless
		done = append(done, a)
	}
	clock.Advance(time.Second) // the first attempt's deadline: the timer fires with nothing to end
	e := h.begin()             // re-arms, once the fire is over
	h.advance(0)
	for i, a := range done {
		if timedOut(a) {
			t.Errorf("attempt %d ended in time, yet was timed out", i)
		}
	}
	if timedOut(e) {
		t.Fatal("a new attempt was ended at once")
	}
	h.w.stop(e.d)
}

// TestAttemptTimeoutOnTheRealClock: on the real clock (the default), the
// shared deadlines time attempts out: a hung GET is sent again, a hung
// POST is an unknown outcome, sent once. (Real time passes: two short
// timeouts.)
//
// It runs with a caller's context that can end and with one that never
// does (the client then gives the attempt a context of its own,
// attemptCtx, instead of context.WithCancelCause's).
func TestAttemptTimeoutOnTheRealClock(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"cancelable", "never ends"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := testContext(t)
			if name == "never ends" {
				ctx = context.WithoutCancel(ctx)
			}
			attemptTimeoutOnTheRealClock(t, ctx)
		})
	}
}

func attemptTimeoutOnTheRealClock(t *testing.T, ctx context.Context) {
	v := newVenue(t, clockwork.NewFakeClockAt(t0), reply{hang: true}, reply{status: 200, body: `{}`}, reply{hang: true})
	const timeout = time.Second // long enough for the answered attempt on a loaded machine
	c, err := New(v.srv.URL, testSigner(t), WithRateLimit(0, 0), WithAttemptTimeout(timeout),
		WithRetryPolicy(RetryPolicy{MaxAttempts: 2}))
	if err != nil {
		t.Fatal(err)
	}
	if c.deadlines == nil {
		t.Fatal("a client on the real clock does not use the shared deadlines")
	}
	start := time.Now()
	resp, err := c.Get(ctx, "/a/")
	if err != nil || resp.Attempts != 2 {
		t.Fatalf("GET: %+v, %v; want a 200 on the second attempt", resp, err)
	}
	if took := time.Since(start); took < timeout {
		t.Errorf("the hung attempt was ended after %v, before its %v timeout", took, timeout)
	}
	_, err = c.Post(ctx, "/o/", []byte(`{}`))
	var uo *unknownOutcomeError
	if !errors.As(err, &uo) || !errors.Is(uo.Err, errAttemptTimeout) {
		t.Fatalf("POST: err = %v, want an unknown outcome from the attempt timeout", err)
	}
	if n := len(v.requests()); n != 3 {
		t.Fatalf("venue saw %d requests, want 3 (2 GETs, 1 POST)", n)
	}
}

// TestDeadlinesAddedOutOfOrder: attempts that began together on different
// goroutines may be added in either order; the list stays in deadline
// order, so each is still ended at its own deadline.
func TestDeadlinesAddedOutOfOrder(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	clock := clockwork.NewFakeClockAt(t0)
	h := &deadlineHarness{t: t, ctx: ctx, clock: clock, w: newDeadlines(clock, 10*time.Second)}
	var ends [3]testAttempt
	for i, at := range []time.Duration{2, 0, 1} { // began at t0+2ns, t0, t0+1ns
		actx, cancel := context.WithCancelCause(ctx)
		t.Cleanup(func() { cancel(nil) })
		d := &deadline{cancel: cancel}
		h.w.add(d, t0.Add(at))
		ends[i] = testAttempt{actx, d}
	}
	var order []*deadline
	h.w.mu.Lock()
	for d := h.w.head; d != nil; d = d.next {
		order = append(order, d)
	}
	tail := h.w.tail
	h.w.mu.Unlock()
	if len(order) != 3 || order[0] != ends[1].d || order[1] != ends[2].d || order[2] != ends[0].d || tail != ends[0].d {
		t.Fatal("the list is not in deadline order")
	}
	h.advance(10*time.Second + time.Nanosecond) // t0+10s+1ns: the first two are due
	if !timedOut(ends[1]) || !timedOut(ends[2]) || timedOut(ends[0]) {
		t.Fatalf("at t0+10s+1ns: ended %v %v %v; want the two that began first", timedOut(ends[1]), timedOut(ends[2]), timedOut(ends[0]))
	}
}
