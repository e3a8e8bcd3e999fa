package simulation

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/tradewire/tradewire/broker/brokertest"
	"github.com/tradewire/tradewire/signing"
	"github.com/tradewire/tradewire/transport"
	"github.com/tradewire/tradewire/venue"
)

// Defaults a Scenario uses for its zero fields.
const (
	DefaultWorkers  = 4
	DefaultThink    = 2 * time.Second
	DefaultWatchdog = 30 * time.Second
)

// DefaultStart is the simulated time a run starts at when Scenario.Start is
// zero. It is a quarter second past a whole second, so that attempts half a
// second apart carry different x-timestamp values.
var DefaultStart = time.Date(2026, 3, 2, 0, 0, 0, 250_000_000, time.UTC)

// Scenario is one deterministic simulation: a simulated venue with a
// seeded fault mix, a workload of simulated bots sharing one
// transport.Client, a simulated duration, and the invariants the run must
// keep. Running the same Scenario twice gives the same ledger.
//
// The zero value is not runnable: Duration is required. A Scenario is a
// value; Run does not modify it.
type Scenario struct {
	// Name labels the run in reports.
	Name string
	// Seed drives the venue's prices and ids, the fault mix (unless
	// Mix.Seed is set) and every bot's choices.
	Seed int64
	// Mix is the venue's seeded fault mix: rates of 429s, 5xx, lost
	// responses (half 500, half dropped connections) and latency.
	Mix venue.Mix
	// Duration is how long, in simulated time, bots keep starting steps.
	// Steps under way at the end are finished, not cut short.
	Duration time.Duration
	// Workers is the number of simulated bots (default DefaultWorkers).
	Workers int
	// Think is the mean pause between one bot's steps, drawn uniformly from
	// [0, 2×Think) (default DefaultThink). The default four bots ask for
	// about 120 calls a minute, more than the venue's 100: the client's
	// throttle is exercised all the time. RealisticLoad is a fleet that
	// idles most of the day.
	Think time.Duration
	// Burst, when set, makes the bots busier for a while at regular
	// intervals: a realistic fleet idles most of the day and bursts now
	// and then. See RealisticLoad.
	Burst Burst
	// Steps is the workload each bot draws from (default DefaultSteps()).
	Steps []Step
	// Placement, when set, adds a step that places orders through an
	// orders.Placer with idempotency keys, in a process that restarts
	// now and then, and the placement invariants (PlacementInvariants).
	Placement *Placement
	// Invariants are checked after the run (default DefaultInvariants(),
	// and PlacementInvariants() too when Placement is set).
	Invariants []Invariant
	// AttemptTimeout bounds each attempt of the client (default
	// transport's default, 10 s). Latency above it is a timeout.
	AttemptTimeout time.Duration
	// Start is the simulated time the run starts at (default DefaultStart).
	Start time.Time
	// Watchdog is how much wall time a bot may run without parking before
	// the run is declared hung (default DefaultWatchdog).
	Watchdog time.Duration
	// Wire is how the client reaches the venue: WireMemory (the default,
	// brokertest.New's in-memory RoundTripper), WireTLS (a loopback
	// listener speaking TLS + HTTP/2 as the real venue does,
	// brokertest.NewTLSServer, with its Server.Transport) or WireHTTP (plain HTTP/1.1 on a loopback listener,
	// brokertest.NewServer).
	Wire Wire
	// Hostile is the venue's hostile modes for the whole run (see
	// venue.Hostile); the zero value is a well-behaved venue.
	Hostile venue.Hostile
	// PageSize is the venue's page size (default the venue's, 100).
	PageSize int
	// RateLimits is the venue's per-endpoint-class buckets and their
	// schedule (venue.Config.RateLimits); the zero value leaves every
	// endpoint on the one account-wide bucket of 100 a minute in bursts
	// of 300. A venue that lowers a class under the client's budget
	// throttles it: leave rate-budget out of Invariants then.
	RateLimits venue.RateLimits
	// Outage, when set, is a stretch of the run in which the venue answers
	// every request 503 (a fault mix of Rate5xx 1 in place of Mix, which
	// is back, re-seeded, when it ends). The zero value is no outage.
	Outage Window

	// newCaller replaces the transport client, for negative controls.
	newCaller func(env) (Caller, error)
	// wall measures wall time (default the real clock).
	wall clockwork.Clock
	// floorEvery, when set, is the wall time between two floor samples
	// during the run (default: calibrated, see floorMeter).
	floorEvery time.Duration
}

