package simulation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/shopspring/decimal"

	"github.com/tradewire/tradewire/broker"
	"github.com/tradewire/tradewire/broker/brokertest"
	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/orders"
	"github.com/tradewire/tradewire/transport"
	"github.com/tradewire/tradewire/venue"
)

// Placement makes a scenario's bots place orders through orders.Placer
// with idempotency keys, in one simulated process that restarts
// periodically. See the package documentation (# Placement).
//
// The zero value is not used: a Scenario places through a Placer only
// when its Placement field is non-nil.
type Placement struct {
	// Duplicate is what the venue does with a reused client_order_id:
	// venue.CreateSecond (default: the dangerous venue, so that "one
	// order per key" rests on the Placer, not on the venue's kindness),
	// ReturnOriginal or Reject400.
	Duplicate venue.DuplicateMode
	// Weight is the weight of the "place_keyed" step among the bots'
	// steps (default DefaultPlacementWeight).
	Weight int
	// Reuse is the probability that a bot places again, with the same key,
	// an order whose last Place failed (unknown outcome, not placed,
	// interrupted by a restart) rather than a new one (default 0.5;
	// negative for never).
	Reuse float64
	// Replay is the probability that a bot places again a key already
	// acknowledged, which must send nothing (default 0.05).
	Replay float64
	// CommitFaults is the probability that, before a Place, a fault is
	// scripted on the venue for the next create: its answer lost after
	// it was committed (429, 500, 502, 503, 504 or a dropped connection,
	// or a 12 s delay that outlives the client's attempt timeout). It adds
	// to the scenario's Mix, whose 429s and 5xx come before the commit.
	CommitFaults float64
	// CreateFaults, if set, are the faults CommitFaults draws from instead
	// of the lost answers: for a hostile mode, a 2xx with a bad body
	// ("truncated_body", ...) or an HTTP/2 stream ended after
	// the commit ("refused_stream", ...). Method and Path are
	// set to the create's.
	CreateFaults []venue.Fault
	// RestartEvery is the mean time between restarts of the process: at a
	// restart, every Place under way is cut off (its context cancelled
	// while it waits on the clock, and its store refuses writes from then
	// on), and the next bot to place builds a new Placer on the same
	// store and calls Recover first (default DefaultRestartEvery; a
	// negative value never restarts).
	RestartEvery time.Duration
	// NoResend builds every Placer with orders.Config{MaxSends: 1}: an
	// intent is sent at most once, by any Place or Recover.
	NoResend bool
	// Crash is the probability that a Place carries a fuse, lit when it
	// begins and burning 1 to 45 s of simulated time: if the Place is
	// still under way when it burns out (waiting for its signatures to
	// expire, reconciling, waiting out latency), the whole process dies
	// at that moment, as at a restart. Every Place under way is cut off.
	// Default 0.1; negative for none.
	Crash float64
	// StorePath, when set, keeps the intents in the bbolt store
	// idempotency.Open keeps at that path, closed and reopened at every
	// restart. Empty keeps them in one idempotency.NewMemoryStore shared
	// across restarts, which is what a durable store looks like to the
	// next process, without the fsyncs.
	StorePath string

	// newPlacer replaces newBrokerPlacer, for negative controls.
	newPlacer func(tc *transport.Client, store idempotency.Store, account string) (placer, error)
}

// Defaults a Placement uses for its zero fields.
const (
	DefaultPlacementWeight = 4
	DefaultRestartEvery    = 20 * time.Minute
)

// placer is what the placement workload drives: a broker.Client (see
// brokerPlacer), or a deliberately unsafe one in the negative controls.
type placer interface {
	Place(ctx context.Context, key string, req broker.OrderRequest) (*broker.Order, error)
	Recover(ctx context.Context) (broker.RecoverReport, error)
	ClientOrderID(key string) string
}

// newBrokerPlacer places through a broker.Client on tc, as a bot does;
// maxSends reaches the placement engine (1: no re-send; 0: its default).
func newBrokerPlacer(maxSends int) func(tc *transport.Client, store idempotency.Store, account string) (placer, error) {
	return func(tc *transport.Client, store idempotency.Store, account string) (placer, error) {
		c, err := broker.NewFromTransport(tc, broker.Config{AccountNumber: account, IntentStore: store,
			Orders: orders.Config{Namespace: "sim", MaxSends: maxSends}})
		if err != nil {
			return nil, err
		}
		return brokerPlacer{c}, nil
	}
}

