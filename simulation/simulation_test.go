package simulation

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"weak"

	"github.com/tradewire/tradewire/transport"
	"github.com/tradewire/tradewire/venue"
)

// run runs sc and fails the test on a harness error.
func run(t *testing.T, sc Scenario) *Run {
	t.Helper()
	r, err := sc.Run(context.Background())
	if err != nil {
		t.Fatalf("%s: %v", sc.Name, err)
	}
	return r
}

// TestFastSlice is the slice of the matrix that go test runs: two seeds,
// every standard mix, three simulated minutes each.
func TestFastSlice(t *testing.T) {
	t.Parallel()
	for _, seed := range []int64{1, 2} {
		for _, m := range StandardMixes() {
			t.Run(fmt.Sprintf("%s/seed%d", m.Name, seed), func(t *testing.T) {
				t.Parallel()
				r := run(t, Scenario{Name: m.Name, Seed: seed, Mix: m.Mix, Duration: 3 * time.Minute})
				if err := r.Err(); err != nil {
					t.Error(err)
				}
				f := r.Figures
				if f.Calls < 200 || f.POSTs == 0 || f.GETs == 0 || f.Creates == 0 {
					t.Errorf("workload too thin: %d calls, %d GETs, %d POSTs, %d creates", f.Calls, f.GETs, f.POSTs, f.Creates)
				}
				if m.Mix != (venue.Mix{}) && f.Retries == 0 && f.Failed == 0 {
					t.Errorf("mix %s left no trace: no retries, no failures", m.Name)
				}
				t.Logf("%d calls, %d requests, %d retries, statuses %s, %v simulated in %v (%.0fx)",
					f.Calls, f.Requests, f.Retries, statusSummary(f.ByStatus), f.Simulated.Round(time.Second), f.Wall, f.Ratio)
			})
		}
	}
}

func TestSameSeedSameLedger(t *testing.T) {
	t.Parallel()
	m := StandardMixes()[len(StandardMixes())-1] // all
	sc := Scenario{Name: m.Name, Seed: 7, Mix: m.Mix, Duration: 2 * time.Minute}
	a, b := run(t, sc), run(t, sc)
	if a.Fingerprint() != b.Fingerprint() {
		t.Errorf("same scenario, different ledgers: %s vs %s", a.Fingerprint(), b.Fingerprint())
	}
	sc.Seed = 8
	if c := run(t, sc); c.Fingerprint() == a.Fingerprint() {
		t.Errorf("seeds 7 and 8 gave the same ledger %s", a.Fingerprint())
	}
}

func TestScenarioValidation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		sc   Scenario
		want string
	}{
		{"no duration", Scenario{}, "Duration"},
		{"negative workers", Scenario{Duration: time.Minute, Workers: -1}, "negative"},
		{"no weight", Scenario{Duration: time.Minute, Steps: []Step{{Name: "x", Run: func(context.Context, *Bot) error { return nil }}}}, "Weight"},
		{"no run", Scenario{Duration: time.Minute, Steps: []Step{{Name: "x", Weight: 1}}}, "needs a Run"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := tt.sc.Run(context.Background())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want it to mention %q", err, tt.want)
			}
		})
	}
}

// TestBrokenWorkloadEndsTheRun: a step's error is the harness's, not an
// invariant's.
func TestBrokenWorkloadEndsTheRun(t *testing.T) {
	t.Parallel()
	sc := Scenario{Name: "broken", Duration: time.Minute, Steps: []Step{{Name: "boom", Weight: 1,
		Run: func(context.Context, *Bot) error { return io.ErrUnexpectedEOF }}}}
	if _, err := sc.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("err = %v, want the step's error", err)
	}
}

// rawClient is a deliberately broken client for the negative controls:
// plain net/http over the same in-memory venue, with the mistakes the
// invariants exist to catch switched on one at a time. It has no rate
// budget at all.
type rawClient struct {
	e  env
	hc *http.Client
	// retryPOST sends a POST again after 429, 5xx or a lost answer.
	retryPOST bool
	// retryAnyGET sends a GET again after any non-2xx answer.
	retryAnyGET bool
	// signOnce signs at the call's start and replays those headers.
	signOnce bool
	backoff  time.Duration
}

