package adaptive

import (
	"math"
	"testing"
)

func TestHold(t *testing.T) {
	const ceiling = 99.0 / 60
	for _, tc := range []struct {
		name             string
		granted, seconds float64
		want             float64
		measured         bool
	}{
		// 30 a minute for 30 s: 15 admitted and the one refused granted;
		// the lower bound is 14 in 30 s.
		{"a lowered venue", 16, 30, 14.0 / 30, true},
		{"nothing admitted: the floor", 1, 30, ceiling * Floor, true},
		{"more than the ceiling: the ceiling", 1000, 30, ceiling, true},
		{"at Measure", 16, Measure.Seconds(), 14 / Measure.Seconds(), true},
		{"at Window", 16, Window.Seconds(), 14 / Window.Seconds(), true},
		{"too soon to measure", 16, Measure.Seconds() - 0.001, 0, false},
		{"too long ago to measure", 16, Window.Seconds() + 0.001, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Hold(ceiling, tc.granted, tc.seconds)
			if ok != tc.measured || math.Abs(got-tc.want) > 1e-12 {
				t.Fatalf("Hold(%v, %v, %v) = %v, %v; want %v, %v", ceiling, tc.granted, tc.seconds, got, ok, tc.want, tc.measured)
			}
		})
	}
}

// The hold never lets a venue whose bucket was empty at both 429s refuse
// a request: over any interval, at any rate, the venue refills at least
// as fast as the hold sends.
func TestHoldIsUnderTheVenue(t *testing.T) {
	const ceiling = 99.0 / 60
	for _, v := range []float64{0.05, 0.3, 0.5, 1, 1.6} { // the venue's rate, a second
		for secs := Measure.Seconds(); secs <= Window.Seconds(); secs += 0.7 {
			for _, f1 := range []float64{0, 0.5, 0.999} { // tokens left at the first 429
				// Admitted: the whole tokens the bucket held over the
				// interval; then the one refused.
				admitted := math.Floor(f1 + v*secs)
				hold, ok := Hold(ceiling, admitted+1, secs)
				if !ok {
					t.Fatalf("%v s does not measure", secs)
				}
				if hold > v && hold > ceiling*Floor {
					t.Fatalf("venue at %v/s, %v s, %v left: hold %v/s is above it", v, secs, f1, hold)
				}
			}
		}
	}
}