// brokerPlacer is a broker.Client as the workload drives it.
type brokerPlacer struct{ *broker.Client }

func (b brokerPlacer) Recover(ctx context.Context) (broker.RecoverReport, error) {
	rep, err := b.Client.Recover(ctx)
	if rep == nil {
		return broker.RecoverReport{}, err
	}
	return *rep, err
}

func (p Placement) withDefaults() (Placement, error) {
	if p.Weight < 0 || p.Reuse > 1 || p.Replay < 0 || p.Replay > 1 || p.CommitFaults < 0 || p.CommitFaults > 1 || p.Crash > 1 {
		return p, errors.New("Placement: Weight must not be negative; Reuse, Replay, CommitFaults and Crash are probabilities")
	}
	if p.Duplicate == "" {
		p.Duplicate = venue.CreateSecond
	}
	if p.Weight == 0 {
		p.Weight = DefaultPlacementWeight
	}
	if p.Reuse == 0 {
		p.Reuse = 0.5
	}
	if p.Replay == 0 {
		p.Replay = 0.05
	}
	if p.Crash == 0 {
		p.Crash = 0.1
	}
	if p.RestartEvery == 0 {
		p.RestartEvery = DefaultRestartEvery
	}
	if p.newPlacer == nil {
		p.newPlacer = newBrokerPlacer(0)
		if p.NoResend {
			p.newPlacer = newBrokerPlacer(1)
		}
	}
	return p, nil
}

// PlacementRun is the record of a scenario's placement: every Place and
// Recover, every key, and the intent store as the final Recover left it.
type PlacementRun struct {
	// Ops are the Place and Recover calls, in the order they began.
	Ops []PlaceOp
	// Keys are the idempotency keys the bots attempted, in the order
	// first attempted.
	Keys []KeyRecord
	// Records is the intent store after the final Recover.
	Records []idempotency.Record
	// Restarts counts the process's restarts, the final one included.
	Restarts int
	// LastSend is the time of the latest create signature in the store;
	// FinalRecover when the final Recover began (zero if it never ran).
	LastSend, FinalRecover time.Time
	// Final is what the final Recover reported.
	Final broker.RecoverReport
	// Figures summarise the placement.
	Figures PlacementFigures
}

// KeyRecord is one idempotency key a bot attempted.
type KeyRecord struct {
	Key, ClientOrderID string
	// Places is how many Place calls used the key.
	Places int
}

// PlaceOp is one Place or Recover call. Every request it sent carries its
// ID on the wire (Event.Op).
type PlaceOp struct {
	ID  int    // unique in the run, from 1
	Bot int    // the bot that made it
	Gen int    // the process generation (restarts so far)
	Op  string // "place", "recover" (after a restart) or "final_recover"
	// Key and ClientOrderID are the Place's; empty for a Recover.
	Key, ClientOrderID string
	// Before is the key's intent state when the Place began ("" when
	// the store had none).
	Before     idempotency.State
	Start, End time.Time
	// Outcome: acknowledged, rejected, not_placed, unknown, in_progress,
	// interrupted (cut off by a restart), invalid; for a Recover, ok or
	// interrupted.
	Outcome string
	Err     error
	// Settled counts the intents a Recover settled (acknowledged,
	// rejected or not placed); Unsettled those it could not.
	Settled, Unsettled int
}

// errCrashed is what a store answers a process that has been restarted.
var errCrashed = errors.New("simulation: the process was restarted (its store refuses writes)")

// fencedStore is one process generation's view of the store: from the
// generation's end on it refuses everything, as a dead process writes
// nothing. It notes the claims the generation takes (holders), so that a
// store that outlives the process (the memory store standing in for a
// file) loses them when the generation ends, as a reopened file does.
type fencedStore struct {
	idempotency.Store
	dead    func() bool
	holders *claimLog
}

// claimLog is the claims one generation took: client_order_id → holder.
type claimLog struct {
	mu sync.Mutex
	m  map[string]string
}

func (c *claimLog) note(rec idempotency.Record) {
	if rec.Holder == "" {
		return
	}
	c.mu.Lock()
	c.m[rec.ClientOrderID] = rec.Holder
	c.mu.Unlock()
}

// releaseAll drops, on s, every claim the generation took.
func (c *claimLog) releaseAll(s idempotency.Store) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, h := range c.m {
		_ = s.Release(context.Background(), id, h)
	}
	c.m = map[string]string{}
}

