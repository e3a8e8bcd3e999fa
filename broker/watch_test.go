package broker_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/tradewire/tradewire/broker"
	"github.com/tradewire/tradewire/broker/brokertest"
	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/signing"
	"github.com/tradewire/tradewire/transport"
	"github.com/tradewire/tradewire/venue"
)

// metaStore is a memory intent store that also keeps named values, as the
// durable stores do. Frozen, it drops every PutMeta: a process killed
// after its last save.
type metaStore struct {
	idempotency.Store
	mu     sync.Mutex
	meta   map[string][]byte
	frozen bool
	puts   int
}

func newMetaStore() *metaStore {
	return &metaStore{Store: idempotency.NewMemoryStore(), meta: map[string][]byte{}}
}

func (m *metaStore) GetMeta(_ context.Context, name string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.meta[name]
	if !ok {
		return nil, idempotency.ErrNotFound
	}
	return append([]byte(nil), b...), nil
}

func (m *metaStore) PutMeta(_ context.Context, name string, value []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.frozen {
		m.meta[name] = append([]byte(nil), value...)
		m.puts++
	}
	return nil
}

// VouchesNew implements idempotency.Witness: the store lives as long as
// the test, so a Place sends no lookup before its first create.
func (m *metaStore) VouchesNew() bool { return true }

func (m *metaStore) freeze(on bool) {
	m.mu.Lock()
	m.frozen = on
	m.mu.Unlock()
}

var watchStart = time.Date(2026, 8, 20, 18, 0, 0, 0, time.UTC)

// watchWorld is a simulated venue, a clock shared with the clients, and
// an intent store shared by the trader and the watch.
type watchWorld struct {
	t     testing.TB
	clk   venue.Clock
	srv   *brokertest.Server
	store *metaStore
}

func newWatchWorld(t testing.TB, cfg venue.Config) *watchWorld {
	t.Helper()
	clk := venue.NewClock(watchStart)
	cfg.Clock = clk
	cfg.RateLimits = venue.RateLimits{Account: venue.RateLimit{PerMinute: math.Inf(1)}}
	cfg.BuyingPower = decimal.New(1, 12)
	cfg.Holdings = map[string]decimal.Decimal{"BTC": decimal.New(1, 6), "ETH": decimal.New(1, 6)}
	srv, err := brokertest.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &watchWorld{t: t, clk: clk, srv: srv, store: newMetaStore()}
}

// client returns a new Client on the world's venue and clock with store
// (nil: its own memory store), the client-side bucket off.
func (w *watchWorld) client(store idempotency.Store) *broker.Client {
	w.t.Helper()
	key, err := signing.ParsePrivateKey(w.srv.PrivateKeyBase64)
	if err != nil {
		w.t.Fatal(err)
	}
	if store == nil {
		store = newMetaStore()
	}
	c, err := broker.New(broker.Config{
		APIKey: w.srv.APIKey, PrivateKey: key, BaseURL: w.srv.URL, AccountNumber: w.srv.AccountNumber,
		IntentStore: store,
		Transport:   transport.Config{RoundTripper: w.srv.Client().Transport, Clock: w.clk, RatePerMinute: -1},
	})
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { c.Close() })
	return c
}

// recorder keeps a watch's events.
type recorder struct {
	mu     sync.Mutex
	events []broker.Event
	errs   []error
}

func (r *recorder) snapshot() ([]broker.Event, []error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]broker.Event(nil), r.events...), append([]error(nil), r.errs...)
}

// watch runs c.Watch in a goroutine into r until the returned stop is
// called (a clean stop: ctx canceled).
func watch(c *broker.Client, cfg broker.WatchConfig, r *recorder) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev, err := range c.Watch(ctx, cfg) {
			r.mu.Lock()
			if err != nil {
				r.errs = append(r.errs, err)
			} else {
				r.events = append(r.events, ev)
			}
			r.mu.Unlock()
		}
	}()
	return func() { cancel(); <-done }
}