// Window is a stretch of a run, From to To after its start.
type Window struct {
	From, To time.Duration
}

// contains reports whether d after the start is in w.
func (w Window) contains(d time.Duration) bool { return d >= w.From && d < w.To }

// Burst is a load profile: during the first For of every Every of
// simulated time (from the run's start), the bots pause Think on average
// between steps instead of Scenario.Think. The zero value is no bursts.
type Burst struct {
	Every, For, Think time.Duration
}

// RealisticLoad returns the Think and Burst of a realistic fleet: the
// default four bots pause 14 s on average between steps, and for one
// minute in every fifteen 1.5 s. Over a day they use about a quarter of
// the 100-a-minute budget; a burst asks for about twice the budget for a
// minute, which the 300-token bucket absorbs. The default Think
// saturates the budget instead, all day.
func RealisticLoad() (think time.Duration, burst Burst) {
	return 14 * time.Second, Burst{Every: 15 * time.Minute, For: time.Minute, Think: 1500 * time.Millisecond}
}

// Wire is how a scenario's client reaches the venue.
type Wire string

// The wires.
const (
	// WireMemory calls the venue's handler in memory (also the zero value "").
	WireMemory Wire = "memory"
	// WireTLS speaks TLS + HTTP/2 to a loopback listener.
	WireTLS Wire = "tls"
	// WireHTTP speaks plain HTTP/1.1 to a loopback listener.
	WireHTTP Wire = "http"
)

// Caller is what the bots call the venue through: a *transport.Client.
type Caller interface {
	Do(ctx context.Context, method, target string, body []byte) (*transport.Response, error)
}

// env is what a Caller is built from.
type env struct {
	clock          clockwork.Clock
	transport      http.RoundTripper
	baseURL        string
	signer         *signing.Signer
	attemptTimeout time.Duration
}

func (s Scenario) withDefaults() (Scenario, error) {
	if s.Duration <= 0 {
		return s, fmt.Errorf("simulation: scenario %q: Duration %v must be positive", s.Name, s.Duration)
	}
	if s.Workers < 0 || s.Think < 0 || s.AttemptTimeout < 0 || s.Watchdog < 0 || s.PageSize < 0 {
		return s, fmt.Errorf("simulation: scenario %q: Workers, Think, AttemptTimeout, Watchdog and PageSize must not be negative", s.Name)
	}
	switch s.Wire {
	case "":
		s.Wire = WireMemory
	case WireMemory, WireTLS, WireHTTP:
	default:
		return s, fmt.Errorf("simulation: scenario %q: unknown Wire %q", s.Name, s.Wire)
	}
	if s.Workers == 0 {
		s.Workers = DefaultWorkers
	}
	if s.Think == 0 {
		s.Think = DefaultThink
	}
	if s.Steps == nil {
		s.Steps = DefaultSteps()
	}
	total := 0
	for _, st := range s.Steps {
		if st.Weight < 0 || st.Run == nil {
			return s, fmt.Errorf("simulation: scenario %q: step %q needs a Run and a non-negative Weight", s.Name, st.Name)
		}
		total += st.Weight
	}
	if total == 0 {
		return s, fmt.Errorf("simulation: scenario %q: no step has a positive Weight", s.Name)
	}
	if s.Outage != (Window{}) && (s.Outage.From < 0 || s.Outage.To <= s.Outage.From) {
		return s, fmt.Errorf("simulation: scenario %q: Outage needs 0 <= From < To", s.Name)
	}
	if s.Burst != (Burst{}) && (s.Burst.Every <= 0 || s.Burst.For <= 0 || s.Burst.For > s.Burst.Every || s.Burst.Think <= 0) {
		return s, fmt.Errorf("simulation: scenario %q: Burst needs 0 < For <= Every and a positive Think", s.Name)
	}
	if s.Placement != nil {
		p, err := s.Placement.withDefaults()
		if err != nil {
			return s, fmt.Errorf("simulation: scenario %q: %w", s.Name, err)
		}
		s.Placement = &p
	}
	if s.Invariants == nil {
		s.Invariants = DefaultInvariants()
		if s.Placement != nil {
			s.Invariants = append(s.Invariants, PlacementInvariants()...)
		}
	}
	if s.AttemptTimeout == 0 {
		s.AttemptTimeout = defaultAttemptTimeout
	}
	if s.Start.IsZero() {
		s.Start = DefaultStart
	}
	if s.Watchdog == 0 {
		s.Watchdog = DefaultWatchdog
	}
	if s.Mix.Seed == 0 {
		s.Mix.Seed = s.Seed
	}
	if s.wall == nil {
		s.wall = clockwork.NewRealClock()
	}
	if s.newCaller == nil {
		s.newCaller = newTransportCaller
	}
	return s, nil
}

