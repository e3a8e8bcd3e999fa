package simulation

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

var clockStart = time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)

// driveBots runs bots on a fresh lockstep clock and returns the clock's
// final time and the driver's error.
func driveBots(t *testing.T, watchdog time.Duration, bots ...func(c *lockstep)) (time.Time, error) {
	t.Helper()
	c := newLockstep(clockStart)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	err := c.drive(ctx, len(bots), func(id int) { bots[id](c) }, cancel, clockwork.NewRealClock(), watchdog)
	return c.Now(), err
}

func TestLockstepOrdersEventsByDeadlineThenCreation(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []string
	note := func(s string) { mu.Lock(); got = append(got, s); mu.Unlock() }
	bot := func(name string, waits ...time.Duration) func(*lockstep) {
		return func(c *lockstep) {
			for _, d := range waits {
				c.Sleep(d)
				note(name + "@" + c.Now().Sub(clockStart).String())
			}
		}
	}
	// a and b wake at the same instants; a always created its timer first.
	end, err := driveBots(t, 5*time.Second, bot("a", time.Second, time.Second), bot("b", time.Second, 500*time.Millisecond, 500*time.Millisecond), bot("c", 3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a@1s", "b@1s", "b@1.5s", "a@2s", "b@2s", "c@3s"}
	if !slices.Equal(got, want) {
		t.Errorf("order = %v, want %v", got, want)
	}
	if end != clockStart.Add(3*time.Second) {
		t.Errorf("ended at %v, want start+3s", end.Sub(clockStart))
	}
}

// TestLockstepAfterFuncWakesItsOwner mirrors the transport's per-attempt
// timeout firing while the venue's latency wait holds the bot.
func TestLockstepAfterFuncWakesItsOwner(t *testing.T) {
	t.Parallel()
	var woke time.Duration
	var why error
	_, err := driveBots(t, 5*time.Second, func(c *lockstep) {
		ctx, cancel := context.WithCancelCause(context.Background())
		timeout := c.AfterFunc(10*time.Second, func() { cancel(errAttemptTimeoutTest) })
		defer timeout.Stop()
		select { // the venue's latency wait
		case <-ctx.Done():
			why = context.Cause(ctx)
		case <-c.After(12 * time.Second):
		}
		woke = c.Since(clockStart)
		c.Sleep(time.Second) // the abandoned 12 s timer must not wake this
		if d := c.Since(clockStart); d != 11*time.Second {
			t.Errorf("after the 1 s sleep the time is start+%v, want start+11s", d)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if woke != 10*time.Second || !errors.Is(why, errAttemptTimeoutTest) {
		t.Errorf("woke at start+%v by %v, want start+10s by the timeout", woke, why)
	}
}

var errAttemptTimeoutTest = errors.New("attempt timed out")

func TestLockstepStopAndReset(t *testing.T) {
	t.Parallel()
	_, err := driveBots(t, 5*time.Second, func(c *lockstep) {
		f := c.AfterFunc(time.Second, func() { t.Error("a stopped AfterFunc ran") })
		if !f.Stop() || f.Stop() {
			t.Error("Stop: want true, then false")
		}
		tm := c.NewTimer(time.Second)
		<-tm.Chan()
		if tm.Reset(2 * time.Second) {
			t.Error("Reset of a fired timer reported it pending")
		}
		<-tm.Chan()
		if d := c.Since(clockStart); d != 3*time.Second {
			t.Errorf("reset timer fired at start+%v, want start+3s", d)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestLockstepReportsAHang(t *testing.T) {
	t.Parallel()
	block := make(chan struct{})
	defer close(block)
	_, err := driveBots(t, 100*time.Millisecond, func(c *lockstep) { <-block })
	if !errors.Is(err, errHang) {
		t.Fatalf("err = %v, want errHang", err)
	}
}

// BenchmarkLockstepHandoff measures the driver alone: one event fired and
// one bot woken and parked again, with no venue or client work.
func BenchmarkLockstepHandoff(b *testing.B) {
	c := newLockstep(clockStart)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n := b.N
	b.ResetTimer()
	err := c.drive(ctx, 1, func(int) {
		for range n {
			c.Sleep(600 * time.Millisecond)
		}
	}, cancel, clockwork.NewRealClock(), time.Minute)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(600*time.Millisecond)/(float64(b.Elapsed())/float64(b.N)), "sim/wall")
}
