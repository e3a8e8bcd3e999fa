package broker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/shopspring/decimal"

	"github.com/tradewire/tradewire/broker"
	"github.com/tradewire/tradewire/broker/brokertest"
	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/idempotency/pgstore"
	"github.com/tradewire/tradewire/idempotency/redisstore"
	"github.com/tradewire/tradewire/orders"
	"github.com/tradewire/tradewire/signing"
	"github.com/tradewire/tradewire/transport"
	"github.com/tradewire/tradewire/venue"
)

// The explorer's world: one simulated venue (always CreateSecond), the
// processes placing on it, each with its holders (a broker.Client and a
// goroutine) sharing one intent store, and a scheduler that lets one holder
// run at a time, from one yield point (every store call, every round trip
// before and after the venue) to the next. Everything runs in a synctest
// bubble, so time is fake and a schedule is a function of its seed.

const (
	exploreSymbol = "BTC-USD"
	ordersPath    = "/api/v2/crypto/trading/orders/"
)

// errDead is what a crashed process's store and wire calls return: a dead
// process does nothing more.
var errDead = errors.New("explore: this process has crashed")

// plan is what a seed chose for its schedule.
type plan struct {
	store        string // "memory", "bbolt", "redis" or "postgres"
	calm         bool   // no faults, no crashes, no steps: liveness is checked
	keys         int
	holders      int  // per process, sharing its store
	split        bool // each key to one holder of a process (else to all: a re-delivered job)
	gens         int  // processes one after another (crash or clean restart); with Redis, at once
	crashRate    float64
	stallRate    float64
	rederive     bool // a restarted process re-quotes: a new limit price
	recoverFirst bool
	invalid      bool // holders also place a request Place must refuse
	pageSize     int
	background   int // orders of the symbol already in the lookup window
	listLag      time.Duration
	venueOffset  time.Duration
	venueJumps   bool
	step0        time.Duration // the client's wall clock step at start
	steps        bool          // steps at waits and at yield points
	stepRate     float64       // at a yield point
	stepOnLoss   bool          // a step right after a create whose answer is lost, and no other
	lost         float64       // a create processed, its answer lost
	lost5xx      float64       // a create processed, answered 500
	delay        float64       // a create delivered later, its answer lost
	errs         float64       // a synthetic 429/503, nothing processed
	contra       float64       // a 201 that repeats "state":"failed"
	contraList   float64       // a list row of ours shown twice, first failed
	repeatRows   float64       // a later page repeats the first page's rows
	restartDelay time.Duration
	limits       bool // every holder has account limits no schedule reaches: Place takes its admission path
}

func pick[T any](r *rand.Rand, xs ...T) T { return xs[r.IntN(len(xs))] }

func makePlan(seed int64) plan {
	r := rand.New(rand.NewPCG(uint64(seed), 0x5eed))
	p := plan{store: pick(r, "memory", "bbolt"), keys: 1 + r.IntN(3), holders: 2 + r.IntN(2), gens: 1 + r.IntN(3),
		pageSize: 100}
	on := func(prob float64) bool { return r.Float64() < prob }
	// Account limits, drawn apart so that every other choice of the seed
	// stays what it was: the intent is recorded pending and the store's
	// intents counted before the first send.
	p.limits = rand.New(rand.NewPCG(uint64(seed), 0x11a175)).IntN(3) == 0
	if on(0.4) {
		p.pageSize = pick(r, 3, 4, 5)
		p.background = p.pageSize * pick(r, 2, 3)
	}
	p.split = on(0.3)
	p.calm = on(0.2)
	if p.calm {
		p.restartDelay = 70 * time.Second
		return p
	}
	p.rederive = on(0.3)
	p.recoverFirst = on(0.4)
	p.invalid = on(0.2)
	if on(0.5) {
		p.crashRate = pick(r, 0.02, 0.05, 0.1)
	}
	if on(0.3) {
		p.stallRate = pick(r, 0.02, 0.05)
	}
	if on(0.3) {
		p.listLag = pick(r, 2*time.Second, 5*time.Second, 8*time.Second)
	}
	p.venueOffset = pick(r, 0, 0, 3*time.Second, -3*time.Second, 20*time.Second, -20*time.Second)
	p.venueJumps = on(0.3)
	p.step0 = pick(r, 0, 0, 25*time.Second, -25*time.Second)
	switch {
	case on(0.35):
		p.steps, p.stepRate = true, pick(r, 0.05, 0.2)
	case on(0.5):
		p.stepOnLoss = true
	}
	rate := func(prob float64, rates ...float64) float64 {
		if on(prob) {
			return pick(r, rates...)
		}
		return 0
	}
	p.lost = rate(0.4, 0.2, 0.5)
	p.lost5xx = rate(0.2, 0.2, 0.5)
	p.delay = rate(0.4, 0.3, 0.7)
	p.errs = rate(0.3, 0.1, 0.3)
	p.contra = rate(0.25, 0.3, 1)
	p.contraList = rate(0.25, 0.3, 1)
	if p.background > 0 {
		p.repeatRows = rate(0.4, 0.5, 1)
	}
	if p.store == "bbolt" && rand.New(rand.NewPCG(uint64(seed), 0x4ed15)).IntN(3) == 0 {
		// A fleet: the processes run at once, each with a Store of its own
		// on one Redis. (Drawn apart, so every other choice of the seed
		// stays what it was.)
		p.store = "redis"
		if rand.New(rand.NewPCG(uint64(seed), 0x9057)).IntN(2) == 0 {
			// Half the fleets share PostgreSQL instead.
			p.store = "postgres"
		}
	}
	if p.store == "memory" {
		// A memory store dies with its process: only the signature window
		// keeps a restarted process from sending while an old create is in
		// flight, so the restart takes longer than any of them can land.
		p.restartDelay = 70 * time.Second
	} else {
		p.restartDelay = pick(r, 0, time.Second, 10*time.Second, 35*time.Second)
	}
	return p
}