// trader places and cancels orders at random: limit orders near the
// market (which fill in parts as it moves), market orders, and some from
// another store (external to the watch's).
type trader struct {
	w        *watchWorld
	ours     *broker.Client
	external *broker.Client
	rng      *rand.Rand
	n        int
	open     []string
	ext      map[string]bool // client_order_ids placed by external
}

func (tr *trader) step(ctx context.Context, orders int) {
	t := tr.w.t
	for range orders {
		sym := []string{"BTC-USD", "ETH-USD"}[tr.rng.IntN(2)]
		bid, ask, err := tr.w.srv.Quote(sym)
		if err != nil {
			t.Fatal(err)
		}
		mid := bid.Add(ask).Div(decimal.NewFromInt(2))
		side := []broker.Side{broker.SideBuy, broker.SideSell}[tr.rng.IntN(2)]
		req := broker.OrderRequest{Symbol: sym, Side: side, Type: broker.TypeLimit,
			AssetQuantity: decimal.New(int64(1+tr.rng.IntN(50)), -4)}
		if tr.rng.IntN(10) == 0 {
			req.Type = broker.TypeMarket
		} else {
			off := decimal.NewFromFloat(1 + (tr.rng.Float64()-0.5)*0.002)
			req.LimitPrice = mid.Mul(off).Round(2)
		}
		c := tr.ours
		external := tr.rng.IntN(8) == 0
		if external {
			c = tr.external
		}
		tr.n++
		o, err := c.Place(ctx, fmt.Sprintf("o%d", tr.n), req)
		if err != nil {
			t.Fatalf("place %d: %v", tr.n, err)
		}
		if external {
			tr.ext[o.ClientOrderID] = true
		}
		if !o.State.Final() {
			tr.open = append(tr.open, o.ID)
		}
	}
	// Cancel an open order or two, most steps.
	for len(tr.open) > 0 && tr.rng.IntN(3) != 0 {
		i := tr.rng.IntN(len(tr.open))
		id := tr.open[i]
		tr.open[i] = tr.open[len(tr.open)-1]
		tr.open = tr.open[:len(tr.open)-1]
		if _, err := tr.ours.CancelOrder(ctx, id); err != nil && !errors.Is(err, transport.ErrRejected) {
			t.Fatalf("cancel %s: %v", id, err)
		}
	}
}

// cancelAll cancels every order that may still be open.
func (tr *trader) cancelAll(ctx context.Context) {
	for _, id := range tr.open {
		if _, err := tr.ours.CancelOrder(ctx, id); err != nil && !errors.Is(err, transport.ErrRejected) {
			tr.w.t.Fatalf("cancel %s: %v", id, err)
		}
	}
	tr.open = nil
}

// truth lists every order of the account as the venue holds it now.
func (w *watchWorld) truth(ctx context.Context) map[string]broker.Order {
	w.t.Helper()
	if err := w.srv.SetFaultPlan(venue.FaultPlan{Hostile: &venue.Hostile{}, Mix: &venue.Mix{}}); err != nil {
		w.t.Fatal(err)
	}
	w.clk.SkipWaits(1) // past any fault still pending; nothing else waits now
	c := w.client(nil)
	all, err := broker.Collect(c.Orders(ctx, broker.OrderFilter{}, broker.Paging{MaxPages: 1 << 20}))
	if err != nil {
		w.t.Fatal(err)
	}
	out := make(map[string]broker.Order, len(all))
	for _, o := range all {
		out[o.ID] = o
	}
	return out
}