// What the clients' zero transport.Config stands for, as the invariants
// and figures must know it: 4 attempts of a GET (Config.Retry nil), a
// retry budget of 500 tokens, and 10 s an attempt.
const (
	defaultMaxAttempts    = 4
	defaultRetryBudget    = 500
	defaultAttemptTimeout = 10 * time.Second
)

func newTransportCaller(e env) (Caller, error) {
	return transport.New(e.baseURL, e.signer, transport.Config{Clock: e.clock, RoundTripper: e.transport, AttemptTimeout: e.attemptTimeout})
}

// Run is the record of one scenario run: the client's history, the wire
// and venue ledger joined into Events, the orders the venue created, the
// figures, and the invariants that failed.
type Run struct {
	// Scenario is the scenario as run, defaults filled in. Its Steps are
	// the scenario's: the placement's keyed step, bound to the run's
	// process, is not among them, so a Scenario kept after the run holds
	// nothing of it.
	Scenario Scenario
	// Calls is the client-side history: one entry per call a bot made,
	// in the order the calls ended.
	Calls []Call
	// Events is every request the venue received, in the order it
	// finished with them, joined with what was on the wire.
	Events []Event
	// Orders is every order the venue created.
	Orders []venue.OrderRecord
	// Placement is the record of the placement, when the scenario has one.
	Placement *PlacementRun
	// Figures summarise the run.
	Figures Figures
	// Violations lists each invariant that failed, in Invariants order.
	Violations []Violation

	begun int    // calls begun
	base  string // the venue's base URL
	// undelivered counts, per call, the attempts the transport ended
	// before they reached the venue (a replay the budget did not admit).
	undelivered map[int]int
	hostile     *HostileFigures // Hostile's answer, kept when the record it is drawn from is let go
	byCallOnce  sync.Once
	byCall      map[int][]Event
}

// Call is one call a bot made through the Caller.
type Call struct {
	ID     int    // unique in the run, from 1
	Bot    int    // the bot that made it
	Step   string // the workload step it belongs to
	Method string
	Target string
	// ClientOrderID is the body's client_order_id, for a create.
	ClientOrderID string
	Start, End    time.Time // simulated
	// Attempts is how many times the client says it sent the request:
	// Response.Attempts, a *StatusError's Attempts, 1 for a write whose
	// outcome is unknown, or the count in the message of a read that
	// failed below HTTP.
	Attempts int
	// Status is the final status: the 2xx answered (also when it comes
	// with an unknown outcome), a *StatusError's status, or 0.
	Status int
	// Err is what the Caller returned; nil for a 2xx.
	Err error
}

// Event is one request the venue received (its Ledger entry) joined with
// the wire: which call sent it, its signature and its client_order_id.
type Event struct {
	venue.Request
	// Call is the ID of the Call that sent it; 0 if none did.
	Call int
	// Signature is the x-signature sent.
	Signature string
	// ClientOrderID is the client_order_id of a create's body.
	ClientOrderID string
	// Op is the ID of the PlaceOp (Place or Recover) that sent it; 0 if
	// none did. A Placer's requests belong to an op, not to a Call.
	Op int
	// Replayed marks a request the venue received again beneath the
	// client: the same method, target and x-timestamp as the one before
	// it, with no new request on the wire (net/http's HTTP/2 client
	// replays a request after REFUSED_STREAM or GOAWAY by itself). Call
	// and Op are the original's.
	Replayed bool
	// Proto is the protocol the client's answer came over ("HTTP/2.0"
	// over WireTLS), or "" when it had none.
	Proto string
}