func newRawClient(c rawClient) func(env) (Caller, error) {
	return func(e env) (Caller, error) {
		c.e, c.hc = e, &http.Client{Transport: e.transport}
		return &c, nil
	}
}

func (c *rawClient) Do(ctx context.Context, method, target string, body []byte) (*transport.Response, error) {
	signedAt := c.e.clock.Now()
	path, _, _ := strings.Cut(target, "?")
	for attempt := 1; ; attempt++ {
		var rd io.Reader
		if body != nil {
			rd = bytes.NewReader(body)
		}
		req, err := http.NewRequestWithContext(ctx, method, c.e.baseURL+target, rd)
		if err != nil {
			return nil, err
		}
		at := c.e.clock.Now()
		if c.signOnce {
			at = signedAt
		}
		c.e.signer.SetHeaders(req.Header, at, method, target, body)
		status, data := 0, []byte(nil)
		if resp, err := c.hc.Do(req); err == nil {
			data, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			status = resp.StatusCode
		}
		if status >= 200 && status < 300 {
			return &transport.Response{StatusCode: status, Body: data, Attempts: attempt}, nil
		}
		transient := status == 0 || status == 429 || status >= 500
		retry := (method == http.MethodGet && (transient || c.retryAnyGET)) || (method == http.MethodPost && c.retryPOST && transient)
		if !retry || attempt == 3 {
			if status == 0 {
				return nil, fmt.Errorf("%s %s: failed after %d attempts: %w: %w", method, path, attempt, transport.ErrUnavailable, io.ErrUnexpectedEOF)
			}
			return nil, &transport.StatusError{Method: method, Path: path, StatusCode: status, Attempts: attempt}
		}
		t := c.e.clock.NewTimer(c.backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.Chan():
		}
	}
}

// TestNegativeControls feeds deliberately broken clients to the same
// runner and checks that the invariant meant to catch each one does.
func TestNegativeControls(t *testing.T) {
	t.Parallel()
	mixes := map[string]venue.Mix{}
	for _, m := range StandardMixes() {
		mixes[m.Name] = m.Mix
	}
	tests := []struct {
		name   string
		client rawClient
		mix    string
		think  time.Duration
		want   string
	}{
		{"retries POSTs", rawClient{retryPOST: true, backoff: time.Second}, "5xx-heavy", 0, "post-sent-once"},
		{"retries POSTs whose answer was lost", rawClient{retryPOST: true, backoff: time.Second}, "lost-heavy", 0, "post-sent-once"},
		{"retries a GET on 404", rawClient{retryAnyGET: true, backoff: time.Second}, "none", 0, "get-retry-rule"},
		{"replays a signature", rawClient{signOnce: true, backoff: 2 * time.Second}, "5xx-heavy", 0, "signatures-fresh"},
		{"replays a signature past 30 s", rawClient{signOnce: true, backoff: 31 * time.Second}, "5xx-heavy", 0, "signatures-fresh"},
		{"ignores the budget", rawClient{backoff: time.Second}, "none", 100 * time.Millisecond, "rate-budget"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sc := Scenario{Name: tt.name, Seed: 3, Mix: mixes[tt.mix], Duration: 2 * time.Minute,
				Think: tt.think, newCaller: newRawClient(tt.client)}
			r := run(t, sc)
			var got []string
			for _, v := range r.Violations {
				got = append(got, v.Invariant)
			}
			if !slices.Contains(got, tt.want) {
				t.Fatalf("violations %v: want %s among them", got, tt.want)
			}
			t.Logf("caught: %v", r.Err())
		})
	}
	// The correct client passes the same scenarios.
	for _, mix := range []string{"5xx-heavy", "lost-heavy"} {
		r := run(t, Scenario{Name: "transport", Seed: 3, Mix: mixes[mix], Duration: 2 * time.Minute})
		if err := r.Err(); err != nil {
			t.Errorf("transport.Client under %s: %v", mix, err)
		}
	}
}

