package broker_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tradewire/tradewire/broker"
	"github.com/tradewire/tradewire/broker/brokertest"
	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/internal/pgtest"
	"github.com/tradewire/tradewire/internal/redistest"
	"github.com/tradewire/tradewire/signing"
	"github.com/tradewire/tradewire/transport"
	"github.com/tradewire/tradewire/venue"
)

// exploreRedisURL and explorePostgresURL are the Redis and PostgreSQL the
// fleet schedules share (the tests' shared ones, TRADEWIRE_TEST_REDIS_URL
// and TRADEWIRE_TEST_POSTGRES_URL); without them they run on a bbolt
// file, one process after another. exploreRun and exploreRuns keep
// each schedule's keys in it apart from every other's, a replay of the
// same seed's included.
var (
	exploreRedisURL    string
	explorePostgresURL string
	exploreRun         = time.Now().UnixNano()
	exploreRuns        atomic.Int64
)

// TestExplore explores the placement protocol: each seed is one schedule
// (a venue that creates a second order for a reused client_order_id, and
// the modes, holders, processes, crashes, clock steps and interleaving the
// seed picks), run in a synctest bubble under a scheduler that lets one
// holder on at a time from each store call and each round trip. After
// each schedule it checks, from the venue's own record:
//
//  1. at most one order per key;
//  2. every answer true: an order returned exists; "rejected": no live
//     order of the key from a create sent before the answer; "not placed"
//     and "use a new key": no order at all from such a create (including
//     those still in flight when the answer came);
//  3. a request refused offline put no create on the wire;
//  4. on a calm venue (no faults, crashes or steps) every Place of a key
//     places it, or answers that another holder has it in hand.
//
// -explore.seed=N (or TRADEWIRE_EXPLORE_SEED) replays one schedule and
// prints its trace; -explore.schedules=N (or
// TRADEWIRE_EXPLORE_SCHEDULES) explores seeds 1..N (default 300).
func TestExplore(t *testing.T) {
	exploreRedisURL = os.Getenv(redistest.EnvURL)
	explorePostgresURL = os.Getenv(pgtest.EnvURL)
	if (exploreRedisURL == "" || explorePostgresURL == "") && os.Getenv("CI") == "true" {
		t.Fatalf("%s or %s is not set: the explorer's fleet schedules need a Redis and a PostgreSQL (make test starts them)", redistest.EnvURL, pgtest.EnvURL)
	}
	seeds := exploreSeeds(t)
	verbose := len(seeds) == 1 || *exploreTrace || *exploreList
	started := time.Now()
	modes := map[string]int{}
	events := map[string]int{}
	type failure struct {
		seed int64
		o    *outcome
	}
	byRule := map[string][]failure{}
	failed := 0
	for _, seed := range seeds {
		o := runSchedule(t, seed, len(seeds) == 1)
		for _, m := range o.plan.modes() {
			modes[m]++
		}
		for e, n := range o.events {
			events[e] += n
		}
		if len(seeds) == 1 || *exploreTrace {
			t.Logf("seed %d: %s\n%s", seed, o.plan, strings.Join(o.trace, "\n"))
		}
		if len(o.violations) == 0 {
			continue
		}
		failed++
		if failed <= maxFailureLines || verbose {
			t.Logf("seed %d [%s]: %s", seed, strings.Join(o.plan.modes(), ","), strings.Join(o.violations, "; "))
		}
		rules := map[string]bool{}
		for _, v := range o.violations {
			rule, _, _ := strings.Cut(v, ":")
			if !rules[rule] {
				rules[rule] = true
				f := failure{seed: seed}
				if len(byRule[rule]) == 0 {
					f.o = o // the first keeps its trace
				}
				byRule[rule] = append(byRule[rule], f)
			}
		}
	}
	elapsed := time.Since(started)
	t.Logf("explored %d schedules in %v (%.1f/s); %d failed", len(seeds), elapsed.Round(time.Millisecond),
		float64(len(seeds))/elapsed.Seconds(), failed)
	t.Logf("schedules per mode: %s", tally(modes))
	t.Logf("events: %s", tally(events))
	rules := slices.Sorted(func(yield func(string) bool) {
		for r := range byRule {
			if !yield(r) {
				return
			}
		}
	})
	for _, rule := range rules {
		fs := byRule[rule]
		var seedList []string
		for i, f := range fs {
			if i == 12 {
				seedList = append(seedList, "…")
				break
			}
			seedList = append(seedList, strconv.FormatInt(f.seed, 10))
		}
		first := fs[0]
		t.Errorf("%s broken in %d schedules (seeds %s); the first, seed %d: %s\n  %s\n  replay: go test -run 'TestExplore$' ./broker/ -explore.seed=%d\n%s",
			rule, len(fs), strings.Join(seedList, " "), first.seed, first.o.plan, strings.Join(first.o.violations, "\n  "),
			first.seed, lastLines(first.o.trace, 40))
	}
}