// Violation is an invariant that failed.
type Violation struct {
	Invariant string
	Err       error
}

// Err returns the violations joined into one error, or nil.
func (r *Run) Err() error {
	errs := make([]error, len(r.Violations))
	for i, v := range r.Violations {
		errs[i] = fmt.Errorf("invariant %s: %w", v.Invariant, v.Err)
	}
	return errors.Join(errs...)
}

// Run runs the scenario on a fresh simulated venue and checks its
// invariants. The error is about the harness (an invalid scenario, a
// deadlock, a hang, a broken workload, ctx ending); invariant failures are
// in Run.Violations and Run.Err.
func (s Scenario) Run(ctx context.Context) (*Run, error) {
	s, err := s.withDefaults()
	if err != nil {
		return nil, err
	}
	clk := newLockstep(s.Start)
	plan := venue.FaultPlan{Mix: &s.Mix, Hostile: &s.Hostile}
	if s.Placement != nil {
		plan.Duplicate = s.Placement.Duplicate
	}
	opts := venue.Config{Clock: clk, Seed: s.Seed, Faults: plan, PageSize: s.PageSize, RateLimits: s.RateLimits}
	srv, err := brokertest.New(opts)
	if err != nil {
		return nil, fmt.Errorf("simulation: %w", err)
	}
	baseURL, rt := brokertest.InMemoryURL, srv.Client().Transport
	switch s.Wire {
	case WireTLS:
		srv = brokertest.NewTLSServer(opts)
		defer srv.Close()
		baseURL, rt = srv.URL, srv.Client().Transport
	case WireHTTP:
		srv = brokertest.NewServer(opts)
		defer srv.Close()
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.Proxy = nil
		defer tr.CloseIdleConnections()
		baseURL, rt = srv.URL, tr
	}
	key, err := signing.ParsePrivateKey(srv.PrivateKeyBase64)
	if err != nil {
		return nil, fmt.Errorf("simulation: %w", err)
	}
	signer, err := signing.New(srv.APIKey, key)
	if err != nil {
		return nil, fmt.Errorf("simulation: %w", err)
	}
	tp := &tap{next: rt}
	if s.Outage != (Window{}) {
		tp.before = outage(s, clk, srv)
	}
	if s.Wire != WireMemory { // over a socket
		tp.ledger, tp.done, tp.recorded = srv.Ledger(), map[string]int{}, map[string]int{}
	}
	caller, err := s.newCaller(env{clock: clk, transport: tp, baseURL: baseURL,
		signer: signer, attemptTimeout: s.AttemptTimeout})
	if err != nil {
		return nil, fmt.Errorf("simulation: %w", err)
	}

	// The bots' steps: the scenario's, and the placement's keyed step. It
	// stays out of the Scenario the Run keeps: the step is a method of the
	// run's process, which holds the venue and its whole ledger, and a
	// record kept after the run (a summary) would keep them all alive.
	steps := s.Steps
	var proc *process
	if s.Placement != nil {
		tc, ok := caller.(*transport.Client)
		if !ok {
			return nil, fmt.Errorf("simulation: scenario %q: placement needs the transport.Client as the caller", s.Name)
		}
		if proc, err = newProcess(s, clk, tc, srv); err != nil {
			return nil, err
		}
		steps = append(slices.Clip(steps), Step{Name: "place_keyed", Weight: s.Placement.Weight, Run: proc.step})
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	tp.ctx = ctx // the watchdog's teardown ends the tap's waits
	h := &history{}
	end := s.Start.Add(s.Duration)
	bots := make([]*Bot, s.Workers)
	for i := range bots {
		var seed [32]byte
		copy(seed[:], fmt.Sprintf("tradewire sim %d/%d", s.Seed, i))
		src := rand.NewChaCha8(seed)
		bots[i] = &Bot{ID: i, Rand: rand.New(src), Account: srv.AccountNumber,
			clock: clk, caller: caller, hist: h, src: src,
			badBodies: s.Placement != nil && len(s.Placement.CreateFaults) > 0}
	}
	var stepErr error
	var stepErrOnce sync.Once
	fail := func(id int, step string, err error) {
		stepErrOnce.Do(func() { stepErr = fmt.Errorf("simulation: bot %d, step %s: %w", id, step, err) })
		cancel()
	}
	body := func(id int) {
		b := bots[id]
		for ctx.Err() == nil && clk.Now().Before(end) {
			st := pick(steps, b.Rand)
			b.step = st.Name
			if err := st.Run(ctx, b); err != nil {
				fail(id, st.Name, err)
				return
			}
			b.Sleep(ctx, time.Duration(b.Rand.Int64N(int64(2*s.think(clk.Now())))))
		}
		if proc != nil {
			b.step = "final_recover"
			if err := proc.botEnded(ctx, b); err != nil {
				fail(id, b.step, err)
			}
		}
	}
	// The floor is sampled between the bots' steps (clk.idle), and the
	// time it took is taken out of the run's wall.
	floor := newFloorMeter(signer, srv.APIKey, key.Public(), s.wall, s.floorEvery)
	if s.floorEvery == 0 {
		if err := floor.calibrate(); err != nil {
			return nil, err
		}
	}
	clk.idle = floor.idle
	wallStart := s.wall.Now()
	err = clk.drive(ctx, s.Workers, body, cancel, s.wall, s.Watchdog)
	wall := s.wall.Since(wallStart)
	if stepErr != nil { // it stopped the run: report it, not the stop
		return nil, stepErr
	}
	if err != nil {
		return nil, err
	}
	wall -= floor.inRunTook
	if err := floor.topUp(); err != nil {
		return nil, err
	}

	run := &Run{Scenario: s, Calls: h.calls, Orders: srv.Ledger().Orders(), begun: h.next, base: baseURL, undelivered: map[int]int{}}
	var delivered []wireRecord
	for _, w := range tp.records() {
		if w.undelivered {
			run.undelivered[w.call]++
			continue
		}
		delivered = append(delivered, w)
	}
	if run.Events, err = join(srv.Ledger().Requests(), delivered); err != nil {
		return nil, err
	}
	if proc != nil {
		if run.Placement, err = proc.result(ctx); err != nil {
			return nil, err
		}
	}
	run.Figures = figures(run, clk.Now().Sub(s.Start), wall, floor.perRequest(), clk.fired)
	run.Figures.FloorSamples, run.Figures.FloorInRun = floor.n, floor.inRun
	if run.Placement != nil {
		run.Placement.Figures = placementFigures(run)
	}
	for _, inv := range s.Invariants {
		if err := inv.Check(run); err != nil {
			run.Violations = append(run.Violations, Violation{Invariant: inv.Name, Err: err})
		}
	}
	return run, nil
}

// think is the mean pause between steps at simulated time now.
func (s Scenario) think(now time.Time) time.Duration {
	if s.Burst.Every > 0 && now.Sub(s.Start)%s.Burst.Every < s.Burst.For {
		return s.Burst.Think
	}
	return s.Think
}

func pick(steps []Step, r *rand.Rand) Step {
	total := 0
	for _, st := range steps {
		total += st.Weight
	}
	n := r.IntN(total)
	for _, st := range steps {
		if n < st.Weight {
			return st
		}
		n -= st.Weight
	}
	return steps[len(steps)-1]
}

// history is the client-side record of calls.
type history struct {
	mu    sync.Mutex
	next  int
	calls []Call
}

func (h *history) begin() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.next++
	return h.next
}

