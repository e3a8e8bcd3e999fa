package simulation

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/tradewire/tradewire/internal/adaptive"
	"github.com/tradewire/tradewire/signing"
)

// Figures summarise one run.
type Figures struct {
	// Calls is the number of calls the bots made; Failed of them returned
	// an error.
	Calls, Failed int
	// Requests is what reached the venue: GETs plus POSTs.
	Requests, GETs, POSTs int
	// Retries is the requests beyond the first of each call (a Placer's
	// requests aside: see PlacementFigures).
	Retries int
	// ByStatus counts the venue's answers by status; 0 is a dropped
	// connection or an attempt the client gave up on.
	ByStatus map[int]int
	// Throttled is the 429 answers, InjectedThrottled those the fault mix
	// put there.
	Throttled, InjectedThrottled int
	// ServerErrors is the 5xx answers; Dropped the requests never
	// answered (connection dropped, or the client timed out waiting).
	ServerErrors, Dropped int
	// Unauthorized is the 401 answers.
	Unauthorized int
	// Creates is the orders the venue created.
	Creates int
	// MaxSignatureAge is the oldest x-timestamp on arrival.
	MaxSignatureAge time.Duration
	// Events is how many timers the driver fired.
	Events int64
	// Budget is the share of the client's budget (100 requests a minute)
	// the requests used over the run: 1 is saturated.
	Budget float64
	// Simulated is the simulated time the run took, Wall the wall time,
	// and Ratio Simulated/Wall.
	Simulated, Wall time.Duration
	Ratio           float64
	// PerRequest is the wall time of the run per request the venue
	// received (Wall / Requests). Floor is what no run can go under per
	// request: the client's Ed25519 signature and the venue's
	// verification of it, timed on the run's wall clock in the same run,
	// sampled between the bots' steps (see floorMeter). The time spent
	// sampling during the run is not in Wall. FloorSamples is how many
	// samples Floor is of, FloorInRun of them taken during the run (the
	// rest after its bots ended, in a run too short for floorMinSamples).
	// FloorRatio is PerRequest / Floor; 0 when either is unknown.
	PerRequest, Floor        time.Duration
	FloorRatio               float64
	FloorSamples, FloorInRun int
}

func figures(r *Run, simulated, wall, floor time.Duration, events int64) Figures {
	f := Figures{Calls: len(r.Calls), Requests: len(r.Events), ByStatus: map[int]int{}, Creates: len(r.Orders),
		Events: events, Simulated: simulated, Wall: wall, Floor: floor}
	if wall > 0 {
		f.Ratio = float64(simulated) / float64(wall)
	}
	if len(r.Events) > 0 {
		f.PerRequest = wall / time.Duration(len(r.Events))
	}
	if f.PerRequest > 0 && floor > 0 {
		f.FloorRatio = float64(f.PerRequest) / float64(floor)
	}
	if simulated > 0 {
		f.Budget = float64(len(r.Events)) / simulated.Minutes() / adaptive.PerMinute
	}
	for _, c := range r.Calls {
		if c.Err != nil {
			f.Failed++
		}
	}
	for _, e := range r.Events {
		f.ByStatus[e.Status]++
		switch e.Method {
		case http.MethodGet:
			f.GETs++
		case http.MethodPost:
			f.POSTs++
		}
		switch {
		case e.Dropped:
			f.Dropped++
		case e.Status == http.StatusTooManyRequests:
			f.Throttled++
			if injected429(e) {
				f.InjectedThrottled++
			}
		case e.Status == http.StatusUnauthorized:
			f.Unauthorized++
		case e.Status >= 500:
			f.ServerErrors++
		}
		if ts, ok := unixSeconds(e.Timestamp); ok {
			f.MaxSignatureAge = max(f.MaxSignatureAge, e.Time.Sub(ts))
		}
	}
	f.Retries = f.Requests - len(r.Calls)
	for _, e := range r.Events {
		if e.Op != 0 {
			f.Retries--
		}
	}
	for _, c := range r.Calls {
		if len(r.Attempts(c.ID)) == 0 {
			f.Retries++ // a call that sent nothing has no first request
		}
	}
	return f
}

