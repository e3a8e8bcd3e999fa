package simulation

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tradewire/tradewire/internal/adaptive"
	"github.com/tradewire/tradewire/transport"
	"github.com/tradewire/tradewire/venue"
)

// throttleClients are the clients every layout runs with: the fixed
// bucket and the adaptive limiter, and for a layout with an outage the
// fixed bucket without a retry budget.
func throttleClients(l ThrottleLayout) []ThrottleClient {
	if l.Outage != (Window{}) {
		return []ThrottleClient{FixedBucket, AdaptiveBucket, FixedNoRetryBudget}
	}
	return []ThrottleClient{FixedBucket, AdaptiveBucket}
}

// throttleRuns runs every layout with the clients clients gives, in
// parallel, and returns the runs by layout and client.
func throttleRuns(t *testing.T, layouts []ThrottleLayout, clients func(ThrottleLayout) []ThrottleClient, seed int64, wire Wire) map[string]map[ThrottleClient]*Run {
	t.Helper()
	out := map[string]map[ThrottleClient]*Run{}
	var mu sync.Mutex
	t.Run("runs", func(t *testing.T) {
		for _, l := range layouts {
			for _, c := range clients(l) {
				sc, err := ThrottleScenario(l, c, seed, wire)
				if err != nil {
					t.Fatal(err)
				}
				t.Run(sc.Name, func(t *testing.T) {
					t.Parallel()
					r := run(t, sc)
					if err := r.Err(); err != nil {
						t.Error(err)
					}
					mu.Lock()
					defer mu.Unlock()
					if out[l.Name] == nil {
						out[l.Name] = map[ThrottleClient]*Run{}
					}
					out[l.Name][c] = r
				})
			}
		}
	})
	return out
}

// orderedRuns lists runs in layouts' order, fixed before adaptive.
func orderedRuns(layouts []ThrottleLayout, runs map[string]map[ThrottleClient]*Run) []*Run {
	var out []*Run
	for _, l := range layouts {
		for _, c := range []ThrottleClient{FixedBucket, AdaptiveBucket, FixedNoRetryBudget} {
			if r := runs[l.Name][c]; r != nil {
				out = append(out, r)
			}
		}
	}
	return out
}