// limits returns the account limits of the plan's holders: none, or
// limits far above what any schedule places, so that every Place takes
// the admission path (the intent recorded pending, the store's intents
// and the venue's open orders counted) and none is refused.
func (w *world) limits() broker.Limits {
	if !w.p.limits {
		return broker.Limits{}
	}
	return broker.Limits{MaxOpenOrders: 10_000, MaxDailyNotional: decimal.NewFromInt(1_000_000_000)}
}

// modes names the plan's modes, for the run's tally.
func (p plan) modes() []string {
	m := []string{p.store}
	add := func(on bool, name string) {
		if on {
			m = append(m, name)
		}
	}
	add(p.calm, "calm")
	add(!p.split, "same-keys")
	add(p.split, "split-keys")
	add(p.gens > 1 && !p.fleet(), "restart")
	add(p.gens > 1 && p.fleet(), "fleet")
	add(p.crashRate > 0, "crash")
	add(p.stallRate > 0, "stall")
	add(p.rederive, "requote")
	add(p.recoverFirst, "recover-first")
	add(p.invalid, "invalid-request")
	add(p.background > 0, "full-last-page")
	add(p.listLag > 0, "list-lag")
	add(p.venueOffset != 0, "venue-offset")
	add(p.venueJumps, "date-jump")
	add(p.step0 != 0 || p.steps || p.stepOnLoss, "clock-step")
	add(p.lost > 0, "lost-answer")
	add(p.lost5xx > 0, "lost-5xx")
	add(p.delay > 0, "delayed-delivery")
	add(p.errs > 0, "429/5xx")
	add(p.contra > 0, "contradictory-201")
	add(p.contraList > 0, "contradictory-row")
	add(p.repeatRows > 0, "repeated-rows")
	add(p.limits, "limits")
	return m
}

// fleet reports whether the plan's processes run at once (a fleet on one
// Redis) rather than one after another.
func (p plan) fleet() bool { return p.store == "redis" || p.store == "postgres" }

func (p plan) String() string {
	return fmt.Sprintf("store=%s keys=%d holders=%d gens=%d page=%d/%d lag=%v venueOff=%v step0=%v modes=%s",
		p.store, p.keys, p.holders, p.gens, p.background, p.pageSize, p.listLag, p.venueOffset, p.step0,
		strings.Join(p.modes(), ","))
}

// proc is one process: its store and its holders. A crashed process is
// dead: its holders' calls are refused from then on.
type proc struct {
	gen    int
	dead   bool
	closed bool
	store  idempotency.Store
	alive  int // holder goroutines not returned
}

// holder is one broker.Client and the goroutine placing with it.
type holder struct {
	id     int
	name   string
	proc   *proc
	client *broker.Client
	sent   int               // creates this holder put on the wire
	first  []json.RawMessage // the rows of the last first page of a list it read
}

// park is a holder waiting at a yield point for the scheduler.
type park struct {
	h     *holder
	point string
	ch    chan bool
	until time.Time // stalled until then
}