// TestInvariantsOnForgedLedgers checks each rule on a hand-made run, one
// row per rule, including conditions the simulated venue itself prevents
// (it never accepts a stale signature), so a venue bug could not hide a
// client bug.
func TestInvariantsOnForgedLedgers(t *testing.T) {
	t.Parallel()
	t0 := DefaultStart
	ts := func(d time.Duration) string { return strconv.FormatInt(t0.Add(d).Unix(), 10) }
	ev := func(call int, method string, at time.Duration, status int, mut ...func(*Event)) Event {
		e := Event{Request: venue.Request{Time: t0.Add(at), Method: method, Target: "/x/", Timestamp: ts(at),
			SignatureValid: status != 401, Status: status}, Call: call, Signature: "sig" + ts(at)}
		for _, m := range mut {
			m(&e)
		}
		return e
	}
	get := func(id, attempts int) Call {
		return Call{ID: id, Method: http.MethodGet, Target: "/x/", Start: t0, End: t0, Attempts: attempts}
	}
	post := func(id, attempts int) Call {
		return Call{ID: id, Method: http.MethodPost, Target: "/x/", Start: t0, End: t0, Attempts: attempts}
	}
	dropped := func(e *Event) { e.Dropped, e.Status = true, 0 }
	tests := []struct {
		name      string
		invariant string
		calls     []Call
		events    []Event
		ok        bool
	}{
		{"GET retried after 503 then 200", "get-retry-rule", []Call{get(1, 2)},
			[]Event{ev(1, "GET", 0, 503), ev(1, "GET", time.Second, 200)}, true},
		{"GET retried after a drop", "get-retry-rule", []Call{get(1, 2)},
			[]Event{ev(1, "GET", 0, 0, dropped), ev(1, "GET", time.Second, 200)}, true},
		{"GET retried after 404", "get-retry-rule", []Call{get(1, 2)},
			[]Event{ev(1, "GET", 0, 404), ev(1, "GET", time.Second, 404)}, false},
		{"GET retried after 501", "get-retry-rule", []Call{get(1, 2)},
			[]Event{ev(1, "GET", 0, 501), ev(1, "GET", time.Second, 200)}, false},
		{"GET sent 5 times", "get-retry-rule", []Call{get(1, 5)},
			[]Event{ev(1, "GET", 0, 503), ev(1, "GET", 1*time.Second, 503), ev(1, "GET", 2*time.Second, 503),
				ev(1, "GET", 3*time.Second, 503), ev(1, "GET", 4*time.Second, 503)}, false},
		{"POST once after 503", "post-sent-once", []Call{post(1, 1)}, []Event{ev(1, "POST", 0, 503)}, true},
		{"POST twice", "post-sent-once", []Call{post(1, 2)},
			[]Event{ev(1, "POST", 0, 503), ev(1, "POST", time.Second, 201)}, false},
		{"one body in two calls", "post-sent-once", []Call{post(1, 1), post(2, 1)},
			[]Event{ev(1, "POST", 0, 0, dropped, func(e *Event) { e.ClientOrderID = "c1" }),
				ev(2, "POST", time.Second, 201, func(e *Event) { e.ClientOrderID = "c1" })}, false},
		{"accepted signature 29 s old", "signatures-fresh", []Call{get(1, 1)},
			[]Event{ev(1, "GET", 0, 200, func(e *Event) { e.Time = e.Time.Add(29 * time.Second) })}, true},
		{"accepted signature 31 s old", "signatures-fresh", []Call{get(1, 1)},
			[]Event{ev(1, "GET", 0, 200, func(e *Event) { e.Time = e.Time.Add(31 * time.Second) })}, false},
		{"accepted invalid signature", "signatures-fresh", []Call{get(1, 1)},
			[]Event{ev(1, "GET", 0, 200, func(e *Event) { e.SignatureValid = false })}, false},
		{"refused 401", "signatures-fresh", []Call{get(1, 1)}, []Event{ev(1, "GET", 0, 401)}, false},
		{"retry 2 s later with the same timestamp", "signatures-fresh", []Call{get(1, 2)},
			[]Event{ev(1, "GET", 0, 503), ev(1, "GET", 2*time.Second, 200, func(e *Event) { e.Timestamp, e.Signature = ts(0), "sig"+ts(0) })}, false},
		{"retry within the second with the same timestamp", "signatures-fresh", []Call{get(1, 2)},
			[]Event{ev(1, "GET", 0, 503), ev(1, "GET", 500*time.Millisecond, 200)}, true},
		{"300 at once, then one per 0.6 s", "rate-budget", nil, burst(ev, 300, 0, 0, 10, 600*time.Millisecond), true},
		{"301 at once", "rate-budget", nil, burst(ev, 301, 0, 0, 0, 0), false},
		{"300 at once, then one 0.5 s later", "rate-budget", nil, burst(ev, 300, 0, 0, 1, 500*time.Millisecond), false},
		{"a 429 injected by the mix", "rate-budget", nil,
			[]Event{ev(0, "GET", 0, 429, func(e *Event) { e.Fault = "mix_429" })}, true},
		{"a 429 earned by the client", "rate-budget", nil, []Event{ev(0, "GET", 0, 429)}, false},
		{"client and wire agree", "calls-ended", []Call{get(1, 2)},
			[]Event{ev(1, "GET", 0, 503), ev(1, "GET", time.Second, 200)}, true},
		{"client under-reports attempts", "calls-ended", []Call{get(1, 1)},
			[]Event{ev(1, "GET", 0, 503), ev(1, "GET", time.Second, 200)}, false},
		{"untyped error", "calls-ended", []Call{{ID: 1, Method: "GET", Start: t0, End: t0, Err: io.EOF}}, nil, false},
		{"request outside a call", "calls-ended", nil, []Event{ev(0, "GET", 0, 200)}, false},
	}
	checks := map[string]func(*Run) error{}
	for _, inv := range DefaultInvariants() {
		checks[inv.Name] = inv.Check
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := &Run{Scenario: Scenario{Start: t0}, Calls: tt.calls, Events: tt.events, begun: len(tt.calls)}
			err := checks[tt.invariant](r)
			if (err == nil) != tt.ok {
				t.Errorf("%s: err = %v, want ok=%v", tt.invariant, err, tt.ok)
			}
		})
	}
}

