// Package adaptive is the one statement of how tradewire's adaptive rate
// budgets learn the venue's rate, shared by transport.NewAdaptiveLimiter
// and package redisbudget's adaptive budget (which computes Rate in
// Redis, from these constants).
package adaptive

import (
	"math"
	"time"
)

// The learning: the rate after a 429 is Beta of the rate in use, and it
// grows back along the cubic of CUBIC (as the AWS SDKs' adaptive retry
// mode does), whose steepness would take it from nothing to the ceiling
// in Probe; it never falls under Floor of the ceiling. Probe trades the
// 429s a lowered venue draws (one each time the rate probes past it)
// against how soon a restored venue's capacity is used again
// (transport's TestAdaptiveUnderAFluctuatingVenue measures both).
const (
	Beta = 0.5
	// Plateau is where the growth slows, as a share of the rate that drew
	// the 429: under it, since the venue took less than that.
	Plateau = 0.9
	Probe   = 60 * time.Second
	Floor   = 0.01
	// Tau is the time constant of the measured sending rate.
	Tau = 10 * time.Second
)

// Rate is the rate, in requests a second, that an adaptive budget allows
// seconds after its last cut, which came when it sent wmax requests a
// second and drew a 429; ceiling is the rate it never exceeds. It is
// CUBIC's window function: Beta·wmax just after the cut, concave up to a
// plateau at Plateau·wmax (under the rate that drew the 429), then convex
// growth to probe for more, bounded below by the floor and above by the
// ceiling.
func Rate(ceiling, wmax, seconds float64) float64 {
	t := Probe.Seconds()
	c := ceiling / (t * t * t)
	plateau := wmax * Plateau
	k := math.Cbrt((plateau - wmax*Beta) / c)
	d := seconds - k
	return math.Min(ceiling, math.Max(ceiling*Floor, plateau+c*d*d*d))
}

// Cut is the rate a 429 starts the cut from: rate, the budget's rate,
// unless the caller measured sending at well under it (asking for less
// than it may send), then what it sent; never under the floor.
func Cut(ceiling, rate, measured float64) float64 {
	x := rate
	if measured < x*Beta {
		x = measured
	}
	return math.Max(x, ceiling*Floor)
}