// createRec is one create that reached the venue.
type createRec struct {
	cid     string
	seq     int64 // when it left the client
	orderID string
	failed  bool
	by      string    // the holder that sent it
	gen     int       // its process
	at      time.Time // when it left the client
	late    bool      // delivered after the client saw it lost
}

// placeResult is one Place a live process heard the answer of; seqStart
// and seqEnd order it against the creates (createRec.seq).
type placeResult struct {
	h        *holder
	key      string
	invalid  bool
	order    *broker.Order
	err      error
	seqStart int64
	seqEnd   int64
	sent     int       // creates the call put on the wire
	at       time.Time // when it began
}

// recoverResult is one Recover a live process heard the report of.
type recoverResult struct {
	h   *holder
	rep *broker.RecoverReport
	seq int64
}

// world is one schedule's venue, processes, scheduler and record.
type world struct {
	t     testing.TB
	seed  int64
	p     plan
	srv   *brokertest.Server
	key   *signing.PrivateKey
	start time.Time
	dir   string
	srng  *rand.Rand // the scheduler's
	step  atomic.Int64

	mu          sync.Mutex
	frng        *rand.Rand // the venue's faults
	parked      []*park
	running     int
	wake        chan struct{}
	seq         int64
	trace       []string
	venueOff    time.Duration
	dateSkew    time.Duration // what the venue's front ends add to its Date header
	creates     []createRec
	results     []placeResult
	recovers    []recoverResult
	crashesLeft int
	nextHolder  int
	nextSystem  int
	alwaysOn    *proc // the network's and the restarts' pseudo-process: never crashes
	cidKey      map[string]string
	ns          string // the namespace every client_order_id is derived in
	redisURL    string
	// settled is when (seq) a holder recorded an intent rejected or not
	// placed, by holder name and client_order_id: what it answered is
	// judged against the creates sent before then.
	settled    map[string]int64
	events     map[string]int
	lastWait   time.Time
	violations []string
	detail     bool // trace every step the scheduler lets a holder take
}

// steppedClock is the client machine's wall clock: Now is the bubble's now
// plus a step the scheduler changes; timers run on the bubble's
// (monotonic) time.
type steppedClock struct {
	clockwork.Clock
	step *atomic.Int64
}

func (c steppedClock) Now() time.Time                  { return c.Clock.Now().Add(time.Duration(c.step.Load())) }
func (c steppedClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }
func (c steppedClock) Until(t time.Time) time.Duration { return t.Sub(c.Now()) }

func (w *world) logf(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	if w.ns != "" {
		// A fleet's client_order_ids are derived in a namespace of the
		// run's own: the trace names them by key, so that a seed replays.
		for cid, k := range w.cidKey {
			line = strings.ReplaceAll(line, cid, "cid("+k+")")
		}
	}
	w.trace = append(w.trace, fmt.Sprintf("%7.1fs ", time.Since(w.start).Seconds())+line)
}

func (w *world) event(name string) { w.events[name]++ }

func (w *world) keyOf(cid string) string {
	if k, ok := w.cidKey[cid]; ok {
		return k
	}
	return "?"
}

func (w *world) notify() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// systemHolder returns a pseudo-holder for a goroutine of the world (a
// late delivery, a restart) so that it too moves only when the scheduler
// says: what happens at one instant happens in one order. Called with w.mu
// held.
func (w *world) systemHolder(name string) *holder {
	w.nextSystem++
	return &holder{id: 1<<20 + w.nextSystem, name: name, proc: w.alwaysOn}
}

// yield parks h at a point until the scheduler lets it go on, or refuses
// it (errDead) because its process has crashed.
func (w *world) yield(h *holder, point string) error {
	w.mu.Lock()
	if h.proc.dead {
		w.mu.Unlock()
		return errDead
	}
	p := &park{h: h, point: point, ch: make(chan bool, 1)}
	w.parked = append(w.parked, p)
	w.mu.Unlock()
	w.notify()
	if !<-p.ch {
		return errDead
	}
	return nil
}