// burst makes n requests at start, then more requests every gap.
func burst(ev func(int, string, time.Duration, int, ...func(*Event)) Event, n int, call int, start time.Duration, more int, gap time.Duration) []Event {
	var out []Event
	for range n {
		out = append(out, ev(call, "GET", start, 200))
	}
	for i := 1; i <= more; i++ {
		out = append(out, ev(call, "GET", start+time.Duration(i)*gap, 200))
	}
	return out
}

// matrixScenarios is the full matrix, per seed: every standard mix under
// the realistic load for dur; one saturated run (the default Think, the
// "all" mix) for sat, so the rate budget is held at its limit; and the
// placement scenarios (every placement mix on the venue that creates a
// second order for a reused client_order_id, with restarts) under the
// realistic load for dur; and every hostile mode (HostileModes) for
// hostile; all over wire (the h2 modes always over TLS).
func matrixScenarios(seeds int, dur, sat, hostile time.Duration, wire Wire) []Scenario {
	think, burst := RealisticLoad()
	all := StandardMixes()[len(StandardMixes())-1]
	var out []Scenario
	for seed := int64(1); seed <= int64(seeds); seed++ {
		for _, m := range StandardMixes() {
			out = append(out, Scenario{Name: m.Name, Seed: seed, Mix: m.Mix, Duration: dur, Think: think, Burst: burst, Wire: wire})
		}
		out = append(out, Scenario{Name: "saturated/" + all.Name, Seed: seed, Mix: all.Mix, Duration: sat, Wire: wire})
		for _, m := range placementMixes() {
			for _, dup := range duplicateModes {
				sc := placementScenario(seed, m, dup, dur, DefaultRestartEvery)
				sc.Think, sc.Burst, sc.Wire = think, burst, wire
				out = append(out, sc)
			}
		}
		for _, m := range HostileModes() {
			out = append(out, HostileScenario(m, seed, wire, hostile, DefaultRestartEvery/4))
		}
	}
	return out
}

