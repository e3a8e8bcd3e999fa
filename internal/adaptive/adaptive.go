// Package adaptive is the one statement of how tradewire's adaptive rate
// budgets learn the venue's rate, shared by transport's adaptive limiter
// and package redisbudget's adaptive budget (which computes the same in
// Redis, from these constants). It also holds what every rate budget
// shares: the pause a 429 starts (Pause) and the wait on the injected
// clock (Sleep, WaitToken), which the retry and reconcile waits use too.
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
// held is admitted either way. Call a probe a request that the lowered
// venue refuses and the restored one admits; only a probe tells the two
// apart, so each probe of a venue that is still lowered costs exactly one
// 429 (no fewer; a budget that stops at the first one spends no more).
// Let the capacity stay lowered for D after the 429 that reveals the
// drop, and let the budget have to be back at the restored capacity
// within R of a restore at any time in it, where T is the time it needs
// from a successful probe to get there. A restore just after the reveal
// or a probe is then found only by the next probe, so probes may be at
// most R-T apart from the reveal on, and each one sent before the
// restore is refused: the drop costs at least
//
//	1 + ⌊D / (R-T)⌋
//
// 429s, the 1 being the reveal (sent before the budget could know). At
// most 2 429s per drop and recovery within a minute are therefore both
// reachable only for drops shorter than 2(R-T), under two minutes; with
// R = 60 s and T = 0 a drop lasting ten minutes after its reveal costs at
// least 11, and a class held under the ceiling for good at least one a
// minute. This package keeps the recovery and pays the 429s: a probe is
// a return to the ceiling (T is nought), sent Every after the last 429,
// so a restore is found within Every; a drop costs 2 429s in its first
// minute (the one that reveals it and the one that measures it) and one
// per probe after, one each Every and the few seconds a probe takes to
// spend what the venue gained during the hold, about 57 s: 12 where the
// bound is 10 for a drop of 591 s after its reveal (transport's
// TestAdaptiveUnderAFluctuatingVenue).
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
	Every = 55 * time.Second
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
