package simulation

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tradewire/tradewire/venue"
)

// hostileSlice is the hostile runs go test makes: every hostile mode on
// seed 1 for three simulated minutes with a restart every minute and a
// half: in memory and over loopback HTTP/1.1, and the HTTP/2 stream modes
// over TLS.
func hostileSlice() []Scenario {
	var out []Scenario
	for _, m := range HostileModes() {
		out = append(out, HostileScenario(m, 1, WireMemory, 3*time.Minute, 90*time.Second))
		if m.Wire == "" {
			out = append(out, HostileScenario(m, 1, WireHTTP, 3*time.Minute, 90*time.Second))
		}
	}
	return out
}

func runAll(t *testing.T, scs []Scenario) []*Run {
	t.Helper()
	runs := make([]*Run, len(scs))
	t.Run("runs", func(t *testing.T) {
		for i, sc := range scs {
			t.Run(fmt.Sprintf("%s/%s/seed%d", strings.TrimPrefix(sc.Name, "hostile/"), sc.Wire, sc.Seed), func(t *testing.T) {
				t.Parallel()
				runs[i] = run(t, sc)
			})
		}
	})
	return slices.DeleteFunc(runs, func(r *Run) bool { return r == nil })
}

// TestHostilePlacement runs every hostile mode with the venue that creates
// a second order for a reused client_order_id, prints the ledger per mode
// (go test -v -run TestHostilePlacement ./simulation/), and
// checks that no key ever has two orders at the venue, that no Place
// answered not placed or rejected while the venue held an order, that no
// intent was lost, and that nothing beneath the transport replayed a write.
func TestHostilePlacement(t *testing.T) {
	t.Parallel()
	runs := runAll(t, hostileSlice())
	var buf bytes.Buffer
	WriteHostileTable(&buf, runs)
	t.Logf("hostile ledger:\n%s", buf.String())
	// Whatever the Placer does, every mode must have bitten: its create
	// faults fired, and a Placer placed something.
	for _, r := range runs {
		if f := r.Hostile(); f.Places < 10 || f.Keys < 10 {
			t.Errorf("%s: placement too thin: %+v", r.Scenario.Name, f)
		}
		for _, cf := range r.Scenario.Placement.CreateFaults {
			if !slices.ContainsFunc(r.Events, func(e Event) bool { return strings.Contains(e.Fault, string(cf.Kind)) }) {
				t.Errorf("%s: no create drew %s", r.Scenario.Name, cf.Kind)
			}
		}
	}
	must := []string{"one-order-per-key", "answers-true", "no-intent-lost", "wire-sends-once"}
	for _, r := range runs {
		for _, v := range r.Violations {
			if slices.Contains(must, v.Invariant) {
				t.Errorf("%s over %s: invariant %s: %v", r.Scenario.Name, r.Scenario.Wire, v.Invariant, v.Err)
			}
		}
	}
}

// TestOverTLS runs a placement scenario and a plain one over TLS +
// HTTP/2, as the real venue is served: the same invariants hold, and every
// answer came over HTTP/2.
func TestOverTLS(t *testing.T) {
	t.Parallel()
	for _, sc := range []Scenario{
		{Name: "tls/5xx", Seed: 1, Mix: StandardMixes()[2].Mix, Duration: 2 * time.Minute, Wire: WireTLS},
		func() Scenario {
			sc := placementScenario(2, NamedMix{Name: "lost", Mix: hostileMix}, venue.CreateSecond, 2*time.Minute, time.Minute)
			sc.Wire = WireTLS
			return sc
		}(),
	} {
		t.Run(sc.Name, func(t *testing.T) {
			t.Parallel()
			r := run(t, sc)
			if err := r.Err(); err != nil {
				t.Error(err)
			}
			answered := 0
			for _, e := range r.Events {
				if e.Proto != "" {
					answered++
					if e.Proto != "HTTP/2.0" {
						t.Fatalf("%s %s answered over %s", e.Method, e.Target, e.Proto)
					}
				}
			}
			if answered < 100 {
				t.Errorf("%d answers over HTTP/2, want a real workload", answered)
			}
			t.Logf("%d requests, %d answered over HTTP/2, statuses %s", len(r.Events), answered, statusSummary(r.Figures.ByStatus))
		})
	}
}