// matrixWire is the wire TestMatrix runs over, from TRADEWIRE_SIM_WIRE's
// value: TLS + HTTP/2 on loopback, as the real venue is served, unless it
// says memory or http.
func matrixWire(env string) (Wire, error) {
	switch w := Wire(env); w {
	case "":
		return WireTLS, nil
	case WireMemory, WireTLS, WireHTTP:
		return w, nil
	}
	return "", fmt.Errorf("TRADEWIRE_SIM_WIRE=%q: want tls (the default), http or memory", env)
}

// TestMatrixWire: the matrix runs over TLS + HTTP/2 by default, and over
// the wire TRADEWIRE_SIM_WIRE names otherwise.
func TestMatrixWire(t *testing.T) {
	t.Parallel()
	for env, want := range map[string]Wire{"": WireTLS, "tls": WireTLS, "http": WireHTTP, "memory": WireMemory} {
		if got, err := matrixWire(env); err != nil || got != want {
			t.Errorf("TRADEWIRE_SIM_WIRE=%q: %q, %v; want %q", env, got, err, want)
		}
	}
	for _, env := range []string{"h2", "TLS", " tls"} {
		if got, err := matrixWire(env); err == nil {
			t.Errorf("TRADEWIRE_SIM_WIRE=%q: %q, want an error", env, got)
		}
	}
	for _, sc := range matrixScenarios(1, time.Minute, time.Minute, time.Minute, WireTLS) {
		if sc.Wire != WireTLS {
			t.Errorf("matrix scenario %s runs over %q, want tls", sc.Name, sc.Wire)
		}
	}
}