// Fingerprint is a digest of everything the venue saw and the client
// recorded, in order. Two runs of one Scenario have the same fingerprint
// (over TLS too: the listener's address is left out of error texts).
func (r *Run) Fingerprint() string {
	h := sha256.New()
	errText := func(err error) string {
		s := fmt.Sprint(err)
		if r.base != "" {
			s = strings.ReplaceAll(s, r.base, "<venue>")
		}
		return s
	}
	for _, e := range r.Events {
		fmt.Fprintf(h, "%d|%s|%s|%s|%s|%t|%d|%t|%s|%s|%d\n", e.Time.UnixNano(), e.Method, e.Target, e.Timestamp,
			e.Signature, e.SignatureValid, e.Status, e.Dropped, e.Fault, e.Created, e.Call)
	}
	for _, c := range r.Calls {
		fmt.Fprintf(h, "%d|%d|%s|%s|%d|%d|%d|%d|%v\n", c.ID, c.Bot, c.Step, c.Target, c.Start.UnixNano(),
			c.End.UnixNano(), c.Attempts, c.Status, errText(c.Err))
	}
	if pr := r.Placement; pr != nil {
		for _, e := range r.Events {
			fmt.Fprintf(h, "%d|", e.Op)
		}
		for _, op := range pr.Ops {
			fmt.Fprintf(h, "%d|%d|%d|%s|%s|%s|%d|%d|%s|%v|%d\n", op.ID, op.Bot, op.Gen, op.Op, op.ClientOrderID, op.Before,
				op.Start.UnixNano(), op.End.UnixNano(), op.Outcome, errText(op.Err), op.Settled)
		}
		for _, rec := range pr.Records {
			fmt.Fprintf(h, "%s|%s|%s|%d|%d\n", rec.ClientOrderID, rec.State, rec.OrderID, rec.Sends, rec.LastSignedAt.UnixNano())
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// WriteTable prints one row of figures per run, then a total line with the
// simulated time over the wall time of all runs.
func WriteTable(w io.Writer, runs []*Run) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tseed\tsimulated\tcalls\tfailed\trequests\tbudget\tGET\tPOST\tretries\t429 (mix)\t5xx\tdropped\t401\tcreates\tmax sig age\twall\tsim/wall\tinvariants\t")
	var sim, wall time.Duration
	for _, r := range runs {
		f := r.Figures
		sim += f.Simulated
		wall += f.Wall
		inv := verdict(r)
		fmt.Fprintf(tw, "%s\t%d\t%v\t%d\t%d\t%d\t%.0f%%\t%d\t%d\t%d\t%d (%d)\t%d\t%d\t%d\t%d\t%v\t%v\t%.0fx\t%s\t\n",
			r.Scenario.Name, r.Scenario.Seed, f.Simulated.Round(time.Second), f.Calls, f.Failed, f.Requests, 100*f.Budget,
			f.GETs, f.POSTs, f.Retries, f.Throttled, f.InjectedThrottled, f.ServerErrors, f.Dropped,
			f.Unauthorized, f.Creates, f.MaxSignatureAge.Round(time.Millisecond), f.Wall.Round(time.Millisecond),
			f.Ratio, inv)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	ratio := 0.0
	if wall > 0 {
		ratio = float64(sim) / float64(wall)
	}
	_, err := fmt.Fprintf(w, "total: %d runs, %v simulated in %v wall: %.0fx\n", len(runs), sim.Round(time.Second), wall.Round(time.Millisecond), ratio)
	return err
}

// WritePlacementTable prints one row of placement figures per run that
// has a Placement, then their sum.
func WritePlacementTable(w io.Writer, runs []*Run) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tseed\tduplicate\tplaces/keys\treused\tinterrupted\trestarts\tacknowledged\trejected\tnot placed\trecovered\tunsettled\tresends\tlost\tduplicated\tinvariants\t")
	var sum PlacementFigures
	n := 0
	row := func(name, seed, dup string, f PlacementFigures, inv string) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d/%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t\n",
			name, seed, dup, f.Places, f.Keys, f.Reused, f.Interrupted, f.Restarts, f.Acknowledged, f.Rejected,
			f.NotPlaced, f.Recovered, f.Unsettled, f.Resends, f.Lost, f.Duplicated, inv)
	}
	for _, r := range runs {
		if r.Placement == nil {
			continue
		}
		n++
		f := r.Placement.Figures
		sum.Places += f.Places
		sum.Keys += f.Keys
		sum.Reused += f.Reused
		sum.Interrupted += f.Interrupted
		sum.Restarts += f.Restarts
		sum.Acknowledged += f.Acknowledged
		sum.Rejected += f.Rejected
		sum.NotPlaced += f.NotPlaced
		sum.Recovered += f.Recovered
		sum.Unsettled += f.Unsettled
		sum.Resends += f.Resends
		sum.Lost += f.Lost
		sum.Duplicated += f.Duplicated
		row(r.Scenario.Name, strconv.FormatInt(r.Scenario.Seed, 10), string(r.Scenario.Placement.Duplicate), f, verdict(r))
	}
	row(fmt.Sprintf("total (%d runs)", n), "", "", sum, "")
	return tw.Flush()
}

// verdict is "ok" or the invariants that failed.
func verdict(r *Run) string {
	if len(r.Violations) == 0 {
		return "ok"
	}
	names := make([]string, len(r.Violations))
	for i, v := range r.Violations {
		names[i] = v.Invariant
	}
	return "FAIL " + strings.Join(names, ",")
}

// statusSummary prints ByStatus in status order, e.g. "200:10 404:2".
func statusSummary(m map[int]int) string {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = strconv.Itoa(k) + ":" + strconv.Itoa(m[k])
	}
	return strings.Join(parts, " ")
}