// checkEvents compares the events with the venue's orders: each order's
// last event has its final state (or, open, its state) and cumulative
// fill; no change is reported twice; each event's fill adds up. It
// returns the orders missed and the changes repeated.
func checkEvents(t testing.TB, events []broker.Event, truth map[string]broker.Order, ext map[string]bool, sums bool) (missed, repeated int) {
	t.Helper()
	seen := map[string]bool{}
	last := map[string]broker.Event{}
	sum := map[string]decimal.Decimal{}
	for _, ev := range events {
		if seen[ev.ID] {
			repeated++
			continue
		}
		seen[ev.ID] = true
		id := ev.Order.ID
		if p, ok := last[id]; ok {
			if p.Order.State.Final() {
				t.Errorf("order %s: %s event after final %s", id, ev.Kind, p.Kind)
			}
			if ev.Order.FilledAssetQuantity.LessThan(p.Order.FilledAssetQuantity) {
				t.Errorf("order %s: fill went back from %s to %s", id, p.Order.FilledAssetQuantity, ev.Order.FilledAssetQuantity)
			}
		}
		last[id] = ev
		sum[id] = sum[id].Add(ev.FillQuantity)
		if want := ext[ev.Order.ClientOrderID]; ev.External != want {
			t.Errorf("order %s (%s): External %v, want %v", id, ev.Order.ClientOrderID, ev.External, want)
		}
		if !ev.External && ev.Intent == "" {
			t.Errorf("order %s: ours but no intent state", id)
		}
		if ev.Kind == "" || ev.ID == "" {
			t.Errorf("order %s: event without kind or id: %+v", id, ev)
		}
	}
	for id, o := range truth {
		ev, ok := last[id]
		switch {
		case !ok:
			if o.State == broker.StateOpen && o.FilledAssetQuantity.IsZero() && o.UpdatedAt.Before(watchStart) {
				continue // before the watch
			}
			if missed++; missed <= 5 {
				t.Logf("missed order %s: %s filled %s", id, o.State, o.FilledAssetQuantity)
			}
		case ev.Order.State != o.State || !ev.Order.FilledAssetQuantity.Equal(o.FilledAssetQuantity):
			if missed++; missed <= 5 {
				t.Logf("order %s: last event %s %s filled %s, venue %s filled %s", id, ev.Kind, ev.Order.State, ev.Order.FilledAssetQuantity, o.State, o.FilledAssetQuantity)
			}
		case sums && !sum[id].Equal(o.FilledAssetQuantity):
			t.Errorf("order %s: fills add up to %s, cumulative %s", id, sum[id], o.FilledAssetQuantity)
		}
	}
	return missed, repeated
}

// watchRun is one simulated run: orders placed over steps seconds, the
// list lagging by lag and dropping next links, GET pages failing, and
// optionally the watch stopped at restartAt (killed, when kill is set)
// and started again on a new Client with the same store.
type watchRun struct {
	orders, perStep int
	lag             time.Duration
	restartAt       int // step; 0: none
	kill            bool
	overlap         time.Duration // zero: lag + 5 s
}

