// Package adaptive is the one statement of how tradewire's adaptive rate
// budgets learn the venue's rate, shared by transport.NewAdaptiveLimiter
// and package redisbudget's adaptive budget (which computes the same in
// Redis, from these constants).
//
// # What a 429 tells
//
// The venue says nothing of its limits but a 429: no headers, no
// remaining count. A 429 says one thing exactly: the endpoint's bucket
// was empty when that request arrived. Between two 429s the bucket is
// empty at both ends, so the n requests it admitted in between, over the
// Δt between them, measure its refill rate v: v·Δt lies between n-1 and
// n+1 (the bucket held under one token at each end), and is n exactly
// unless it filled up in between, when n/Δt is a lower bound. A budget
// that holds a lowered class at (n-1)/Δt sends no faster than the venue
// refills and draws no 429 while the capacity stays.
//
// # The bound: 429s against the time to find a restore
//
// Holding under the capacity shows nothing of a restore: every request
// held is admitted either way. The only requests that tell "still
// lowered" from "restored" are ones the lowered venue refuses and the
// restored one admits, so each probe of a venue that is still lowered
// costs exactly one 429 (no fewer; a budget that stops at the first one
// spends no more). A budget that must be back at the restored capacity
// within R of any restore, and needs a ramp of T after its probe
// succeeds, must probe at least once in every stretch of R-T: over a drop
// lasting D that is at least ⌊D/(R-T)⌋ 429s, plus the one 429 that
// reveals the drop. Goals of at most 2 429s per drop and recovery within
// a minute are therefore both reachable only for drops of up to about
// 2(R-T) after the first 429; for longer ones one of them must give.
// This package gives the 429s: it probes every Every, a probe is a
// return to the ceiling (T is nought), so a restore is found within
// Every, and a drop of D costs 2 429s in its first minute (the one that
// reveals it and the one that measures it) and about one per Every after.
//
// # The schedule
//
// After a 429 that starts a congestion (its request was granted after
// the class's last 429), at now:
//
//   - If the last such 429 was between Measure and Window before, the
//     class holds at Hold of what was granted in between until Every from
//     now, then returns to the ceiling: the probe. Still lowered, the
//     venue refuses it as soon as the little its bucket gained during the
//     hold is spent — one 429, the next measurement; restored, it admits
//     everything, and the class stays at the ceiling.
//   - Otherwise (the first 429 in Window, or one too soon after the last
//     to measure), the class sends nothing until Measure from now and
//     then returns to the ceiling: the venue's bucket gains Measure of
//     its rate, which the ceiling spends until the 429 that measures it.
//
// The rate is never above the ceiling and, while held, never under Floor
// of it.
package adaptive

import (
	"math"
	"time"
)

const (
	// Measure is how long a class sends nothing after a 429 it cannot
	// measure, so that the venue's bucket gains enough for the next 429
	// to measure its rate; a measurement over less is too short to trust.
	Measure = 10 * time.Second
	// Every is how long a measured class holds under the venue's rate
	// before it probes again: a restore is back at the ceiling within it.
	Every = 50 * time.Second
	// Window is the longest interval between two 429s that measures the
	// venue's rate: over a longer one its capacity may have changed.
	Window = 2 * time.Minute
	// Floor is the least a held class sends, as a share of the ceiling.
	Floor = 0.01
)

// Hold returns the rate, in requests a second, at which a class holds
// after a 429 that came seconds after the class's previous 429, with
// granted requests granted in between (the one refused now among them),
// and whether that interval measures the venue's rate at all (between
// Measure and Window). The rate is the lower bound of the venue's
// measured refill rate, (admitted-1)/seconds with admitted = granted-1,
// within [Floor·ceiling, ceiling].
func Hold(ceiling, granted, seconds float64) (float64, bool) {
	if seconds < Measure.Seconds() || seconds > Window.Seconds() {
		return 0, false
	}
	admitted := granted - 1
	return math.Min(ceiling, math.Max(ceiling*Floor, (admitted-1)/seconds)), true
}
