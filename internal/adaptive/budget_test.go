package adaptive

import (
	"math"
	"testing"
	"time"
)

func TestHeadroom(t *testing.T) {
	for _, tt := range []struct {
		perMinute float64
		burst     int
		rate      float64
		wantBurst int
	}{
		{100, 300, 99, 299},    // the venue's documented budget
		{60, 3, 59.4, 2},       // 0.2475 of a token regained in 250 ms: one held back
		{60, 1, 59.4, 1},       // never below 1
		{6000, 300, 5940, 275}, // 24.75 tokens in 250 ms: 25 held back
	} {
		rate, burst := Headroom(tt.perMinute, tt.burst)
		if math.Abs(rate-tt.rate) > 1e-9 || burst != tt.wantBurst {
			t.Errorf("Headroom(%v, %d) = %v, %d; want %v, %d", tt.perMinute, tt.burst, rate, burst, tt.rate, tt.wantBurst)
		}
	}
}

func TestDefaults(t *testing.T) {
	for _, tt := range []struct {
		perMinute, wantRate float64
		burst, wantBurst    int
	}{
		{0, PerMinute, 0, Burst}, // zero: the venue's budget
		{60, 60, 0, Burst},
		{0, PerMinute, 5, 5},
		{-1, -1, 7, 7}, // off stays off
	} {
		rate, burst := Defaults(tt.perMinute, tt.burst)
		if rate != tt.wantRate || burst != tt.wantBurst {
			t.Errorf("Defaults(%v, %d) = %v, %d; want %v, %d", tt.perMinute, tt.burst, rate, burst, tt.wantRate, tt.wantBurst)
		}
	}
}

// TestPauseNeverShortens: a pause lasts to the latest end asked for; a
// shorter or non-positive one changes nothing.
func TestPauseNeverShortens(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var p Pause
	if left := p.Left(t0); left > 0 {
		t.Fatalf("zero Pause: %v left, want none", left)
	}
	if !p.Extend(t0, 10*time.Second) || p.Extend(t0, 0) || p.Extend(t0, -time.Second) {
		t.Fatal("Extend reported a pause asked for wrongly")
	}
	p.Extend(t0.Add(time.Second), 2*time.Second) // ends at +3 s: shorter
	if left := p.Left(t0); left != 10*time.Second {
		t.Fatalf("after a shorter pause: %v left, want 10s", left)
	}
	p.Extend(t0.Add(5*time.Second), 20*time.Second) // ends at +25 s
	if left := p.Left(t0); left != 25*time.Second {
		t.Fatalf("after a longer pause: %v left, want 25s", left)
	}
}