// do runs it and returns the orders whose final state or cumulative fill
// the events missed, and the changes they repeated.
func (run watchRun) do(t *testing.T) (missed, repeated int) {
	ctx := context.Background()
	w := newWatchWorld(t, venue.Config{Seed: 7, PageSize: 50, LedgerLimit: 1000,
		Faults: venue.FaultPlan{Hostile: &venue.Hostile{ListLag: run.lag, DropNext: 0.05}}})
	tr := &trader{w: w, ours: w.client(w.store), external: w.client(nil), rng: rand.New(rand.NewPCG(1, 2)), ext: map[string]bool{}}
	cfg := broker.WatchConfig{PollInterval: 5 * time.Second, Overlap: cmp.Or(run.overlap, run.lag+5*time.Second)}
	var before, after recorder
	stop := watch(w.client(w.store), cfg, &before)
	steps := run.orders / run.perStep
	for step := 1; step <= steps+int((cfg.Overlap+3*cfg.PollInterval)/time.Second); step++ {
		switch {
		case step < steps:
			tr.step(ctx, run.perStep)
		case step == steps:
			// The last orders, then every open order canceled, so that
			// nothing changes after the watch's last poll.
			tr.step(ctx, run.perStep)
			tr.cancelAll(ctx)
		}
		switch {
		case step%7 == 0:
			if err := w.srv.Inject(venue.Fault{Kind: "respond", Method: http.MethodGet, Path: "/api/v2/crypto/trading/orders/", Status: 503, Body: "unavailable"}); err != nil {
				t.Fatal(err)
			}
		case step%13 == 0:
			if err := w.srv.Inject(venue.Fault{Kind: "respond", Method: http.MethodGet, Path: "/api/v2/crypto/trading/orders/", Status: 429,
				Body: `{"type":"client_error","errors":[{"detail":"Request was throttled.","attr":null}]}`}); err != nil {
				t.Fatal(err)
			}
		case step%11 == 0:
			if err := w.srv.Inject(venue.Fault{Kind: "lose_response", Method: http.MethodGet, Path: "/api/v2/crypto/trading/orders/"}); err != nil {
				t.Fatal(err)
			}
		}
		if run.kill && step == run.restartAt-8 {
			w.store.freeze(true) // the last saves before the kill are lost
		}
		if step == run.restartAt {
			stop()
			w.store.freeze(false)
			stop = watch(w.client(w.store), cfg, &after)
		}
		w.clk.Advance(time.Second)
		if err := w.clk.BlockUntilContext(ctx, 1); err != nil {
			t.Fatal(err)
		}
	}
	stop()
	truth := w.truth(ctx)
	if len(truth) < run.orders {
		t.Fatalf("the venue holds %d orders, want %d", len(truth), run.orders)
	}
	evBefore, errsBefore := before.snapshot()
	evAfter, errsAfter := after.snapshot()
	events := append(evBefore, evAfter...)
	var states = map[broker.EventKind]int{}
	for _, ev := range events {
		states[ev.Kind]++
	}
	missed, repeated = checkEvents(t, events, truth, tr.ext, !run.kill)
	t.Logf("%d orders, %d events %v, %d poll errors, %d cursor saves; %d missed, %d repeated",
		len(truth), len(events), states, len(errsBefore)+len(errsAfter), w.store.puts, missed, repeated)
	for _, k := range []broker.EventKind{broker.EventCreated, broker.EventPartiallyFilled, broker.EventFilled, broker.EventCanceled} {
		if states[k] == 0 {
			t.Errorf("no %s event: the run does not exercise it", k)
		}
	}
	return missed, repeated
}

// TestWatchMissesNothing runs 10,000 orders (1,000 with -short) with
// partial fills and cancels past a watch, the list lagging 5 s and
// dropping next links, list pages failing (503, 429, connections
// dropped): the events miss no order's
// final state or cumulative fill and repeat no change.
func TestWatchMissesNothing(t *testing.T) {
	n := 10000
	if testing.Short() {
		n = 1000
	}
	if missed, repeated := (watchRun{orders: n, perStep: 20, lag: 5 * time.Second}).do(t); missed != 0 || repeated != 0 {
		t.Errorf("%d orders missed, %d changes repeated; want 0 and 0", missed, repeated)
	}
}

// TestWatchOverlapShorterThanLagMisses shows what the overlap is for: read
// with an overlap shorter than the list's lag, the same run misses orders.
func TestWatchOverlapShorterThanLagMisses(t *testing.T) {
	if missed, _ := (watchRun{orders: 1000, perStep: 20, lag: 5 * time.Second, overlap: time.Second}).do(t); missed == 0 {
		t.Errorf("an overlap of 1 s under a lag of 5 s missed nothing: the run does not exercise the lag")
	}
}

// TestWatchRestartRepeatsNothing stops the watch cleanly mid-run and
// starts another on a new Client with the same store: together they miss
// nothing and repeat nothing.
func TestWatchRestartRepeatsNothing(t *testing.T) {
	if missed, repeated := (watchRun{orders: 1000, perStep: 10, lag: 5 * time.Second, restartAt: 40}).do(t); missed != 0 || repeated != 0 {
		t.Errorf("%d orders missed, %d changes repeated; want 0 and 0", missed, repeated)
	}
}

// TestWatchKilledMissesNothing loses the cursor's last saves before the
// watch stops, as a kill does: the new watch misses nothing, and repeats
// the changes since the last save with the same event ids.
func TestWatchKilledMissesNothing(t *testing.T) {
	missed, repeated := (watchRun{orders: 1000, perStep: 10, lag: 5 * time.Second, restartAt: 43, kill: true}).do(t)
	if missed != 0 {
		t.Errorf("%d orders missed; want 0", missed)
	}
	if repeated == 0 {
		t.Errorf("no change repeated: the kill lost no save, the test proves nothing")
	}
}