// schedule runs the world until every goroutine of it has returned.
func (w *world) schedule() {
	for {
		synctest.Wait()
		w.mu.Lock()
		if w.running == 0 {
			w.mu.Unlock()
			return
		}
		now := time.Now()
		var cands []*park
		var nextStall time.Time
		for _, p := range w.parked {
			if p.until.After(now) {
				if nextStall.IsZero() || p.until.Before(nextStall) {
					nextStall = p.until
				}
				continue
			}
			cands = append(cands, p)
		}
		if len(cands) == 0 {
			// Every holder waits on time: a wait.
			if !now.Equal(w.lastWait) {
				w.lastWait = now
				w.atWait()
			}
			w.mu.Unlock()
			if nextStall.IsZero() {
				<-w.wake
			} else {
				select {
				case <-w.wake:
				case <-time.After(nextStall.Sub(now)):
				}
			}
			continue
		}
		slices.SortFunc(cands, func(a, b *park) int { return a.h.id - b.h.id })
		p := cands[w.srng.IntN(len(cands))]
		r := w.srng.Float64()
		system := p.h.proc == w.alwaysOn
		switch {
		case system:
		case w.crashesLeft > 0 && r < w.p.crashRate:
			w.crash(p)
			w.mu.Unlock()
			continue
		case r < w.p.crashRate+w.p.stallRate:
			d := pick(w.srng, 2*time.Second, 10*time.Second, 31*time.Second)
			p.until = now.Add(d)
			w.logf("stall %s %v at %s", p.h.name, d, p.point)
			w.event("stall")
			w.mu.Unlock()
			continue
		}
		if w.p.steps && w.srng.Float64() < w.p.stepRate {
			w.stepClock()
		}
		w.parked = slices.DeleteFunc(w.parked, func(q *park) bool { return q == p })
		if w.detail {
			w.logf("run %s from %s", p.h.name, p.point)
		}
		w.mu.Unlock()
		p.ch <- true
	}
}

// atWait is where every holder waits on time: the client's wall clock may
// be stepped and the venue's Date may jump.
func (w *world) atWait() {
	if w.p.steps && w.srng.Float64() < 0.5 {
		w.stepClock()
	}
	if w.p.venueJumps && w.srng.Float64() < 0.3 {
		w.dateSkew = pick(w.srng, 0, 5*time.Second, -5*time.Second, 20*time.Second, -20*time.Second)
		w.logf("venue Date header skew -> %v", w.dateSkew)
		w.event("date-jump")
	}
}

func (w *world) stepClock() { w.stepClockWith(w.srng) }

// stepClockWith steps the client's wall clock, drawing the step from r.
// Called with w.mu held.
func (w *world) stepClockWith(r *rand.Rand) {
	s := pick(r, 0, 25*time.Second, -25*time.Second, 40*time.Second, -40*time.Second)
	w.step.Store(int64(s))
	w.logf("client wall clock step -> %v", s)
	w.event("clock-step")
}

func (w *world) setHostile() {
	if err := w.srv.SetFaultPlan(venue.FaultPlan{Hostile: &venue.Hostile{ClockOffset: w.venueOff, ListLag: w.p.listLag}}); err != nil {
		w.t.Fatalf("seed %d: %v", w.seed, err)
	}
}

// crash ends p's process where p stands: its parked holders are refused,
// and every later store or wire call of it too.
func (w *world) crash(p *park) {
	pr := p.h.proc
	pr.dead = true
	w.crashesLeft--
	w.logf("CRASH process %d at %s %s", pr.gen, p.h.name, p.point)
	w.event("crash")
	for _, q := range w.parked {
		if q.h.proc == pr {
			q.ch <- false
		}
	}
	w.parked = slices.DeleteFunc(w.parked, func(q *park) bool { return q.h.proc == pr })
	w.closeStore(pr)
	if pr.gen+1 < w.p.gens && !w.p.fleet() {
		w.restart(pr.gen + 1)
	}
}

func (w *world) closeStore(pr *proc) {
	if pr.closed {
		return
	}
	pr.closed = true
	if err := pr.store.Close(); err != nil {
		w.t.Errorf("seed %d: closing the store: %v", w.seed, err)
	}
}

// restart starts process gen after the plan's restart delay. Called with
// w.mu held.
func (w *world) restart(gen int) {
	w.running++
	sh := w.systemHolder(fmt.Sprintf("restart%d", gen))
	go func() {
		time.Sleep(w.p.restartDelay)
		_ = w.yield(sh, "restart")
		w.startProc(gen)
		w.mu.Lock()
		w.running--
		w.mu.Unlock()
		w.notify()
	}()
}