// floorMeter times the floor of a request's cost: one signature by the
// run's signer and the venue's verification of it (the base64 decoding
// and ed25519.Verify against the venue's public key), back to back on
// one goroutine, on the run's wall clock.
//
// The floor is sampled through the run, under the load the run itself
// meets (its own garbage collection, other runs in parallel, other work
// on the machine): the lockstep driver calls idle between the bots'
// steps, while every bot is parked, and idle takes one sample once every
// has passed on the wall since the last. The time spent sampling during
// the run (inRunTook) is taken out of the run's wall. By default every
// is floorDuty samples' worth of wall, timed before the bots start
// (calibrate; those samples are not in the floor), so that sampling
// takes about 1/floorDuty of a run's wall on any machine, the race
// detector's included. A run too short to reach floorMinSamples during
// its bots' steps is topped up after they end (topUp). Sampling touches
// neither the simulated clock nor the bots, so the lockstep's history
// does not depend on it.
//
// A floorMeter is safe for concurrent use (a run torn down on error may
// have several bots unwinding at once).
type floorMeter struct {
	signer *signing.Signer
	apiKey string
	pub    ed25519.PublicKey
	wall   clockwork.Clock
	every  time.Duration

	mu        sync.Mutex
	last      time.Time     // the end of the last sample, on wall
	n         int           // samples in the floor: in the run and after it
	took      time.Duration // their wall time
	inRun     int           // samples taken during the run (idle)
	inRunTook time.Duration // their wall time
	err       error         // a sample taken in the run that did not verify
}

const (
	// floorDuty is how many samples' worth of wall pass between two
	// samples during a run: sampling takes about 1/40 of its wall, some
	// 900 samples in a 4 h saturated run in memory (about 5 s of wall).
	floorDuty = 40
	// floorMinEvery is the least wall time between two samples.
	floorMinEvery = 2 * time.Millisecond
	// floorCalibration is how many samples calibrate times.
	floorCalibration = 16
	// floorMinSamples is how many samples a run's floor is of at least:
	// a run whose steps took fewer is topped up after its bots end.
	floorMinSamples = 128
)

// newFloorMeter returns a meter that samples once every of wall during
// the run; with every 0, call calibrate to set it.
func newFloorMeter(signer *signing.Signer, apiKey string, pub ed25519.PublicKey, wall clockwork.Clock, every time.Duration) *floorMeter {
	return &floorMeter{signer: signer, apiKey: apiKey, pub: pub, wall: wall, every: every, last: wall.Now()}
}

// calibrate times floorCalibration samples, outside the floor, and sets
// the interval between samples during the run to floorDuty times their
// mean, at least floorMinEvery.
func (m *floorMeter) calibrate() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	start := m.wall.Now()
	for i := range floorCalibration {
		if _, err := m.sample(start, start.Add(time.Duration(i)*time.Second)); err != nil {
			return err
		}
	}
	m.last = m.wall.Now()
	m.every = max(floorMinEvery, floorDuty*m.last.Sub(start)/floorCalibration)
	return nil
}

// floorTarget is the request the floor signs: a GET of the saturated
// run's mix.
const floorTarget = "/api/v2/crypto/trading/orders/?symbol=BTC-USD"

// sample signs and verifies once, at, and returns the wall time it took
// from start.
func (m *floorMeter) sample(start, at time.Time) (time.Duration, error) {
	sig, err := base64.StdEncoding.DecodeString(m.signer.Sign(at, http.MethodGet, floorTarget, nil))
	if err != nil || !ed25519.Verify(m.pub, []byte(m.apiKey+strconv.FormatInt(at.Unix(), 10)+floorTarget+http.MethodGet), sig) {
		return 0, fmt.Errorf("simulation: the floor's signature does not verify")
	}
	return m.wall.Since(start), nil
}

// idle takes one sample during the run when every has passed on the wall
// since the last. The driver calls it while every bot is parked.
func (m *floorMeter) idle() {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.wall.Now()
	if m.err != nil || now.Sub(m.last) < m.every {
		return
	}
	d, err := m.sample(now, now)
	if err != nil {
		m.err = err
		return
	}
	m.last = now.Add(d)
	m.n++
	m.took += d
	m.inRun++
	m.inRunTook += d
}

// measure times n signatures and verifications back to back, outside the
// run, and reports a sample taken in the run that did not verify.
func (m *floorMeter) measure(n int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return m.err
	}
	start := m.wall.Now()
	for i := range n {
		if _, err := m.sample(start, start.Add(time.Duration(i)*time.Second)); err != nil {
			return err
		}
	}
	m.took += m.wall.Since(start)
	m.n += n
	return nil
}

// topUp measures what the run's samples lack of floorMinSamples.
func (m *floorMeter) topUp() error {
	m.mu.Lock()
	n := floorMinSamples - m.n
	m.mu.Unlock()
	return m.measure(max(0, n))
}

// perRequest is the floor per request; 0 before any sample, or on a
// wall clock that did not move.
func (m *floorMeter) perRequest() time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.n == 0 {
		return 0
	}
	return m.took / time.Duration(m.n)
}