func (h *history) end(c Call) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls = append(h.calls, c)
}

type callKey struct{}

// callerKey carries the context of a bot's call (Bot.Do, a Place or a
// Recover) to the tap, beneath the transport's own attempt context.
type callerKey struct{}

// withCaller returns ctx carrying itself as the caller's context.
func withCaller(ctx context.Context) context.Context {
	return context.WithValue(ctx, callerKey{}, ctx)
}

// refusedBeneath reports whether the transport ended req's attempt itself,
// while its caller went on, because net/http would have sent it again and
// the rate budget did not admit it at once (the transport's replay guard,
// whose refusal is the attempt context's cause and matches
// transport.ErrUnavailable; an attempt timeout is not).
func refusedBeneath(req *http.Request) bool {
	caller, _ := req.Context().Value(callerKey{}).(context.Context)
	return caller != nil && caller.Err() == nil && errors.Is(context.Cause(req.Context()), transport.ErrUnavailable)
}

// callOf returns the call ID a request's context carries, or 0.
func callOf(ctx context.Context) int {
	id, _ := ctx.Value(callKey{}).(int)
	return id
}

// tap sits on the wire between the client and the venue and records each
// request as it completes: in lockstep, that is the order in which the
// venue appends to its ledger, so the two line up one for one.
type tap struct {
	next http.RoundTripper
	// before, when set, runs before each request is sent (Scenario.Outage).
	before func() error
	// ledger, over a socket (WireTLS, WireHTTP), is the venue's: after each request
	// the tap waits until the venue has recorded it, which it may do after
	// the client gave up on it (a timeout), so the two stay in step. In
	// memory the venue records a request before the RoundTrip returns.
	ledger *venue.Ledger
	ctx    context.Context // the run's: ends a wait when the run is torn down
	mu     sync.Mutex
	wire   []wireRecord

	// Over a socket: requests whose RoundTrip returned, and requests the
	// venue recorded, so far, by method, target and x-timestamp (two bots
	// may send the same request in the same second, one of them still
	// waiting at the venue), and how far the ledger has been read.
	done, recorded map[string]int
	scanned        int
}