func (w *world) openStore() idempotency.Store {
	switch w.p.store {
	case "memory":
		return idempotency.NewMemoryStore() // memory dies with the process
	case "redis":
		// The process's own Store on the fleet's Redis. Its claims outlive
		// it until their lease lapses, on Redis's clock: longer than a
		// schedule runs.
		s, err := redisstore.Open(context.Background(), w.redisURL, w.srv.AccountNumber, redisstore.Config{})
		if err != nil {
			w.t.Fatalf("seed %d: opening the Redis store: %v", w.seed, err)
		}
		return s
	case "postgres":
		// The same, on the fleet's PostgreSQL (a primary and its
		// synchronous standby): claims are rows, leases on its clock.
		s, err := pgstore.Open(context.Background(), explorePostgresURL, w.srv.AccountNumber, pgstore.Config{})
		if err != nil {
			w.t.Fatalf("seed %d: opening the PostgreSQL store: %v", w.seed, err)
		}
		return s
	}
	s, err := idempotency.Open(filepath.Join(w.dir, "intents.db"), idempotency.Config{})
	if err != nil {
		w.t.Fatalf("seed %d: opening the store: %v", w.seed, err)
	}
	return s
}

var limitPrices = []string{"1000.00", "1001.50", "999.25"}

func (w *world) request(gen int, invalid bool) broker.OrderRequest {
	price := limitPrices[0]
	if w.p.rederive {
		price = limitPrices[gen%len(limitPrices)]
	}
	q := decimal.RequireFromString("0.01")
	if invalid {
		q = decimal.RequireFromString("-0.01")
	}
	return broker.OrderRequest{Symbol: exploreSymbol, Side: broker.SideBuy, Type: broker.TypeLimit,
		AssetQuantity: q, LimitPrice: decimal.RequireFromString(price)}
}

// startProc starts process gen: a store (a new memory store, or the bolt
// file reopened) and its holders.
func (w *world) startProc(gen int) {
	store := w.openStore()
	w.mu.Lock()
	defer w.mu.Unlock()
	pr := &proc{gen: gen, store: store}
	w.logf("start process %d", gen)
	for i := range w.p.holders {
		h := &holder{id: w.nextHolder, name: fmt.Sprintf("h%d.%d", gen, i), proc: pr}
		w.nextHolder++
		c, err := broker.New(broker.Config{
			APIKey:        w.srv.APIKey,
			PrivateKey:    w.key,
			BaseURL:       w.srv.URL,
			AccountNumber: w.srv.AccountNumber,
			IntentStore:   &exploreStore{w: w, h: h, inner: store},
			Transport:     transport.Config{RoundTripper: &exploreWire{w: w, h: h}, Clock: steppedClock{Clock: clockwork.NewRealClock(), step: &w.step}, Retry: &transport.RetryPolicy{MaxAttempts: 3, BaseDelay: 500 * time.Millisecond, MaxDelay: 2 * time.Second}},
			Orders:        orders.Config{Namespace: w.ns},
			Limits:        w.limits(),
		})
		if err != nil {
			w.t.Fatalf("seed %d: %v", w.seed, err)
		}
		h.client = c
		var keys []string
		for k := range w.p.keys {
			if !w.p.split || k%w.p.holders == i {
				keys = append(keys, fmt.Sprintf("k%d", k))
			}
		}
		w.srng.Shuffle(len(keys), func(a, b int) { keys[a], keys[b] = keys[b], keys[a] })
		recoverFirst := gen > 0 && i == 0 && w.p.recoverFirst
		invalidAt := -1
		if w.p.invalid {
			invalidAt = w.srng.IntN(len(keys) + 1)
		}
		pr.alive++
		w.running++
		go w.runHolder(h, keys, recoverFirst, invalidAt)
	}
}

func (w *world) runHolder(h *holder, keys []string, recoverFirst bool, invalidAt int) {
	defer w.holderDone(h)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Hour)
	defer cancel()
	if recoverFirst {
		if w.yield(h, "Recover") != nil {
			return
		}
		rep, err := h.client.Recover(ctx)
		if w.yield(h, "Recover returned") != nil {
			return
		}
		w.mu.Lock()
		w.seq++
		if !h.proc.dead {
			w.logf("%s Recover -> %s", h.name, describeRecover(w, rep, err))
			if rep != nil {
				w.recovers = append(w.recovers, recoverResult{h: h, rep: rep, seq: w.seq})
			}
		}
		w.mu.Unlock()
	}
	for i := 0; i <= len(keys); i++ {
		if i == invalidAt {
			w.place(ctx, h, fmt.Sprintf("bad%d", h.id), true)
		}
		if i < len(keys) {
			w.place(ctx, h, keys[i], false)
		}
	}
}