// TestJoinMarksReplays checks the join of the venue's ledger with the
// wire on a replay beneath the client, and that a real mismatch fails.
func TestJoinMarksReplays(t *testing.T) {
	t.Parallel()
	req := func(m, target, ts string) venue.Request {
		return venue.Request{Method: m, Target: target, Timestamp: ts}
	}
	w := func(call int, m, target, ts string) wireRecord {
		return wireRecord{call: call, method: m, target: target, timestamp: ts}
	}
	ev, err := join([]venue.Request{req("POST", "/o", "1"), req("POST", "/o", "1"), req("GET", "/a", "2")},
		[]wireRecord{w(1, "POST", "/o", "1"), w(2, "GET", "/a", "2")})
	if err != nil || len(ev) != 3 || ev[0].Replayed || !ev[1].Replayed || ev[1].Call != 1 || ev[2].Replayed || ev[2].Call != 2 {
		t.Fatalf("join: %v %+v", err, ev)
	}
	if err := checkWireSendsOnce(&Run{Events: ev}); err == nil {
		t.Error("wire-sends-once passed a replay")
	}
	if _, err := join([]venue.Request{req("GET", "/a", "2")}, []wireRecord{w(1, "POST", "/o", "1")}); err == nil {
		t.Error("a mismatch joined")
	}
	if _, err := join([]venue.Request{req("GET", "/a", "2")}, []wireRecord{w(1, "GET", "/a", "2"), w(2, "GET", "/b", "2")}); err == nil {
		t.Error("a request the venue never saw joined")
	}
	if _, err := join([]venue.Request{req("GET", "/a", "2")}, nil); err == nil {
		t.Error("a request no one sent joined")
	}
}

// TestHostileSameSeedSameLedger: a hostile run over TLS is as
// deterministic as one in memory.
func TestHostileSameSeedSameLedger(t *testing.T) {
	t.Parallel()
	modes := HostileModes()
	sc := HostileScenario(modes[len(modes)-3], 4, WireTLS, 2*time.Minute, time.Minute) // h2-refused-stream
	a, b := run(t, sc), run(t, sc)
	if a.Fingerprint() != b.Fingerprint() {
		t.Errorf("same scenario, different ledgers: %s vs %s", a.Fingerprint(), b.Fingerprint())
	}
}

// TestHostileInvariantsOnForgedRuns checks answers-true on hand-made
// runs, one row per rule.
func TestHostileInvariantsOnForgedRuns(t *testing.T) {
	t.Parallel()
	t0 := DefaultStart
	const cid = "6f1c1d8e-3a4b-5c6d-8e9f-0a1b2c3d4e5f"
	op := func(outcome string) PlaceOp {
		return PlaceOp{ID: 1, Op: "place", Key: "k1", ClientOrderID: cid, End: t0.Add(time.Minute), Outcome: outcome}
	}
	order := func(at time.Duration, state string) venue.OrderRecord {
		return venue.OrderRecord{ID: "o1", ClientOrderID: cid, State: state, CreatedAt: t0.Add(at)}
	}
	tests := []struct {
		name   string
		op     PlaceOp
		orders []venue.OrderRecord
		offset time.Duration
		ok     bool
	}{
		{"not placed, no order", op("not_placed"), nil, 0, true},
		{"not placed, an order", op("not_placed"), []venue.OrderRecord{order(0, "open")}, 0, false},
		{"not placed, an order placed after the answer", op("not_placed"), []venue.OrderRecord{order(2*time.Minute, "open")}, 0, true},
		{"not placed, an order on a venue 3 min ahead", op("not_placed"), []venue.OrderRecord{order(3*time.Minute+time.Second, "open")}, 3 * time.Minute, false},
		{"rejected, its own failed order", op("rejected"), []venue.OrderRecord{order(0, "failed")}, 0, true},
		{"rejected, a live order", op("rejected"), []venue.OrderRecord{order(0, "filled")}, 0, false},
		{"unknown, an order", op("unknown"), []venue.OrderRecord{order(0, "open")}, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := &Run{Scenario: Scenario{Start: t0, Hostile: venue.Hostile{ClockOffset: tt.offset}},
				Orders: tt.orders, Placement: &PlacementRun{Ops: []PlaceOp{tt.op}}}
			if err := checkAnswersTrue(r); (err == nil) != tt.ok {
				t.Errorf("answers-true: err = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

// TestOverTLSWithTimeouts runs the "all" mix, whose latency outlives the
// attempt timeout, and placement with answers delayed past it, over TLS:
// the venue records a request its client gave up on after the client has
// moved on, and the run must still be in lockstep and deterministic.
func TestOverTLSWithTimeouts(t *testing.T) {
	t.Parallel()
	all := StandardMixes()[len(StandardMixes())-1]
	sc := placementScenario(3, all, venue.CreateSecond, 2*time.Minute, time.Minute)
	sc.Wire = WireTLS
	sc.Placement.CreateFaults = []venue.Fault{{Kind: "latency", Delay: 12 * time.Second, AfterCommit: true}}
	a, b := run(t, sc), run(t, sc)
	if err := a.Err(); err != nil {
		t.Error(err)
	}
	if a.Fingerprint() != b.Fingerprint() {
		t.Errorf("same scenario over TLS, different ledgers: %s vs %s", a.Fingerprint(), b.Fingerprint())
	}
	if a.Figures.Dropped == 0 {
		t.Errorf("no request outlived its attempt: %+v", a.Figures)
	}
	t.Logf("%d requests, %d dropped or given up on, statuses %s", len(a.Events), a.Figures.Dropped, statusSummary(a.Figures.ByStatus))
}