func (f fencedStore) Create(ctx context.Context, rec idempotency.Record) (idempotency.Record, bool, error) {
	if f.dead() {
		return idempotency.Record{}, false, errCrashed
	}
	f.holders.note(rec)
	return f.Store.Create(ctx, rec)
}

func (f fencedStore) Update(ctx context.Context, rec idempotency.Record) error {
	if f.dead() {
		return errCrashed
	}
	return f.Store.Update(ctx, rec)
}

func (f fencedStore) Release(ctx context.Context, id, holder string) error {
	if f.dead() {
		return errCrashed
	}
	return f.Store.Release(ctx, id, holder)
}

func (f fencedStore) Get(ctx context.Context, id string) (idempotency.Record, error) {
	if f.dead() {
		return idempotency.Record{}, errCrashed
	}
	return f.Store.Get(ctx, id)
}

func (f fencedStore) List(ctx context.Context, states ...idempotency.State) ([]idempotency.Record, error) {
	if f.dead() {
		return nil, errCrashed
	}
	return f.Store.List(ctx, states...)
}

// Close does not close the shared store: the harness does.
func (f fencedStore) Close() error { return nil }

type opKey struct{}

// opOf returns the PlaceOp ID a request's context carries, or 0.
func opOf(ctx context.Context) int {
	id, _ := ctx.Value(opKey{}).(int)
	return id
}

// keyState is the harness's book on one key.
type keyState struct {
	rec      KeyRecord
	req      broker.OrderRequest
	inflight bool
	acked    bool
}

// generation is one life of the process, from a start to a restart.
type generation struct {
	n      int
	deadAt time.Time
	// holders are the claims it took on the store.
	holders *claimLog // when it is cut off
	// crashes are the crash timers of its Places and Recovers under way.
	crashes []*simTimer
}

// process is the simulated process that places orders: one Placer at a
// time on one store, restarted now and then. The bots that place share it.
// Its fields are guarded by mu; no lock is held across a call to the venue.
type process struct {
	cfg     Placement
	clock   *lockstep
	tc      *transport.Client
	srv     *brokertest.Server
	account string
	rand    *rand.Rand // restart times; drawn in lockstep order
	workers int
	// settle is how long after the bots stop the final Recover begins.
	settle time.Duration

	mu         sync.Mutex
	base       idempotency.Store
	gen        *generation
	placer     placer
	recovering bool
	ended      int
	keys       map[string]*keyState
	order      []*keyState // keys in the order first attempted
	retry      []*keyState // keys whose last Place failed
	acked      []*keyState
	ops        []PlaceOp
	nextKey    []int // per bot
	finalRep   broker.RecoverReport
	finalAt    time.Time
}

func newProcess(s Scenario, clk *lockstep, tc *transport.Client, srv *brokertest.Server) (*process, error) {
	cfg := *s.Placement
	var seed [32]byte
	copy(seed[:], fmt.Sprintf("tradewire sim process %d", s.Seed))
	p := &process{cfg: cfg, clock: clk, tc: tc, srv: srv, account: srv.AccountNumber,
		rand: rand.New(rand.NewChaCha8(seed)), workers: s.Workers, keys: map[string]*keyState{},
		nextKey: make([]int, s.Workers), gen: &generation{deadAt: s.Start},
		settle: finalRecoverAfter + time.Second + s.Hostile.ListLag + s.Hostile.ClockOffset.Abs()}
	if err := p.openStore(); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *process) openStore() error {
	if p.cfg.StorePath == "" {
		if p.base == nil {
			p.base = idempotency.NewMemoryStore()
		}
		return nil
	}
	if p.base != nil {
		if err := p.base.Close(); err != nil {
			return fmt.Errorf("simulation: closing the intent store: %w", err)
		}
	}
	st, err := idempotency.Open(p.cfg.StorePath, idempotency.Config{})
	if err != nil {
		return fmt.Errorf("simulation: opening the intent store: %w", err)
	}
	p.base = st
	return nil
}

// restart ends the current generation now and starts the next one, whose
// life ends at until. The caller holds mu.
func (p *process) restart(until time.Time) error {
	if err := p.openStore(); err != nil {
		return err
	}
	if p.cfg.StorePath == "" && p.gen.holders != nil {
		// The memory store outlives the process here; its claims do not.
		p.gen.holders.releaseAll(p.base)
	}
	g := &generation{n: p.gen.n + 1, deadAt: until, holders: &claimLog{m: map[string]string{}}}
	p.gen = g
	store := fencedStore{Store: p.base, holders: g.holders, dead: func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return !p.clock.Now().Before(g.deadAt)
	}}
	pl, err := p.cfg.newPlacer(p.tc, store, p.account)
	if err != nil {
		return fmt.Errorf("simulation: building a placer: %w", err)
	}
	p.placer = pl
	return nil
}