var (
	exploreSeed      = flag.Int64("explore.seed", 0, "replay the explorer's schedule of this seed (also TRADEWIRE_EXPLORE_SEED)")
	exploreSchedules = flag.Int("explore.schedules", 0, "explore seeds 1..N (also TRADEWIRE_EXPLORE_SCHEDULES; default 300)")
	exploreTrace     = flag.Bool("explore.trace", false, "print every schedule's trace")
	exploreList      = flag.Bool("explore.list", false, "list every failed schedule, one a line")
)

const defaultExploreSchedules = 300

// maxFailureLines bounds the failed schedules listed one per line
// (-explore.list lists them all).
const maxFailureLines = 30

func exploreSeeds(t *testing.T) []int64 {
	seed := *exploreSeed
	if seed == 0 {
		if s := os.Getenv("TRADEWIRE_EXPLORE_SEED"); s != "" {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				t.Fatalf("TRADEWIRE_EXPLORE_SEED: %v", err)
			}
			seed = n
		}
	}
	if seed != 0 {
		return []int64{seed}
	}
	n := *exploreSchedules
	if n == 0 {
		n = defaultExploreSchedules
		if s := os.Getenv("TRADEWIRE_EXPLORE_SCHEDULES"); s != "" {
			v, err := strconv.Atoi(s)
			if err != nil || v < 1 {
				t.Fatalf("TRADEWIRE_EXPLORE_SCHEDULES=%q: want a positive count", s)
			}
			n = v
		}
	}
	seeds := make([]int64, n)
	for i := range seeds {
		seeds[i] = int64(i + 1)
	}
	return seeds
}

func tally(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return strings.Join(parts, " ")
}

func lastLines(lines []string, n int) string {
	skipped := ""
	if len(lines) > n {
		skipped = fmt.Sprintf("    … %d earlier lines (replay the seed for all)\n", len(lines)-n)
		lines = lines[len(lines)-n:]
	}
	return skipped + "    " + strings.Join(lines, "\n    ")
}

// outcome is what one schedule did and broke.
type outcome struct {
	plan       plan
	trace      []string
	events     map[string]int
	violations []string
}

// runSchedule runs the schedule of seed in a bubble of its own.
func runSchedule(t *testing.T, seed int64, detail bool) *outcome {
	var o *outcome
	synctest.Test(t, func(t *testing.T) { o = explore(t, seed, detail) })
	return o
}

var exploreStart = time.Date(2026, 8, 20, 18, 0, 0, 0, time.UTC)

func explore(t *testing.T, seed int64, detail bool) *outcome {
	return explorePlan(t, seed, makePlan(seed), detail)
}