type wireRecord struct {
	call, op                  int
	method, target, timestamp string
	signature, clientOrderID  string
	proto                     string
	// undelivered: the transport ended the attempt before it reached the
	// venue (a replay the rate budget did not admit): an attempt of its
	// call, and no request of the venue's.
	undelivered bool
}

func (t *tap) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.before != nil {
		if err := t.before(); err != nil {
			return nil, err
		}
	}
	rec := wireRecord{call: callOf(req.Context()), op: opOf(req.Context()), method: req.Method, target: req.URL.RequestURI(),
		timestamp: req.Header.Get("x-timestamp"), signature: req.Header.Get("x-signature")}
	if req.Body != nil && req.Body != http.NoBody {
		body, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		rec.clientOrderID = clientOrderID(body)
		req = req.Clone(req.Context())
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	resp, err := t.next.RoundTrip(req)
	if err == nil {
		rec.proto = resp.Proto
	}
	if t.ledger != nil {
		key := rec.method + " " + rec.target + " @" + rec.timestamp
		if err != nil && refusedBeneath(req) && !t.recordedNow(key) {
			// The transport ended the attempt itself, and the venue has no
			// record of it: a GET net/http would have sent again, which the
			// rate budget did not admit (whatever of it reached the venue
			// was recorded when it arrived, before the attempt ended).
			rec.undelivered = true
		} else if werr := t.awaitRecorded(key); werr != nil && err == nil {
			// Every request reaches the loopback venue, which records it,
			// answered or not; a request given up on, maybe only after the
			// client moved on. Wait until the venue has recorded as many of
			// this request as have returned; another bot's identical one
			// may still wait at the venue, on the clock, which cannot move
			// now.
			resp.Body.Close()
			return nil, werr
		}
	}
	t.mu.Lock()
	t.wire = append(t.wire, rec)
	t.mu.Unlock()
	return resp, err
}

// outage returns the tap's hook for s.Outage: it sets the venue's fault
// mix to every answer 503 for the first request sent in the window, and
// back to s.Mix for the first one after it. In lockstep only the running
// bot sends, so the venue changes between one request and the next.
func outage(s Scenario, clk clockwork.Clock, srv *brokertest.Server) func() error {
	state := 0 // before, during, after
	return func() error {
		el := clk.Since(s.Start)
		switch {
		case state == 0 && s.Outage.contains(el):
			state = 1
			return srv.SetFaultPlan(venue.FaultPlan{Mix: &venue.Mix{Seed: s.Mix.Seed, Rate5xx: 1}})
		case state < 2 && el >= s.Outage.To:
			state = 2
			m := s.Mix
			return srv.SetFaultPlan(venue.FaultPlan{Mix: &m})
		}
		return nil
	}
}

// awaitRecorded waits until the venue has recorded every request sent
// with key. Only the running bot calls it.
func (t *tap) awaitRecorded(key string) error { return t.recorded1(t.ctx, key) }