func (w *world) place(ctx context.Context, h *holder, key string, invalid bool) {
	if w.yield(h, "Place "+key) != nil {
		return
	}
	w.mu.Lock()
	w.seq++
	res := placeResult{h: h, key: key, invalid: invalid, seqStart: w.seq, at: time.Now()}
	sent0 := h.sent
	w.mu.Unlock()
	res.order, res.err = h.client.Place(ctx, key, w.request(h.proc.gen, invalid))
	if w.yield(h, "Place returned") != nil {
		return // nobody heard it
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seq++
	res.seqEnd, res.sent = w.seq, h.sent-sent0
	if h.proc.dead {
		return // nobody heard it
	}
	w.results = append(w.results, res)
	w.logf("%s Place(%s) -> %s", h.name, key, describePlace(res))
}

func (w *world) holderDone(h *holder) {
	w.mu.Lock()
	defer w.mu.Unlock()
	h.client.Close()
	w.running--
	h.proc.alive--
	if h.proc.alive == 0 && !h.proc.dead {
		w.closeStore(h.proc)
		if h.proc.gen+1 < w.p.gens && !w.p.fleet() {
			w.restart(h.proc.gen + 1)
		}
	}
	w.notify()
}

// redisHolder is how a Redis store's refusal names the holder and its
// lease: a host, a process id, random ids and Redis's own time, none of
// which a seed decides, so a trace leaves them out.
var redisHolder = regexp.MustCompile(`\([^()]*claim until [^()]*\)`)

func describePlace(r placeResult) string {
	s := "ok"
	if r.err != nil {
		s = "err: " + redisHolder.ReplaceAllString(r.err.Error(), "(holder and lease)")
	}
	if r.order != nil {
		s += fmt.Sprintf(" [order %s %s]", r.order.ID, r.order.State)
	}
	return fmt.Sprintf("%s (sent %d)", s, r.sent)
}

func describeRecover(w *world, rep *broker.RecoverReport, err error) string {
	if rep == nil {
		return fmt.Sprintf("err: %v", err)
	}
	keys := func(rs []idempotency.Record) string {
		var ks []string
		for _, r := range rs {
			ks = append(ks, w.keyOf(r.ClientOrderID))
		}
		return strings.Join(ks, ",")
	}
	return fmt.Sprintf("ack[%s] rejected[%s] notplaced[%s] unresolved[%s] inprogress[%s] err=%v",
		keys(rep.Acknowledged), keys(rep.Rejected), keys(rep.NotPlaced), keys(rep.Unresolved), keys(rep.InProgress), err)
}

// exploreStore is a holder's view of its process's store: every call is a
// yield point (writes before and after), and a crashed process's calls are
// refused.
type exploreStore struct {
	w     *world
	h     *holder
	inner idempotency.Store
}

func (s *exploreStore) VouchesNew() bool {
	wi, ok := s.inner.(idempotency.Witness)
	return ok && wi.VouchesNew()
}

func (s *exploreStore) Create(ctx context.Context, rec idempotency.Record) (idempotency.Record, bool, error) {
	if err := s.w.yield(s.h, "store.Create "+s.w.keyName(rec.ClientOrderID)); err != nil {
		return idempotency.Record{}, false, err
	}
	got, created, err := s.inner.Create(ctx, rec)
	if yerr := s.w.yield(s.h, "after store.Create"); yerr != nil {
		return idempotency.Record{}, false, yerr
	}
	return got, created, err
}

func (s *exploreStore) Get(ctx context.Context, cid string) (idempotency.Record, error) {
	if err := s.w.yield(s.h, "store.Get "+s.w.keyName(cid)); err != nil {
		return idempotency.Record{}, err
	}
	return s.inner.Get(ctx, cid)
}

func (s *exploreStore) Update(ctx context.Context, rec idempotency.Record) error {
	if err := s.w.yield(s.h, fmt.Sprintf("store.Update %s %s sends=%d", s.w.keyName(rec.ClientOrderID), rec.State, rec.Sends)); err != nil {
		return err
	}
	err := s.inner.Update(ctx, rec)
	if err == nil && (rec.State == idempotency.NotPlaced || rec.State == idempotency.Rejected) {
		s.w.mu.Lock()
		s.w.seq++
		s.w.settled[s.h.name+"/"+rec.ClientOrderID] = s.w.seq
		s.w.mu.Unlock()
	}
	if yerr := s.w.yield(s.h, "after store.Update"); yerr != nil {
		return yerr
	}
	return err
}

func (s *exploreStore) Release(ctx context.Context, cid, holder string) error {
	if err := s.w.yield(s.h, "store.Release "+s.w.keyName(cid)); err != nil {
		return err
	}
	return s.inner.Release(ctx, cid, holder)
}

func (s *exploreStore) List(ctx context.Context, states ...idempotency.State) ([]idempotency.Record, error) {
	if err := s.w.yield(s.h, "store.List"); err != nil {
		return nil, err
	}
	return s.inner.List(ctx, states...)
}

func (s *exploreStore) Close() error { return nil } // the world closes the process's store

func (w *world) keyName(cid string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.keyOf(cid)
}

// exploreWire is a holder's wire to the venue: a yield point before and
// after each round trip, and the venue's modes the plan chose.
type exploreWire struct {
	w *world
	h *holder
}

func (x *exploreWire) RoundTrip(req *http.Request) (*http.Response, error) {
	w := x.w
	var body []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		body = b
	}
	create := req.Method == http.MethodPost && req.URL.Path == ordersPath
	list := req.Method == http.MethodGet && req.URL.Path == ordersPath
	label := req.Method + " " + req.URL.Path
	var cid string
	if create {
		var c struct {
			ClientOrderID string `json:"client_order_id"`
		}
		_ = json.Unmarshal(body, &c)
		cid = c.ClientOrderID
		label = "POST create " + w.keyName(cid)
	}
	if err := w.yield(x.h, "before "+label); err != nil {
		return nil, err
	}
	if err := req.Context().Err(); err != nil {
		return nil, err
	}
	w.mu.Lock()
	roll := func(p float64) bool { return p > 0 && w.frng.Float64() < p }
	mode := ""
	switch {
	case roll(w.p.errs):
		mode = pick(w.frng, "429", "503")
	case create && roll(w.p.delay):
		mode = "delay"
	case create && roll(w.p.lost):
		mode = "lost"
	case create && roll(w.p.lost5xx):
		mode = "lost5xx"
	case create && roll(w.p.contra):
		mode = pick(w.frng, "contra-dup", "contra-case")
	case list && roll(w.p.contraList):
		mode = "contra-row"
	case list && req.URL.Query().Get("cursor") != "" && roll(w.p.repeatRows):
		mode = "repeat-rows"
	}
	var seq int64
	sentAt := time.Now()
	if create && mode != "429" && mode != "503" {
		w.seq++
		seq = w.seq
		x.h.sent++
	}
	delay := time.Duration(0)
	if mode == "delay" {
		delay = time.Duration(1+w.frng.IntN(28)) * time.Second
	}
	if mode != "" {
		w.event(mode)
		w.logf("%s %s: %s %v", x.h.name, label, mode, delay)
	}
	if (mode == "delay" || mode == "lost" || mode == "lost5xx") && (w.p.stepOnLoss || w.p.steps && w.frng.Float64() < 0.5) {
		// The wall clock stepped right after the create left, as NTP, a VM
		// resume or a migration steps it.
		w.stepClockWith(w.frng)
	}
	w.mu.Unlock()

	switch mode {
	case "429", "503":
		code := http.StatusTooManyRequests
		if mode == "503" {
			code = http.StatusServiceUnavailable
		}
		return synthetic(req, code, `{"type":"server_error","errors":[{"detail":"synthetic","attr":null}]}`), nil
	case "delay":
		late := req.Clone(context.Background())
		w.mu.Lock()
		w.running++
		sh := w.systemHolder("net")
		w.mu.Unlock()
		go func() {
			time.Sleep(delay)
			_ = w.yield(sh, "deliver "+w.keyName(cid))
			late.Body = io.NopCloser(bytes.NewReader(body))
			resp, err := w.srv.Client().Transport.RoundTrip(late)
			w.mu.Lock()
			if err != nil {
				w.logf("delayed create %s delivered: %v", w.keyOf(cid), err)
			} else {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				w.recordCreate(createRec{cid: cid, seq: seq, by: x.h.name, gen: x.h.proc.gen, at: sentAt, late: true}, resp.StatusCode, b)
			}
			w.running--
			w.mu.Unlock()
			w.notify()
		}()
		return nil, io.ErrUnexpectedEOF
	}

	req.Body = io.NopCloser(bytes.NewReader(body))
	resp, err := w.srv.Client().Transport.RoundTrip(req)
	var rb []byte
	if err == nil {
		rb, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	if create {
		w.mu.Lock()
		if err != nil {
			w.logf("%s create %s: %v", x.h.name, w.keyOf(cid), err)
		} else {
			w.recordCreate(createRec{cid: cid, seq: seq, by: x.h.name, gen: x.h.proc.gen, at: sentAt}, resp.StatusCode, rb)
		}
		w.mu.Unlock()
	}
	if yerr := w.yield(x.h, "after "+label); yerr != nil {
		return nil, yerr
	}
	if err != nil {
		return nil, err
	}
	switch mode {
	case "lost":
		return nil, io.ErrUnexpectedEOF
	case "lost5xx":
		return synthetic(req, http.StatusInternalServerError, `{"type":"server_error","errors":[{"detail":"lost","attr":null}]}`), nil
	case "contra-dup", "contra-case":
		if resp.StatusCode/100 == 2 {
			rb = contradict(rb, mode)
		}
	case "contra-row":
		rb = w.contradictRows(rb)
	case "repeat-rows":
		rb = x.repeatRows(rb)
	}
	if list && req.URL.Query().Get("cursor") == "" {
		x.rememberFirst(rb)
	}
	w.mu.Lock()
	skew := w.dateSkew
	w.mu.Unlock()
	if d, err := http.ParseTime(resp.Header.Get("Date")); err == nil && skew != 0 {
		// Another front end, whose clock disagrees: the Date header
		// moves, the venue's signature window does not.
		resp.Header.Set("Date", d.Add(skew).UTC().Format(http.TimeFormat))
	}
	resp.Body = io.NopCloser(bytes.NewReader(rb))
	resp.ContentLength = int64(len(rb))
	resp.Header.Del("Content-Length")
	return resp, nil
}

// recordCreate notes the order a create made, if it made one. Called with
// w.mu held.
func (w *world) recordCreate(c createRec, status int, body []byte) {
	how := c.by + " "
	if c.late {
		how = "delayed " + how
	}
	cid := c.cid
	if status/100 != 2 {
		w.logf("%screate %s answered %d", how, w.keyOf(cid), status)
		return
	}
	var o struct {
		ID    string `json:"id"`
		State string `json:"state"`
	}
	if err := json.Unmarshal(body, &o); err != nil || o.ID == "" {
		w.logf("%screate %s answered %d, unreadable", how, w.keyOf(cid), status)
		return
	}
	c.orderID, c.failed = o.ID, o.State == "failed"
	w.creates = append(w.creates, c)
	w.logf("%screate %s -> order %s %s", how, w.keyOf(cid), o.ID, o.State)
}

func synthetic(req *http.Request, code int, body string) *http.Response {
	return &http.Response{StatusCode: code, Status: fmt.Sprintf("%d %s", code, http.StatusText(code)), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)), Request: req}
}

