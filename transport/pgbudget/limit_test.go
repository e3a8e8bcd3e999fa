package pgbudget

import "testing"

// The shared bucket keeps the same headroom under the venue's budget as
// the in-process one (adaptive.Headroom): 99 a minute, bursts of 299, for
// the venue's 100 and 300, the interval rounded up to the microsecond.
func TestGCRAKeepsHeadroom(t *testing.T) {
	for _, tc := range []struct {
		perMinute           float64
		burst               int
		emission, tolerance int64
	}{
		{100, 300, 606061, 606061 * 299},
		{600, 1, 101011, 101011},
		{0, 300, 0, 0}, // off
	} {
		e, tol, err := gcra(tc.perMinute, tc.burst)
		if err != nil || e != tc.emission || tol != tc.tolerance {
			t.Errorf("gcra(%v, %d) = %d µs, %d µs, %v; want %d, %d", tc.perMinute, tc.burst, e, tol, err, tc.emission, tc.tolerance)
		}
	}
}