// restingOrder places a limit buy far below the market: it never fills.
func restingOrder(t *testing.T, c *broker.Client, key string) *broker.Order {
	t.Helper()
	o, err := c.Place(context.Background(), key, broker.OrderRequest{Symbol: "BTC-USD", Side: broker.SideBuy, Type: broker.TypeLimit,
		AssetQuantity: decimal.RequireFromString("0.001"), LimitPrice: decimal.RequireFromString("1000")})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// TestWaitFinal waits for a cancel to settle on the simulated clock, in a
// few reads, and gives up at ctx's deadline on an order that stays open.
func TestWaitFinal(t *testing.T) {
	w := newWatchWorld(t, venue.Config{Seed: 3})
	c := w.client(w.store)
	w.clk.SkipWaits(1)
	ctx := context.Background()

	o := restingOrder(t, c, "cancel-me")
	if _, err := c.CancelOrder(ctx, o.ID); err != nil {
		t.Fatal(err)
	}
	from := w.srv.Ledger().Counts().Total
	start := w.clk.Now()
	got, err := c.WaitFinal(ctx, o.ID)
	if err != nil {
		t.Fatal(err)
	}
	reads := w.srv.Ledger().Counts().Total - from
	if got.State != broker.StateCanceled || reads > 3 || w.clk.Since(start) > 3*time.Second {
		t.Errorf("WaitFinal: %s after %d reads and %v; want canceled within 3 reads and 3 s", got.State, reads, w.clk.Since(start))
	}

	open := restingOrder(t, c, "stays-open")
	dctx, cancel := venue.WithTimeout(ctx, w.clk, time.Minute)
	defer cancel()
	start = w.clk.Now()
	got, err = c.WaitFinal(dctx, open.ID)
	if !errors.Is(err, context.DeadlineExceeded) || got == nil || got.State != broker.StateOpen {
		t.Fatalf("WaitFinal past its deadline: %v, %v; want the open order and context.DeadlineExceeded", got, err)
	}
	// The skipping clock jumps to each of WaitFinal's waits, passing the
	// deadline within the last.
	if took := w.clk.Since(start); took < time.Minute || took > time.Minute+10*time.Second {
		t.Errorf("WaitFinal gave up after %v; want the deadline, 1m0s, within one wait", took)
	}

	if _, err := c.WaitFinal(ctx, "6a8738ba-836d-4afd-abd8-483d7e4d01c9"); !errors.Is(err, broker.ErrNoSuchOrder) {
		t.Errorf("WaitFinal of an unknown id: %v; want ErrNoSuchOrder", err)
	}
}

// firstPoll runs one poll of a watch with cfg on c and returns its events.
func (w *watchWorld) firstPoll(c *broker.Client, cfg broker.WatchConfig) []broker.Event {
	w.t.Helper()
	var r recorder
	stop := watch(c, cfg, &r)
	if err := w.clk.BlockUntilContext(context.Background(), 1); err != nil {
		w.t.Fatal(err)
	}
	stop()
	events, errs := r.snapshot()
	if len(errs) > 0 {
		w.t.Fatalf("watch: %v", errs)
	}
	return events
}

// TestWatchReportsUnsettledIntents: an order whose intent the store holds
// as unknown (its create's answer was lost) is reported with that state,
// and is not external.
func TestWatchReportsUnsettledIntents(t *testing.T) {
	w := newWatchWorld(t, venue.Config{Seed: 5})
	ctx := context.Background()
	elsewhere := w.client(nil) // the create lands, but w.store never learns of it
	o := restingOrder(t, elsewhere, "lost-answer")
	if _, _, err := w.store.Create(ctx, idempotency.Record{ClientOrderID: o.ClientOrderID, AccountNumber: w.srv.AccountNumber,
		Symbol: o.Symbol, State: idempotency.Unknown, Holder: "gone", CreatedAt: w.clk.Now(), UpdatedAt: w.clk.Now()}); err != nil {
		t.Fatal(err)
	}
	stranger := restingOrder(t, w.client(nil), "by-hand")
	events := w.firstPoll(w.client(w.store), broker.WatchConfig{})
	got := map[string]broker.Event{}
	for _, ev := range events {
		got[ev.Order.ID] = ev
	}
	if ev := got[o.ID]; ev.Kind != broker.EventCreated || ev.External || ev.Intent != idempotency.Unknown {
		t.Errorf("the unsettled intent's order: %+v; want created, intent unknown, not external", ev)
	}
	if ev := got[stranger.ID]; ev.Kind != broker.EventCreated || !ev.External || ev.Intent != "" {
		t.Errorf("the order placed elsewhere: %+v; want created, external", ev)
	}
}

// TestWatchSince: a first watch reads from its start less the overlap;
// Since reaches further back, and the same changes get the same ids.
func TestWatchSince(t *testing.T) {
	w := newWatchWorld(t, venue.Config{Seed: 9})
	c := w.client(w.store)
	placed := w.clk.Now()
	o := restingOrder(t, c, "an-hour-ago")
	w.clk.Advance(time.Hour)
	if evs := w.firstPoll(c, broker.WatchConfig{Name: "fresh"}); len(evs) != 0 {
		t.Errorf("a fresh watch yielded %d events of an hour ago; want none", len(evs))
	}
	evs := w.firstPoll(c, broker.WatchConfig{Name: "since", Since: placed.Add(-time.Minute)})
	if len(evs) != 1 || evs[0].Order.ID != o.ID || evs[0].Kind != broker.EventCreated {
		t.Fatalf("a watch since before the order: %+v; want its created event", evs)
	}
	again := w.firstPoll(c, broker.WatchConfig{Name: "since again", Since: placed})
	if len(again) != 1 || again[0].ID != evs[0].ID {
		t.Errorf("the same change seen by another watch: %+v; want the same event id %s", again, evs[0].ID)
	}
	if more := w.firstPoll(c, broker.WatchConfig{Name: "since"}); len(more) != 0 {
		t.Errorf("the watch restarted after a clean stop yielded %+v; want nothing", more)
	}
	if replay := w.firstPoll(c, broker.WatchConfig{Name: "since", Since: placed}); len(replay) != 1 || replay[0].ID != evs[0].ID {
		t.Errorf("the watch restarted with Since before its cursor yielded %+v; want the order again, event id %s", replay, evs[0].ID)
	}
}

// TestWatchCatchesUpAfterLongStop: a watch started again after hours
// reads them an hour a poll, at once, and misses nothing.
func TestWatchCatchesUpAfterLongStop(t *testing.T) {
	w := newWatchWorld(t, venue.Config{Seed: 13})
	c := w.client(w.store)
	ctx := context.Background()
	if evs := w.firstPoll(c, broker.WatchConfig{}); len(evs) != 0 {
		t.Fatalf("events before any order: %+v", evs)
	}
	var placed []string
	for i := range 30 { // 5 hours
		o, err := c.Place(ctx, fmt.Sprintf("m%d", i), broker.OrderRequest{Symbol: "BTC-USD", Side: broker.SideBuy,
			Type: broker.TypeMarket, AssetQuantity: decimal.RequireFromString("0.001")})
		if err != nil {
			t.Fatal(err)
		}
		placed = append(placed, o.ID)
		w.clk.Advance(10 * time.Minute)
	}
	from := len(w.srv.Ledger().Requests())
	events := w.firstPoll(w.client(w.store), broker.WatchConfig{})
	reads := len(w.srv.Ledger().Requests()) - from
	got := map[string]bool{}
	for _, ev := range events {
		if ev.Kind == broker.EventFilled {
			got[ev.Order.ID] = true
		}
	}
	for _, id := range placed {
		if !got[id] {
			t.Errorf("order %s: no filled event", id)
		}
	}
	if len(events) != len(placed) || reads < 5 {
		t.Errorf("%d events in %d reads; want %d in one read an hour", len(events), reads, len(placed))
	}
}