// contradict makes a 201 repeat "state":"failed" after the real state, or
// add "STATE":"failed".
func contradict(b []byte, mode string) []byte {
	i := bytes.LastIndexByte(b, '}')
	if i < 0 {
		return b
	}
	field := `,"state":"failed"`
	if mode == "contra-case" {
		field = `,"STATE":"failed"`
	}
	return slices.Concat(b[:i], []byte(field), b[i:])
}

type listPage struct {
	Next     json.RawMessage   `json:"next"`
	Previous json.RawMessage   `json:"previous"`
	Results  []json.RawMessage `json:"results"`
}

// contradictRows shows each row of one of the explorer's orders twice, the
// first copy failed. Called without w.mu.
func (w *world) contradictRows(b []byte) []byte {
	var pg listPage
	if json.Unmarshal(b, &pg) != nil {
		return b
	}
	var out []json.RawMessage
	w.mu.Lock()
	for _, row := range pg.Results {
		var m map[string]json.RawMessage
		if json.Unmarshal(row, &m) == nil {
			var cid string
			_ = json.Unmarshal(m["client_order_id"], &cid)
			if _, ours := w.cidKey[cid]; ours {
				m["state"] = json.RawMessage(`"failed"`)
				if failed, err := json.Marshal(m); err == nil {
					out = append(out, failed)
				}
			}
		}
		out = append(out, row)
	}
	w.mu.Unlock()
	pg.Results = out
	nb, err := json.Marshal(pg)
	if err != nil {
		return b
	}
	return nb
}

func (x *exploreWire) rememberFirst(b []byte) {
	var pg listPage
	if json.Unmarshal(b, &pg) == nil {
		x.h.first = pg.Results
	}
}

// repeatRows answers a later page with the rows of the first page.
func (x *exploreWire) repeatRows(b []byte) []byte {
	var pg listPage
	if json.Unmarshal(b, &pg) != nil || len(x.h.first) == 0 {
		return b
	}
	pg.Results = x.h.first
	nb, err := json.Marshal(pg)
	if err != nil {
		return b
	}
	return nb
}