// nextDeath draws when the generation starting now will be cut off.
func (p *process) nextDeath(now time.Time) time.Time {
	if p.cfg.RestartEvery < 0 {
		return time.Unix(1<<62, 0)
	}
	// Uniform in [0.5, 1.5) × RestartEvery.
	return now.Add(p.cfg.RestartEvery/2 + time.Duration(p.rand.Int64N(int64(p.cfg.RestartEvery))))
}

// beginOp records the start of a Place or Recover and returns its ID.
func (p *process) beginOp(op PlaceOp) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	op.ID = len(p.ops) + 1
	p.ops = append(p.ops, op)
	return op.ID
}

func (p *process) endOp(id int, f func(*PlaceOp)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f(&p.ops[id-1])
}

// withCrash returns a context that the end of generation g cancels: an
// AfterFunc on the lockstep clock, owned by the calling bot, so that it
// wakes exactly that bot wherever the Placer waits. With a fuse, the timer
// fires fuse from now if g lives that long, and kills g then: every other
// crash timer of g is moved to that moment, and fires in turn.
func (p *process) withCrash(ctx context.Context, g *generation, fuse time.Duration, op int) (context.Context, func()) {
	cctx, cancel := context.WithCancel(context.WithValue(ctx, opKey{}, op))
	cctx = withCaller(cctx)
	now := p.clock.Now()
	at := g.deadAt
	if fuse > 0 && now.Add(fuse).Before(at) {
		at = now.Add(fuse)
	}
	t := p.clock.AfterFunc(at.Sub(now), func() {
		p.mu.Lock()
		if now := p.clock.Now(); now.Before(g.deadAt) { // the fuse burnt out
			g.deadAt = now
			for _, o := range g.crashes {
				o.moveTo(now)
			}
		}
		p.mu.Unlock()
		cancel()
	}).(*simTimer)
	p.mu.Lock()
	g.crashes = append(g.crashes, t)
	p.mu.Unlock()
	return cctx, func() {
		t.Stop()
		cancel()
		p.mu.Lock()
		g.crashes = slices.DeleteFunc(g.crashes, func(o *simTimer) bool { return o == t })
		p.mu.Unlock()
	}
}

// live makes sure the process has a live generation, restarting it (and
// running Recover) when the current one is past its end. Bots that find a
// Recover under way wait on the clock for it. It returns the placer and
// the end of its generation, or ok == false when ctx ended.
func (p *process) live(ctx context.Context, b *Bot) (pl placer, g *generation, ok bool, err error) {
	for ctx.Err() == nil {
		p.mu.Lock()
		switch {
		case p.recovering:
			p.mu.Unlock()
			b.Sleep(ctx, time.Second)
			continue
		case p.clock.Now().Before(p.gen.deadAt):
			pl, g = p.placer, p.gen
			p.mu.Unlock()
			return pl, g, true, nil
		}
		now := p.clock.Now()
		if err := p.restart(p.nextDeath(now)); err != nil {
			p.mu.Unlock()
			return nil, nil, false, err
		}
		p.recovering = true
		pl, g = p.placer, p.gen
		p.mu.Unlock()
		p.recover(ctx, b, pl, g, "recover")
		p.mu.Lock()
		p.recovering = false
		p.mu.Unlock()
	}
	return nil, nil, false, nil
}

// recover runs pl.Recover as an op and cancels the resting orders it
// found, through the bot's usual cancels.
func (p *process) recover(ctx context.Context, b *Bot, pl placer, g *generation, kind string) broker.RecoverReport {
	id := p.beginOp(PlaceOp{Bot: b.ID, Gen: g.n, Op: kind, Start: p.clock.Now()})
	rctx, stop := p.withCrash(ctx, g, 0, id)
	rep, err := pl.Recover(rctx)
	stop()
	p.endOp(id, func(op *PlaceOp) {
		op.End, op.Err, op.Outcome = p.clock.Now(), err, "ok"
		if err != nil {
			op.Outcome = "interrupted"
		}
		op.Settled = len(rep.Acknowledged) + len(rep.Rejected) + len(rep.NotPlaced)
		op.Unsettled = len(rep.Unresolved) + len(rep.InProgress)
	})
	for _, r := range rep.Acknowledged {
		if r.OrderID != "" && r.Symbol != "" && isLimit(r.Body) {
			b.Orders = append(b.Orders, r.OrderID)
		}
	}
	return rep
}