func explorePlan(t *testing.T, seed int64, p plan, detail bool) *outcome {
	if (p.store == "redis" && exploreRedisURL == "") || (p.store == "postgres" && explorePostgresURL == "") {
		p.store = "bbolt" // no Redis or PostgreSQL here: see exploreRedisURL
	}
	// The bubble's clock starts in 2000; move it to a date of the venue's
	// history.
	time.Sleep(time.Until(exploreStart))
	srv, err := brokertest.New(
		venue.Config{Seed: seed, PageSize: p.pageSize, RateLimits: venue.RateLimits{Account: venue.RateLimit{PerMinute: math.Inf(1)}}, Faults: venue.FaultPlan{Duplicate: venue.CreateSecond}},
	)
	if err != nil {
		t.Fatal(err)
	}
	key, err := signing.ParsePrivateKey(srv.PrivateKeyBase64)
	if err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, seed: seed, p: p, srv: srv, key: key, start: time.Now(), dir: storeDir(t),
		srng:     rand.New(rand.NewPCG(uint64(seed), 2)),
		frng:     rand.New(rand.NewPCG(uint64(seed), 3)),
		wake:     make(chan struct{}, 1),
		venueOff: p.venueOffset, crashesLeft: p.gens - 1,
		cidKey: map[string]string{}, settled: map[string]int64{}, events: map[string]int{}, detail: detail, alwaysOn: &proc{gen: -1}}
	if p.crashRate == 0 {
		w.crashesLeft = 0
	}
	if p.fleet() {
		// Redis and PostgreSQL outlive the schedule: its keys are this
		// run's alone.
		w.redisURL = exploreRedisURL
		w.ns = fmt.Sprintf("explore-%d-%d-%d", seed, exploreRun, exploreRuns.Add(1))
	}
	w.step.Store(int64(p.step0))
	for k := range p.keys {
		k := fmt.Sprintf("k%d", k)
		w.cidKey[idempotency.ClientOrderID(srv.AccountNumber, w.ns, k)] = k
	}
	for h := range p.holders * p.gens {
		k := fmt.Sprintf("bad%d", h)
		w.cidKey[idempotency.ClientOrderID(srv.AccountNumber, w.ns, k)] = k
	}
	w.logf("seed %d: %s", seed, p)
	if p.background > 0 {
		w.background()
	}
	w.setHostile()
	w.startProc(0)
	if p.fleet() {
		for gen := 1; gen < p.gens; gen++ {
			w.startProc(gen)
		}
	}
	w.schedule()
	w.check()
	return &outcome{plan: p, trace: w.trace, events: w.events, violations: w.violations}
}

// background creates the plan's orders of the symbol in the lookup window
// (an exact multiple of the page size), straight through the transport.
func (w *world) background() {
	c, err := broker.New(broker.Config{
		APIKey:        w.srv.APIKey,
		PrivateKey:    w.key,
		BaseURL:       w.srv.URL,
		AccountNumber: w.srv.AccountNumber,
		Transport:     transport.Config{RoundTripper: w.srv.Client().Transport},
	})
	if err != nil {
		w.t.Fatal(err)
	}
	defer c.Close()
	target := ordersPath + "?account_number=" + url.QueryEscape(w.srv.AccountNumber)
	for i := range w.p.background {
		cid := idempotency.ClientOrderID(w.srv.AccountNumber, "background", strconv.Itoa(i))
		body := fmt.Sprintf(`{"client_order_id":%q,"side":"buy","type":"limit","symbol":%q,"limit_order_config":{"asset_quantity":"0.01","limit_price":"900.00","time_in_force":"gtc"}}`,
			cid, exploreSymbol)
		if _, err := c.Transport().Do(context.Background(), "POST", target, []byte(body)); err != nil {
			w.t.Fatalf("seed %d: background order %d: %v", w.seed, i, err)
		}
		// A millisecond apart, as orders at the venue are: its created_at
		// is to the microsecond, and a lookup that meets more than a
		// page of orders created in one instant cannot see where its list
		// ends (it answers incomplete, which is safe but not live).
		time.Sleep(time.Millisecond)
	}
	w.logf("%d background orders of %s (page size %d)", w.p.background, exploreSymbol, w.p.pageSize)
	time.Sleep(time.Second)
}