// TestMatrix is the full matrix `make sim` runs (matrixScenarios):
// TRADEWIRE_SIM_SEEDS seeds (default 5), realistic runs of
// TRADEWIRE_SIM_DURATION (default 24h) and saturated ones of
// TRADEWIRE_SIM_SATURATED (default 2h), and hostile runs of
// TRADEWIRE_SIM_HOSTILE (default 1h), all over TRADEWIRE_SIM_WIRE (tls,
// the default: TLS + HTTP/2 on loopback, as the real venue is served; http:
// plain HTTP/1.1 on loopback; memory: in memory; the h2 modes always run
// over TLS), and the throttle scenarios for one seed (ThrottleLayouts with
// every client, the drop restored at six times). It prints the
// figures of every run, the placement figures, the hostile ledger, the
// throttle figures, and the ratio of simulated to wall time, and fails if
// any invariant broke.
func TestMatrix(t *testing.T) {
	if os.Getenv("TRADEWIRE_SIM_FULL") == "" {
		t.Skip("set TRADEWIRE_SIM_FULL=1 (or run make sim) for the full matrix")
	}
	env := func(name string, def time.Duration) time.Duration {
		s := os.Getenv(name)
		if s == "" {
			return def
		}
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			t.Fatalf("%s=%q: want a positive duration", name, s)
		}
		return d
	}
	dur, sat := env("TRADEWIRE_SIM_DURATION", 24*time.Hour), env("TRADEWIRE_SIM_SATURATED", 2*time.Hour)
	hostile := env("TRADEWIRE_SIM_HOSTILE", time.Hour)
	wire, err := matrixWire(os.Getenv("TRADEWIRE_SIM_WIRE"))
	if err != nil {
		t.Fatal(err)
	}
	seeds := 5
	if s := os.Getenv("TRADEWIRE_SIM_SEEDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("TRADEWIRE_SIM_SEEDS=%q: want a positive number", s)
		}
		seeds = n
	}
	// Each run's record is let go once checked (summary): only the runs in
	// flight hold theirs. Collecting garbage less often is a cheap win for
	// the harness (about 10 % of the wall), under a soft cap on the heap.
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(matrixMemoryLimit))
	mt, err := startMemTrace(os.Getenv("TRADEWIRE_SIM_MEMTRACE"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := mt.close(); err != nil {
			t.Error(err)
		}
	}()
	scenarios := matrixScenarios(seeds, dur, sat, hostile, wire)
	runs := make([]*Run, len(scenarios))
	start := time.Now()
	t.Run("runs", func(t *testing.T) {
		for i, sc := range scenarios {
			name := fmt.Sprintf("%s/seed%d", sc.Name, sc.Seed)
			if sc.Placement != nil {
				name = fmt.Sprintf("%s/%s/%s/seed%d", sc.Name, sc.Placement.Duplicate, sc.Wire, sc.Seed)
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				mt.enter(name)
				defer mt.leave(name)
				r := run(t, sc)
				if err := r.Err(); err != nil {
					t.Error(err)
				}
				runs[i] = summary(r)
			})
		}
	})
	// The throttle scenarios, one seed: ThrottleLayouts with every client,
	// and the drop restored at six times 10 s apart (where in its probing
	// the adaptive limiter is when capacity comes back decides how soon it
	// finds it).
	layouts := ThrottleLayouts()
	mt.enter("throttle")
	throttle := throttleRuns(t, layouts, throttleClients, 1, wire)
	restores := restoreSweep(t, wire)
	mt.leave("throttle")
	elapsed := time.Since(start)
	var done []*Run
	var simTotal time.Duration
	for _, r := range runs {
		if r != nil {
			done = append(done, r)
			simTotal += r.Figures.Simulated
		}
	}
	var buf bytes.Buffer
	WriteTable(&buf, done)
	fmt.Fprintln(&buf)
	WritePlacementTable(&buf, done)
	fmt.Fprintln(&buf)
	var hostileRuns []*Run
	for _, r := range done {
		if strings.HasPrefix(r.Scenario.Name, "hostile/") {
			hostileRuns = append(hostileRuns, r)
		}
	}
	WriteHostileTable(&buf, hostileRuns)
	fmt.Fprintln(&buf)
	throttleList := orderedRuns(layouts, throttle)
	WriteThrottleTable(&buf, throttleList)
	fmt.Fprintln(&buf)
	writeRestoreSweep(&buf, restores)
	fmt.Fprintln(&buf)
	// A -run filter that selected no throttle run (the README's
	// saturated-cost command) has nothing to check.
	if len(throttle) > 0 {
		for _, f := range checkThrottle(throttle) {
			t.Error("throttle: " + f)
		}
	}
	for _, r := range append(slices.Clip(throttleList), restores...) {
		done = append(done, r)
		simTotal += r.Figures.Simulated
	}
	writeRatios(&buf, done)
	parallel := "?"
	if f := flag.Lookup("test.parallel"); f != nil {
		parallel = f.Value.String()
	}
	fmt.Fprintf(&buf, "matrix: %v simulated in %v elapsed (%d runs, %s at a time, GOMAXPROCS=%d): %.0fx\n",
		simTotal.Round(time.Second), elapsed.Round(time.Millisecond), len(done), parallel, runtime.GOMAXPROCS(0),
		float64(simTotal)/float64(elapsed))
	fmt.Fprintf(&buf, "matrix: peak resident memory %s\n", peakRSS())
	fmt.Print(buf.String())
}

// matrixMemoryLimit is the soft cap on the Go heap TestMatrix sets
// (debug.SetMemoryLimit): the collector works harder near it instead of
// letting GOGC 400 grow the heap to five times what is live.
const matrixMemoryLimit = 320 << 20

// summary keeps of a checked run only what the matrix's tables print
// (Scenario, Figures, Violations, the placement's figures and the hostile
// row), letting go of its calls, events and orders.
func summary(r *Run) *Run {
	h := r.Hostile()
	s := &Run{Scenario: r.Scenario, Figures: r.Figures, Violations: r.Violations, hostile: &h}
	if r.Placement != nil {
		s.Placement = &PlacementRun{Restarts: r.Placement.Restarts, Figures: r.Placement.Figures}
	}
	return s
}

// TestSummaryLetsTheRunGo: once a run is summarised, nothing of its record
// stays reachable from the summary: the matrix keeps a summary of every
// run until its final report, and a summary that held the run's process
// (through a step bound to it) held its venue and whole ledger too, so the
// matrix's memory grew with every run it had finished.
func TestSummaryLetsTheRunGo(t *testing.T) {
	t.Parallel()
	r := run(t, placementScenario(4, placementMixes()[0], venue.CreateSecond, 2*time.Minute, time.Minute))
	if r.Placement == nil || len(r.Placement.Ops) == 0 {
		t.Fatal("the placement run made no ops: nothing to watch")
	}
	// The ops' array is the run's process's own: it lives as long as the
	// process does.
	ops := weak.Make(&r.Placement.Ops[0])
	runtime.GC()
	if ops.Value() == nil { // the control: held while the run is
		t.Fatal("the run's ops were collected while the run was held")
	}
	s := summary(r)
	r = nil
	runtime.GC()
	if ops.Value() != nil {
		t.Errorf("the summary of %s keeps the run's process (and its venue) reachable", s.Scenario.Name)
	}
	runtime.KeepAlive(s)
}