// isLimit reports whether a create body is a limit order's, which rests.
func isLimit(body []byte) bool {
	var o struct {
		Type string `json:"type"`
	}
	return json.Unmarshal(body, &o) == nil && o.Type == string(broker.TypeLimit)
}

// commitFaults are what CommitFaults scripts: answers lost after the
// create was committed.
var commitFaults = []venue.Fault{
	{Kind: "lose_response", Status: http.StatusTooManyRequests},
	{Kind: "lose_response", Status: http.StatusInternalServerError},
	{Kind: "lose_response", Status: http.StatusBadGateway},
	{Kind: "lose_response", Status: http.StatusServiceUnavailable},
	{Kind: "lose_response", Status: http.StatusGatewayTimeout},
	{Kind: "lose_response", Status: 0},
	{Kind: "latency", Delay: 12 * time.Second, AfterCommit: true},
}

// createPath matches the create's path only (not a cancel's).
const createPath = "/api/v2/crypto/trading/orders[/]"

// choose picks the key a bot places next: one whose last Place failed
// (Reuse), one already acknowledged (Replay), or a new one. It marks it in
// flight; no two Places of one key run at once, since a second would wait
// on the Placer's per-key lock, off the clock.
func (p *process) choose(b *Bot) *keyState {
	p.mu.Lock()
	defer p.mu.Unlock()
	pickFrom := func(list *[]*keyState, remove bool) *keyState {
		if len(*list) == 0 {
			return nil
		}
		i := b.Rand.IntN(len(*list))
		k := (*list)[i]
		if k.inflight {
			return nil
		}
		if remove {
			*list = append((*list)[:i], (*list)[i+1:]...)
		}
		return k
	}
	var k *keyState
	switch x := b.Rand.Float64(); {
	case x < p.cfg.Reuse:
		k = pickFrom(&p.retry, true)
	case x < p.cfg.Reuse+p.cfg.Replay:
		k = pickFrom(&p.acked, false)
	}
	if k == nil {
		key := fmt.Sprintf("bot%d-order%d", b.ID, p.nextKey[b.ID])
		p.nextKey[b.ID]++
		k = &keyState{rec: KeyRecord{Key: key}, req: newRequest(b)}
		p.keys[key] = k
		p.order = append(p.order, k)
	}
	k.inflight = true
	k.rec.Places++
	return k
}

// newRequest draws an order: a resting limit buy far below the market, or
// a small market buy or sell (a sell may fail for want of holdings).
func newRequest(b *Bot) broker.OrderRequest {
	switch b.Rand.IntN(4) {
	case 0:
		return broker.OrderRequest{Symbol: "ETH-USD", Side: broker.SideBuy, Type: broker.TypeLimit,
			AssetQuantity: decimal.RequireFromString("0.01"), LimitPrice: decimal.RequireFromString("100.00")}
	case 1:
		return broker.OrderRequest{Symbol: "BTC-USD", Side: broker.SideBuy, Type: broker.TypeLimit,
			AssetQuantity: decimal.RequireFromString("0.001"), LimitPrice: decimal.RequireFromString("1000.00")}
	case 2:
		return broker.OrderRequest{Symbol: "BTC-USD", Side: broker.SideSell, Type: broker.TypeMarket,
			AssetQuantity: decimal.RequireFromString("0.00001")}
	}
	return broker.OrderRequest{Symbol: "BTC-USD", Side: broker.SideBuy, Type: broker.TypeMarket,
		AssetQuantity: decimal.RequireFromString("0.00001")}
}