// check checks the invariants against the venue's record and the creates
// that reached it.
func (w *world) check() {
	fail := func(rule, format string, args ...any) {
		w.violations = append(w.violations, rule+": "+fmt.Sprintf(format, args...))
	}
	// 1. At most one order per key. A memory store dies with its process:
	// a later process looks back only as far as a recent create could
	// have landed (30 s + margin + lookback: 160 s at least), so an order
	// older than that when a later process, with a new memory store,
	// sends again is beyond the memory store's promise, and not counted.
	seen := map[string][]createRec{}
	for _, c := range w.creates {
		for _, e := range seen[c.cid] {
			if w.p.store == "memory" && e.gen != c.gen && c.at.Sub(e.at) > memoryForgets {
				w.event("memory-forgot")
				continue
			}
			fail("one-order-per-key", "key %s has a second order: %s (sent by %s at #%d%s) after %s (sent by %s at #%d%s)",
				w.keyOf(c.cid), c.orderID, c.by, c.seq, lateNote(c), e.orderID, e.by, e.seq, lateNote(e))
			break
		}
		seen[c.cid] = append(seen[c.cid], c)
	}
	for _, cid := range w.srv.Ledger().DuplicateClientIDs() {
		if _, ours := w.cidKey[cid]; !ours {
			fail("one-order-per-key", "client_order_id %s (not an explored key) has several orders", cid)
		}
	}
	byID := map[string]createRec{}
	for _, c := range w.creates {
		byID[c.orderID] = c
	}
	// orderBefore: an order of cid from a create sent before seq (live
	// only: not failed at creation).
	orderBefore := func(cid string, seq int64, liveOnly bool) (createRec, bool) {
		for _, c := range w.creates {
			if c.cid == cid && c.seq < seq && (!liveOnly || !c.failed) {
				return c, true
			}
		}
		return createRec{}, false
	}
	cidOf := func(key string) string { return idempotency.ClientOrderID(w.srv.AccountNumber, w.ns, key) }
	// placedBefore is orderBefore for what a Place answered: with a memory
	// store, an order an earlier process created longer ago than the
	// store's lookups reach back is beyond its promise (as in 1.).
	placedBefore := func(r placeResult, liveOnly bool) (createRec, bool) {
		for _, c := range w.creates {
			if c.cid != cidOf(r.key) || c.seq >= r.seqEnd || (liveOnly && c.failed) {
				continue
			}
			if w.p.store == "memory" && c.gen != r.h.proc.gen && r.at.Sub(c.at) > memoryForgets {
				w.event("memory-forgot")
				continue
			}
			return c, true
		}
		return createRec{}, false
	}
	succeeded := map[string]bool{}
	for _, r := range w.results {
		cid := cidOf(r.key)
		who := fmt.Sprintf("%s Place(%s)", r.h.name, r.key)
		if r.order != nil {
			succeeded[r.key] = true
			if c, ok := byID[r.order.ID]; !ok || c.cid != cid {
				fail("true-answer", "%s returned order %s, which the venue did not create for that key", who, r.order.ID)
			}
		}
		if r.err == nil {
			if r.invalid {
				fail("refused-sends-nothing", "%s of an invalid request succeeded", who)
			}
			continue
		}
		msg := strings.ToLower(r.err.Error())
		if strings.Contains(msg, "use a new key") {
			if c, ok := orderBefore(cid, r.seqEnd, false); ok {
				fail("true-answer", "%s said %q while order %s holds the key", who, r.err, c.orderID)
			}
		}
		switch {
		case errors.Is(r.err, broker.ErrInProgress), errors.Is(r.err, broker.ErrUnknownOutcome):
		case errors.Is(r.err, broker.ErrRejected):
			if c, ok := placedBefore(r, true); ok {
				fail("true-answer", "%s answered rejected while order %s of the key is live", who, c.orderID)
			}
		case errors.Is(r.err, broker.ErrNotPlaced):
			if c, ok := placedBefore(r, false); ok {
				fail("true-answer", "%s answered not placed, but order %s of the key was created from a create sent before", who, c.orderID)
			}
		case errors.Is(r.err, broker.ErrInvalidRequest):
			if r.sent > 0 {
				fail("refused-sends-nothing", "%s answered %v after putting %d create(s) on the wire", who, r.err, r.sent)
			}
		}
		if r.invalid && !errors.Is(r.err, broker.ErrInvalidRequest) {
			fail("refused-sends-nothing", "%s of an invalid request answered %v, not an invalid request", who, r.err)
		}
	}
	for _, rr := range w.recovers {
		for _, rec := range rr.rep.Acknowledged {
			if c, ok := byID[rec.OrderID]; !ok || c.cid != rec.ClientOrderID {
				fail("true-answer", "%s Recover acknowledged %s with order %q, which the venue did not create for it", rr.h.name, w.keyOf(rec.ClientOrderID), rec.OrderID)
			}
		}
		at := func(rec idempotency.Record) int64 {
			if seq, ok := w.settled[rr.h.name+"/"+rec.ClientOrderID]; ok {
				return seq
			}
			return rr.seq
		}
		for _, rec := range rr.rep.Rejected {
			if c, ok := orderBefore(rec.ClientOrderID, at(rec), true); ok {
				fail("true-answer", "%s Recover reported %s rejected while order %s is live", rr.h.name, w.keyOf(rec.ClientOrderID), c.orderID)
			}
		}
		for _, rec := range rr.rep.NotPlaced {
			if c, ok := orderBefore(rec.ClientOrderID, at(rec), false); ok {
				fail("true-answer", "%s Recover reported %s not placed, but order %s was created for it", rr.h.name, w.keyOf(rec.ClientOrderID), c.orderID)
			}
		}
	}
	// 4. Liveness on a calm venue.
	if w.p.calm {
		for _, r := range w.results {
			if r.order == nil && !errors.Is(r.err, broker.ErrInProgress) {
				fail("calm-liveness", "%s Place(%s) on a calm venue: %v", r.h.name, r.key, r.err)
			}
		}
		for k := range w.p.keys {
			if key := fmt.Sprintf("k%d", k); !succeeded[key] {
				fail("calm-liveness", "key %s was never placed on a calm venue", key)
			}
		}
	}
	w.logf("venue: %d orders created for the explored keys", len(w.creates))
}