// checkThrottle asserts what must hold of the throttle runs whatever the
// limiter's tuning, and returns the failures.
func checkThrottle(runs map[string]map[ThrottleClient]*Run) []string {
	var fails []string
	failf := func(format string, args ...any) { fails = append(fails, fmt.Sprintf(format, args...)) }
	phases := func(r *Run) []ClassPhase {
		if r == nil {
			return nil
		}
		return r.ThrottleFigures().Phases
	}
	// drop: the adaptive limiter draws fewer 429s than the fixed bucket in
	// every phase, none at full capacity, and keeps the throughput; the
	// fixed bucket, the control, floods the lowered venue with 429s (else
	// the comparison proves nothing).
	fixed, adapt := phases(runs["drop"][FixedBucket]), phases(runs["drop"][AdaptiveBucket])
	if len(fixed) != 3 || len(adapt) != 3 {
		failf("drop: %d phases fixed, %d adaptive; want 3 each", len(fixed), len(adapt))
	} else {
		for i := range adapt {
			if adapt[i].Throttled() > fixed[i].Throttled() {
				failf("drop %s: %d 429s adaptive, more than the fixed bucket's %d", adapt[i].Change, adapt[i].Throttled(), fixed[i].Throttled())
			}
		}
		if f, a := fixed[1].Throttled(), adapt[1].Throttled(); f < 10*a || f < 100 {
			failf("drop: the fixed control drew %d 429s while lowered, adaptive %d: want the control far above", f, a)
		}
		if n := adapt[0].Throttled() + adapt[2].Throttled(); n != 0 {
			failf("drop: adaptive drew %d 429s at full capacity", n)
		}
		for _, p := range adapt[1:] {
			if p.SteadyShare < 0.9 {
				failf("drop %s: adaptive throughput %.1f%% of capacity after the first minute, want >= 90%%", p.Change, 100*p.SteadyShare)
			}
		}
		if rec := adapt[2].Recovered; rec < 0 || rec > maxRecovery {
			failf("drop: adaptive recovered %v after the restore, want within %v", rec, maxRecovery)
		}
		fails = append(fails, checkProbing("drop", adapt)...)
	}
	// per-class: the adaptive limiter uses each class's own capacity (at
	// least 90 % after each phase's first minute); the fixed bucket, one
	// budget for the whole client, leaves a good part of it unused (in a
	// phase it may admit more: a venue bucket it left full has a burst).
	fixed, adapt = phases(runs["per-class"][FixedBucket]), phases(runs["per-class"][AdaptiveBucket])
	if len(fixed) != len(adapt) || len(adapt) < 4 {
		failf("per-class: %d phases fixed, %d adaptive; want the same, 4 or more", len(fixed), len(adapt))
	} else {
		var servedFixed, servedAdaptive int
		for i, p := range adapt {
			servedFixed += fixed[i].Served
			servedAdaptive += p.Served
			if p.SteadyShare < 0.9 {
				failf("per-class %s %s: adaptive throughput %.1f%% of capacity after the first minute, want >= 90%%", p.Class, p.Change, 100*p.SteadyShare)
			}
		}
		fails = append(fails, checkProbing("per-class", adapt)...)
		for _, p := range adapt {
			if p.Change == "restore" && (p.Recovered < 0 || p.Recovered > maxRecovery) {
				failf("per-class %s: adaptive recovered %v after the restore, want within %v", p.Class, p.Recovered, maxRecovery)
			}
		}
		if 4*servedFixed > 3*servedAdaptive {
			failf("per-class: the fixed bucket admitted %d, the adaptive limiter %d: want the control's one budget to leave a quarter unused", servedFixed, servedAdaptive)
		}
	}
	// outage: with the retry budget, retries are bounded by it (500
	// tokens at 5 a retry after a 503, and no success to refill it);
	// without it, the control, by attempts × calls.
	bound := defaultRetryBudget / 5
	for _, c := range []ThrottleClient{FixedBucket, AdaptiveBucket} {
		if r := runs["outage"][c]; r != nil {
			if o := r.ThrottleFigures().Outage; o == nil || o.Retries > bound || o.OutOfBudget == 0 {
				failf("outage, %s: %+v; want at most %d retries and calls out of the retry budget", c, o, bound)
			}
		}
	}
	if r := runs["outage"][FixedNoRetryBudget]; r == nil || runs["outage"][FixedBucket] == nil {
		failf("outage: no run of the fixed bucket with and without a retry budget")
	} else if o := r.ThrottleFigures().Outage; o == nil || o.Retries <= bound || 2*o.Retries < o.AttemptsBound {
		failf("outage without a retry budget: %+v; want retries near the attempts bound and above %d", o, bound)
	}
	return fails
}

// maxRecovery is the goal for the time from a restore to the first
// 30-s window at 90 % of the restored capacity.
const maxRecovery = time.Minute

// checkProbing asserts the adaptive limiter's 429s per phase: at most 2
// in the phase's first minute (the 429 that shows a drop and the one
// that measures it), and after it at most one per probe, one each
// adaptive.Every, and the one the minute may have ended in.
func checkProbing(layout string, phases []ClassPhase) []string {
	var fails []string
	for _, p := range phases {
		probes := 0
		if steady := p.To - p.From - time.Minute; steady > 0 {
			probes = int(steady/adaptive.Every) + 1
		}
		if p.Transition > 2 || p.Probing > probes {
			fails = append(fails, fmt.Sprintf("%s %s %s: adaptive drew %d 429s in the first minute and %d after, want at most 2 and %d",
				layout, p.Class, p.Change, p.Transition, p.Probing, probes))
		}
	}
	return fails
}

// TestThrottle is the throttle scenarios' fast slice: ThrottleLayouts
// with phases of 2 simulated minutes instead of 10, the fixed bucket
// against the adaptive limiter (the outage with the fixed bucket with and
// without a retry budget only), checked by checkThrottle, and the drop
// restored at two more times, checked by checkRestoreSweep; go test -v
// prints the figures.
func TestThrottle(t *testing.T) {
	t.Parallel()
	layouts := throttleLayouts(2 * time.Minute)
	// Two classes of per-class, a steady one under the documented budget
	// and one that drops, keep the slice fast.
	layouts[1].Classes = []string{"account_reads", "order_writes"}
	runs := throttleRuns(t, layouts, func(l ThrottleLayout) []ThrottleClient {
		if l.Outage != (Window{}) {
			return []ThrottleClient{FixedBucket, FixedNoRetryBudget}
		}
		return throttleClients(l)
	}, 1, WireMemory)
	// The drop restored 20 and 40 s later too, across a probe's cycle of
	// about a minute: each found within maxRecovery (a restore needs 90 s
	// after it to show a 30-s window starting within a minute).
	restores := restoreSweepOf(t, layouts[0], []time.Duration{20 * time.Second, 40 * time.Second}, 90*time.Second, WireMemory)
	for _, f := range append(checkThrottle(runs), checkRestoreSweep(restores)...) {
		t.Error(f)
	}
	var buf bytes.Buffer
	WriteThrottleTable(&buf, orderedRuns(layouts, runs))
	fmt.Fprintln(&buf)
	writeRestoreSweep(&buf, restores)
	t.Log("\n" + buf.String())
}