// recordedNow is awaitRecorded without the wait: it reports whether the
// venue has recorded key once more than returned before, counting it as
// returned if so.
func (t *tap) recordedNow(key string) bool {
	now, cancel := context.WithCancel(t.ctx)
	cancel() // scan what the ledger holds, and wait for nothing more
	return t.recorded1(now, key) == nil
}

// recorded1 counts one more return of key and reads the ledger, under
// ctx, until the venue has recorded key as often; if ctx ends first, the
// return is not counted and ctx's error is returned.
func (t *tap) recorded1(ctx context.Context, key string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.done[key]++
	if t.recorded[key] >= t.done[key] {
		return nil
	}
	next, err := t.ledger.AwaitRequests(ctx, t.scanned, func(r venue.Request) bool {
		k := r.Method + " " + r.Target + " @" + r.Timestamp
		t.recorded[k]++
		return k == key && t.recorded[k] >= t.done[k]
	})
	t.scanned = next
	if err != nil {
		t.done[key]--
	}
	return err
}

func (t *tap) records() []wireRecord {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]wireRecord(nil), t.wire...)
}

// clientOrderID returns a create body's client_order_id, or "".
func clientOrderID(body []byte) string {
	var b struct {
		ClientOrderID string `json:"client_order_id"`
	}
	if json.Unmarshal(body, &b) != nil {
		return ""
	}
	return b.ClientOrderID
}

// join lines the venue's ledger up with the wire, one for one, and fails
// if they disagree: the attribution of requests to calls would be wrong.
// A request the venue received again with no new request on the wire (a
// replay beneath the client, the same method, target and x-timestamp as
// the wire's last) is joined to that wire record and marked Replayed.
func join(ledger []venue.Request, wire []wireRecord) ([]Event, error) {
	out := make([]Event, len(ledger))
	j := 0
	same := func(r venue.Request, w wireRecord) bool {
		return r.Method == w.method && r.Target == w.target && r.Timestamp == w.timestamp
	}
	for i, r := range ledger {
		replay := false
		switch {
		case j < len(wire) && same(r, wire[j]):
			j++
		case j > 0 && same(r, wire[j-1]):
			replay = true
		case j < len(wire):
			w := wire[j]
			return nil, fmt.Errorf("simulation: request %d: venue saw %s %s @%s, wire had %s %s @%s",
				i, r.Method, r.Target, r.Timestamp, w.method, w.target, w.timestamp)
		default:
			return nil, fmt.Errorf("simulation: the venue recorded %d requests, the wire %d", len(ledger), len(wire))
		}
		w := wire[j-1]
		out[i] = Event{Request: r, Call: w.call, Op: w.op, Signature: w.signature, ClientOrderID: w.clientOrderID, Replayed: replay,
			Proto: w.proto}
	}
	if j != len(wire) {
		return nil, fmt.Errorf("simulation: the venue recorded %d requests, the wire %d", len(ledger), len(wire))
	}
	return out, nil
}

// unixSeconds parses an x-timestamp.
func unixSeconds(ts string) (time.Time, bool) {
	n, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(n, 0), true
}

// NamedMix is a fault mix with a name for reports.
type NamedMix struct {
	Name string
	Mix  venue.Mix
}

// StandardMixes returns the fault mixes the matrix runs: none, heavy 429s,
// heavy 5xx, heavy lost responses (half 500, half dropped connections),
// latency under the attempt timeout, and a bit of everything with latency
// over the default 10 s attempt timeout (timeouts).
func StandardMixes() []NamedMix {
	return []NamedMix{
		{Name: "none"},
		{Name: "429-heavy", Mix: venue.Mix{Rate429: 0.2}},
		{Name: "5xx-heavy", Mix: venue.Mix{Rate5xx: 0.2}},
		{Name: "lost-heavy", Mix: venue.Mix{RateLost: 0.15}},
		{Name: "latency", Mix: venue.Mix{RateLatency: 0.3, Latency: 2 * time.Second}},
		{Name: "all", Mix: venue.Mix{Rate429: 0.05, Rate5xx: 0.05, RateLost: 0.03, RateLatency: 0.05, Latency: 12 * time.Second}},
	}
}