// storeDir is where a schedule's bolt file lives: in memory (/dev/shm)
// where there is one, as a sync there costs no disk flush, else t.TempDir.
func storeDir(t *testing.T) string {
	if d, err := os.MkdirTemp("/dev/shm", "explore"); err == nil {
		t.Cleanup(func() { os.RemoveAll(d) })
		return d
	}
	return t.TempDir()
}

// memoryForgets is how old an order may be when a process with a new
// memory store sends its key again, and still count as a second order:
// the shortest look-back of a lookup before a first send (signing.ValidFor
// + the skew margin floor + the lookback floor: 160 s) less the largest
// clock step the explorer makes (40 s) and a venue Date jump (20 s).
const memoryForgets = 100 * time.Second

func lateNote(c createRec) string {
	if c.late {
		return ", delivered late"
	}
	return ""
}

// TestExploreReplays runs schedules twice and compares their traces: a
// seed must replay exactly.
func TestExploreReplays(t *testing.T) {
	for seed := int64(1); seed <= 20; seed++ {
		a, b := runSchedule(t, seed, true), runSchedule(t, seed, true)
		if !slices.Equal(a.trace, b.trace) {
			i := 0
			for i < len(a.trace) && i < len(b.trace) && a.trace[i] == b.trace[i] {
				i++
			}
			t.Errorf("seed %d does not replay: the traces part at line %d:\n%s\n%s", seed, i,
				strings.Join(a.trace[i:min(i+3, len(a.trace))], "\n"), strings.Join(b.trace[i:min(i+3, len(b.trace))], "\n"))
		}
	}
}
