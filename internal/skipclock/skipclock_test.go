package skipclock

import (
	"testing"
	"time"
)

func TestWaitsMoveTheClock(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	c := New(start)
	fired := make(chan struct{})
	c.AfterFunc(time.Second, func() { close(fired) }) // a deadline, not a wait
	select {
	case <-c.NewTimer(500 * time.Millisecond).Chan():
	default:
		t.Fatal("a timer did not fire at once")
	}
	<-c.After(250 * time.Millisecond)
	c.Sleep(100 * time.Millisecond)
	if got := c.Since(start); got != 850*time.Millisecond {
		t.Fatalf("clock moved %v, want 850ms", got)
	}
	select {
	case <-fired:
		t.Fatal("a deadline further out fired")
	default:
	}
	c.Sleep(200 * time.Millisecond) // past the deadline: it fires
	<-fired
}