// TestThrottleFigures checks the counting on a hand-made ledger: phases
// cut at the schedule's steps and around the outage, 429s in and after a
// phase's first minute, injected faults left out, the recovery window.
func TestThrottleFigures(t *testing.T) {
	t.Parallel()
	t0 := DefaultStart
	lim := func(pm float64) venue.RateLimit { return venue.RateLimit{PerMinute: pm, Burst: int(3 * pm)} }
	sc := Scenario{Start: t0, Duration: 20 * time.Minute, Outage: Window{15 * time.Minute, 17 * time.Minute},
		RateLimits: venue.RateLimits{Classes: map[string]venue.RateLimit{"market_data": lim(60)},
			Schedule: []venue.RateLimit{
				{At: 5 * time.Minute, Class: "market_data", PerMinute: 30, Burst: 90},
				{At: 10 * time.Minute, Class: "market_data", PerMinute: 60, Burst: 180},
			}}}
	ev := func(at time.Duration, status int, fault string) Event {
		return Event{Request: venue.Request{Time: t0.Add(at), Class: "market_data", Status: status, Fault: fault}}
	}
	var evs []Event
	// Full capacity, one a second for 5 min: 300 admitted.
	for s := range 300 {
		evs = append(evs, ev(time.Duration(s)*time.Second, 200, ""))
	}
	// Lowered: two 429s in the first minute, one after, one injected.
	evs = append(evs, ev(5*time.Minute+time.Second, 429, ""), ev(5*time.Minute+2*time.Second, 429, ""),
		ev(7*time.Minute, 429, ""), ev(8*time.Minute, 429, "mix_429"))
	// Restored at 10 min: nothing for 40 s, then one a second.
	for s := 40; s < 300; s++ {
		evs = append(evs, ev(10*time.Minute+time.Duration(s)*time.Second, 200, ""))
	}
	// The outage's 503s, and a request after it.
	evs = append(evs, ev(16*time.Minute, 503, "mix_5xx"), ev(18*time.Minute, 200, ""))
	r := &Run{Scenario: sc, Events: evs}
	got := r.ThrottleFigures().Phases
	want := []struct {
		from, to               time.Duration
		change                 string
		transition, probing    int
		served                 int
		recovered, recoveredOK time.Duration
	}{
		{0, 5 * time.Minute, "start", 0, 0, 300, -1, 0},
		{5 * time.Minute, 10 * time.Minute, "drop", 2, 1, 0, -1, 0},
		// 27 a 30-s window is 90 % of 60 a minute: the window from 37 s.
		{10 * time.Minute, 15 * time.Minute, "restore", 0, 0, 260, 37 * time.Second, 0},
		{17 * time.Minute, 20 * time.Minute, "after outage", 0, 0, 1, -1, 0},
	}
	if len(got) != len(want) {
		t.Fatalf("%d phases, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.From != w.from || g.To != w.to || g.Change != w.change || g.Transition != w.transition || g.Probing != w.probing ||
			g.Served != w.served || g.Recovered != w.recovered {
			t.Errorf("phase %d: %+v, want %+v", i, g, w)
		}
	}
	if s := got[0].Share; s != 1 {
		t.Errorf("full phase share %v, want 1 (300 of 60 a minute for 5 min)", s)
	}
	// The outage: calls that began in it, their retries, the bound.
	calls := []Call{
		{ID: 1, Method: http.MethodGet, Start: t0.Add(15 * time.Minute)},
		{ID: 2, Method: http.MethodGet, Start: t0.Add(16 * time.Minute), Err: &transport.StatusError{StatusCode: 503}},
		{ID: 3, Method: http.MethodPost, Start: t0.Add(16 * time.Minute)},
		{ID: 4, Method: http.MethodGet, Start: t0.Add(14 * time.Minute)},
	}
	oev := func(call int, at time.Duration) Event {
		return Event{Request: venue.Request{Time: t0.Add(at), Status: 503, Fault: "mix_5xx"}, Call: call}
	}
	r = &Run{Scenario: sc, Calls: calls, Events: []Event{
		oev(4, 14*time.Minute+59*time.Second), oev(4, 15*time.Minute+time.Second), // a retry in the outage
		oev(1, 15*time.Minute), oev(1, 15*time.Minute+time.Second),
		oev(2, 16*time.Minute), oev(3, 16*time.Minute),
	}}
	o := r.ThrottleFigures().Outage
	if o == nil || o.Calls != 3 || o.Requests != 5 || o.Retries != 2 || o.AttemptsBound != 6 || o.OutOfBudget != 0 {
		t.Errorf("outage figures %+v, want 3 calls, 5 requests, 2 retries, bound 6, 0 out of budget", o)
	}
}

// restoreSweep runs the drop layout with the adaptive limiter, restored
// at 20 min and at five times 10 s apart after it.
func restoreSweep(t *testing.T, wire Wire) []*Run {
	t.Helper()
	var moves []time.Duration
	for k := range 6 {
		moves = append(moves, time.Duration(k)*10*time.Second)
	}
	return restoreSweepOf(t, ThrottleLayouts()[0], moves, 5*time.Minute, wire)
}

// restoreSweepOf runs layout, a drop, with the adaptive limiter, its
// restore moved later by each of moves, each run ending after after the
// restore.
func restoreSweepOf(t *testing.T, layout ThrottleLayout, moves []time.Duration, after time.Duration, wire Wire) []*Run {
	t.Helper()
	runs := make([]*Run, len(moves))
	t.Run("restores", func(t *testing.T) {
		for k := range runs {
			l := layout
			restore := l.Limits.Schedule[1].At + moves[k]
			l.Limits.Schedule = slices.Clone(l.Limits.Schedule)
			l.Limits.Schedule[1].At = restore
			l.Duration = restore + after
			sc, err := ThrottleScenario(l, AdaptiveBucket, 1, wire)
			if err != nil {
				t.Fatal(err)
			}
			sc.Name = fmt.Sprintf("%s/restored at %v", sc.Name, restore)
			t.Run(sc.Name, func(t *testing.T) {
				t.Parallel()
				runs[k] = run(t, sc)
				if err := runs[k].Err(); err != nil {
					t.Error(err)
				}
			})
		}
	})
	return slices.DeleteFunc(runs, func(r *Run) bool { return r == nil })
}

// checkRestoreSweep asserts the sweep's drops: 429s as checkProbing
// says, and every restore recovered within maxRecovery.
func checkRestoreSweep(runs []*Run) []string {
	var fails []string
	for _, r := range runs {
		ph := r.ThrottleFigures().Phases
		if len(ph) != 3 {
			fails = append(fails, fmt.Sprintf("%s: %d phases, want 3", r.Scenario.Name, len(ph)))
			continue
		}
		fails = append(fails, checkProbing(r.Scenario.Name, ph[1:2])...)
		if rec := ph[2].Recovered; rec < 0 || rec > maxRecovery {
			fails = append(fails, fmt.Sprintf("%s: recovered %v after the restore, want within %v", r.Scenario.Name, rec, maxRecovery))
		}
	}
	return fails
}

// writeRestoreSweep prints the drop's 429s and the recovery per restore
// time, and the worst recovery.
func writeRestoreSweep(w io.Writer, runs []*Run) {
	worst := time.Duration(0)
	for _, r := range runs {
		ph := r.ThrottleFigures().Phases
		if len(ph) != 3 {
			continue
		}
		fmt.Fprintf(w, "%s: lowered %d 429s (%d+%d), %.1f%% after its first minute; recovered %v after the restore\n",
			r.Scenario.Name, ph[1].Throttled(), ph[1].Transition, ph[1].Probing, 100*ph[1].SteadyShare, ph[2].Recovered)
		if ph[2].Recovered < 0 || (worst >= 0 && ph[2].Recovered > worst) {
			worst = ph[2].Recovered
		}
	}
	fmt.Fprintf(w, "drop, adaptive: worst recovery over %d restore times: %v\n", len(runs), worst)
}