// peakRSS is the process's peak resident set size (VmHWM in
// /proc/self/status), or "unknown" where there is none to read.
func peakRSS() string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "unknown"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			return strings.TrimSpace(v) + " (VmHWM)"
		}
	}
	return "unknown"
}

// writeRatios prints the simulated/wall ratio of each kind of run: the
// lowest, the median and the highest of the runs of that kind, each run
// measured on its own wall clock. For the saturated runs, whose cost is
// their requests, it prints too the wall time per request against the
// floor measured in the same run (Figures.Floor: the client's signature
// and the venue's verification), and their ratio (goal: at most 1.2).
func writeRatios(w io.Writer, runs []*Run) {
	defer writeFloorRatios(w, runs)
	kinds := map[string][]float64{}
	var names []string
	for _, r := range runs {
		k := "realistic/" + string(r.Scenario.Wire)
		switch {
		case strings.HasPrefix(r.Scenario.Name, "saturated"):
			k = "saturated/" + string(r.Scenario.Wire)
		case strings.HasPrefix(r.Scenario.Name, "hostile"):
			k = "hostile+placement/" + string(r.Scenario.Wire)
		case strings.HasPrefix(r.Scenario.Name, "throttle"):
			k = "throttle/" + string(r.Scenario.Wire)
		case r.Placement != nil:
			k = "realistic+placement/" + string(r.Scenario.Wire)
		}
		if _, ok := kinds[k]; !ok {
			names = append(names, k)
		}
		kinds[k] = append(kinds[k], r.Figures.Ratio)
	}
	for _, k := range names {
		rs := kinds[k]
		slices.Sort(rs)
		fmt.Fprintf(w, "sim/wall %-20s %3d runs: min %.0fx, median %.0fx, max %.0fx\n", k, len(rs), rs[0], rs[len(rs)/2], rs[len(rs)-1])
	}
}

// writeFloorRatios prints, per wire, the saturated runs' wall time per
// request, the floor measured in each run, and each run's ratio of the
// two: the lowest, the median and the highest.
func writeFloorRatios(w io.Writer, runs []*Run) {
	type costs struct {
		per, floor, ratio []float64
		inRun             int // the fewest floor samples a run took during its steps
	}
	kinds := map[Wire]*costs{}
	var wires []Wire
	for _, r := range runs {
		f := r.Figures
		if !strings.HasPrefix(r.Scenario.Name, "saturated") || f.FloorRatio == 0 {
			continue
		}
		c := kinds[r.Scenario.Wire]
		if c == nil {
			c = &costs{inRun: f.FloorInRun}
			kinds[r.Scenario.Wire] = c
			wires = append(wires, r.Scenario.Wire)
		}
		c.per = append(c.per, float64(f.PerRequest)/1e3)
		c.floor = append(c.floor, float64(f.Floor)/1e3)
		c.ratio = append(c.ratio, f.FloorRatio)
		c.inRun = min(c.inRun, f.FloorInRun)
	}
	spread := func(xs []float64, format string) string {
		slices.Sort(xs)
		return fmt.Sprintf(format+" / "+format+" / "+format, xs[0], xs[len(xs)/2], xs[len(xs)-1])
	}
	for _, wire := range wires {
		c := kinds[wire]
		fmt.Fprintf(w, "wall/request saturated/%-9s %3d runs (min / median / max): %s µs; floor (sign + verify, >= %d samples through each run) %s µs; %s x the floor (goal <= 1.2)\n",
			wire, len(c.per), spread(c.per, "%.0f"), c.inRun, spread(c.floor, "%.0f"), spread(c.ratio, "%.2f"))
	}
}