// step is the "place_keyed" workload step.
func (p *process) step(ctx context.Context, b *Bot) error {
	pl, g, ok, err := p.live(ctx, b)
	if err != nil || !ok {
		return err
	}
	if len(b.Orders) > maxOpen {
		if err := cancelOrder(ctx, b); err != nil {
			return err
		}
	}
	k := p.choose(b)
	cid := pl.ClientOrderID(k.rec.Key)
	k.rec.ClientOrderID = cid
	var before idempotency.State
	p.mu.Lock()
	if rec, err := p.base.Get(ctx, cid); err == nil {
		before = rec.State
	}
	p.mu.Unlock()
	if b.Rand.Float64() < p.cfg.CommitFaults {
		faults := commitFaults
		if len(p.cfg.CreateFaults) > 0 {
			faults = p.cfg.CreateFaults
		}
		f := faults[b.Rand.IntN(len(faults))]
		f.Method, f.Path = http.MethodPost, createPath
		if err := p.srv.Inject(f); err != nil {
			return err
		}
	}
	var fuse time.Duration
	if b.Rand.Float64() < p.cfg.Crash {
		fuse = time.Second + time.Duration(b.Rand.Int64N(int64(44*time.Second)))
	}
	id := p.beginOp(PlaceOp{Bot: b.ID, Gen: g.n, Op: "place", Key: k.rec.Key, ClientOrderID: cid,
		Before: before, Start: p.clock.Now()})
	pctx, stop := p.withCrash(ctx, g, fuse, id)
	o, err := pl.Place(pctx, k.rec.Key, k.req)
	interrupted := pctx.Err() != nil && ctx.Err() == nil
	stop()
	outcome := classify(err)
	if interrupted && outcome != "acknowledged" && outcome != "rejected" {
		outcome = "interrupted"
	}
	p.endOp(id, func(op *PlaceOp) { op.End, op.Err, op.Outcome = p.clock.Now(), err, outcome })

	p.mu.Lock()
	k.inflight = false
	switch outcome {
	case "acknowledged":
		if !k.acked {
			k.acked = true
			p.acked = append(p.acked, k)
		}
	case "rejected", "invalid":
	default:
		p.retry = append(p.retry, k)
	}
	p.mu.Unlock()
	if o != nil && o.Type == broker.TypeLimit && !o.State.Final() && before != idempotency.Acknowledged {
		b.Orders = append(b.Orders, o.ID)
	}
	return nil
}

// classify names a Place's outcome.
func classify(err error) string {
	var e *orders.Error
	switch {
	case err == nil:
		return "acknowledged"
	case errors.As(err, &e) && e.Kind == broker.ErrRejected:
		return "rejected"
	case errors.As(err, &e) && e.Kind == broker.ErrNotPlaced:
		return "not_placed"
	case errors.As(err, &e) && e.Kind == broker.ErrInProgress:
		return "in_progress"
	case errors.Is(err, transport.ErrInvalidRequest):
		return "invalid"
	}
	return "unknown"
}

// botEnded is called as each bot's loop ends. The last one advances the
// clock past the expiry of every signature, restarts the process, and
// runs the final Recover.
func (p *process) botEnded(ctx context.Context, b *Bot) error {
	p.mu.Lock()
	p.ended++
	last := p.ended == p.workers
	p.mu.Unlock()
	if !last || ctx.Err() != nil {
		return nil
	}
	// Every bot has stopped: nothing is sent from here on but the final
	// Recover's lookups. 41 s covers a signature's 30 s and the Placer's
	// 10 s skew margin; a lagging orders list (Scenario.Hostile.ListLag)
	// adds its lag, so the final Recover can see every order, and a venue
	// clock offset its size, so every signature has expired on the
	// venue's clock too, whichever clock the client signed with.
	b.Sleep(ctx, p.settle)
	p.mu.Lock()
	now := p.clock.Now()
	if err := p.restart(p.nextDeath(now)); err != nil {
		p.mu.Unlock()
		return err
	}
	pl, g := p.placer, p.gen
	p.finalAt = now
	p.mu.Unlock()
	rep := p.recover(ctx, b, pl, g, "final_recover")
	p.mu.Lock()
	p.finalRep = rep
	p.mu.Unlock()
	return nil
}

// result collects the placement's record after the run.
func (p *process) result(ctx context.Context) (*PlacementRun, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	recs, err := p.base.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("simulation: listing the intent store: %w", err)
	}
	if p.cfg.StorePath != "" {
		if err := p.base.Close(); err != nil {
			return nil, fmt.Errorf("simulation: closing the intent store: %w", err)
		}
	}
	pr := &PlacementRun{Ops: p.ops, Records: recs, Restarts: p.gen.n - 1, FinalRecover: p.finalAt, Final: p.finalRep}
	for _, k := range p.order {
		pr.Keys = append(pr.Keys, k.rec)
	}
	for _, r := range recs {
		if r.LastSignedAt.After(pr.LastSend) {
			pr.LastSend = r.LastSignedAt
		}
	}
	return pr, nil
}
