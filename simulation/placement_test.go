package simulation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/tradewire/tradewire/broker"
	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/transport"
	"github.com/tradewire/tradewire/venue"
)

// PlacementMixes returns the fault mixes the placement scenarios run
// under, each with CommitFaults scripting answers lost after the commit:
// "faults" has 429s and 503s before the commit, answers lost after it and
// latency over the attempt timeout; "lost-heavy" loses many answers.
func placementMixes() []NamedMix {
	return []NamedMix{
		{Name: "faults", Mix: venue.Mix{Rate429: 0.05, Rate5xx: 0.05, RateLost: 0.05, RateLatency: 0.03, Latency: 12 * time.Second}},
		{Name: "lost-heavy", Mix: venue.Mix{RateLost: 0.15}},
	}
}

// duplicateModes are the venue's duplicate modes the placement scenarios
// run under: only the one that creates a second order for a reused
// client_order_id, so that "one order per key" is the Placer's doing, not
// the venue's kindness (issue 9). The kinder modes are covered by the
// negative controls and by package orders' tests.
var duplicateModes = []venue.DuplicateMode{venue.CreateSecond}

// placementScenario is a placement scenario of the matrix.
func placementScenario(seed int64, m NamedMix, dup venue.DuplicateMode, d time.Duration, restartEvery time.Duration) Scenario {
	return Scenario{Name: "place/" + m.Name, Seed: seed, Mix: m.Mix, Duration: d,
		Placement: &Placement{Duplicate: dup, CommitFaults: 0.2, RestartEvery: restartEvery}}
}

// TestPlacementSlice runs the placement scenarios for three simulated
// minutes, a restart every minute and a half, on the venue that creates a
// second order for a reused client_order_id.
func TestPlacementSlice(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var interrupted, resent, recovered, reused int
	t.Run("runs", func(t *testing.T) {
		for _, seed := range []int64{1, 2} {
			for _, m := range placementMixes() {
				for _, dup := range duplicateModes {
					t.Run(fmt.Sprintf("%s/%s/seed%d", m.Name, dup, seed), func(t *testing.T) {
						t.Parallel()
						r := run(t, placementScenario(seed, m, dup, 3*time.Minute, 90*time.Second))
						if err := r.Err(); err != nil {
							t.Error(err)
						}
						f := r.Placement.Figures
						if f.Places < 20 || f.Acknowledged == 0 || f.Restarts < 2 {
							t.Errorf("placement too thin: %s", f)
						}
						mu.Lock()
						defer mu.Unlock()
						interrupted += f.Interrupted
						reused += f.Reused
						resent += f.Resends
						recovered += f.Recovered
						t.Log(f)
					})
				}
			}
		}
	})
	// Across the slice, restarts cut Places off, Recover settled intents,
	// and Placers sent creates again: the paths the invariants guard ran.
	if interrupted == 0 || resent == 0 || recovered == 0 || reused == 0 {
		t.Errorf("the slice never exercised a path: %d interrupted, %d resent, %d recovered, %d reused", interrupted, resent, recovered, reused)
	}
}

// TestPlacementWithBoltStore runs a placement scenario on the bbolt store
// of idempotency.Open, which every restart closes and opens again.
func TestPlacementWithBoltStore(t *testing.T) {
	t.Parallel()
	sc := placementScenario(3, placementMixes()[0], venue.CreateSecond, 3*time.Minute, 60*time.Second)
	sc.Placement.StorePath = filepath.Join(t.TempDir(), "intents.db")
	r := run(t, sc)
	if err := r.Err(); err != nil {
		t.Error(err)
	}
	if f := r.Placement.Figures; f.Restarts < 2 || f.Acknowledged == 0 {
		t.Errorf("placement too thin: %s", f)
	}
	t.Logf("%s (%v wall)", r.Placement.Figures, r.Figures.Wall)
}

func TestPlacementSameSeedSameLedger(t *testing.T) {
	t.Parallel()
	sc := placementScenario(7, placementMixes()[0], venue.CreateSecond, 2*time.Minute, time.Minute)
	a, b := run(t, sc), run(t, sc)
	if a.Fingerprint() != b.Fingerprint() {
		t.Errorf("same scenario, different ledgers: %s vs %s", a.Fingerprint(), b.Fingerprint())
	}
}

// unsafePlacer is a deliberately broken placer for the negative controls.
type unsafePlacer struct {
	tc      *transport.Client
	store   idempotency.Store
	account string
	// resendAtOnce sends the create again at once, with the same
	// client_order_id, when its outcome is unknown (a 429, a 5xx, a lost
	// answer): no lookup, no wait for the signature to expire.
	resendAtOnce bool
	// recordAfter records the intent only once the venue acknowledged it.
	recordAfter bool
	// lazyRecover's Recover settles nothing.
	lazyRecover bool
	safe        *broker.Client
}

func newUnsafePlacer(u unsafePlacer) func(*transport.Client, idempotency.Store, string) (placer, error) {
	return func(tc *transport.Client, store idempotency.Store, account string) (placer, error) {
		u.tc, u.store, u.account = tc, store, account
		var err error
		u.safe, err = broker.NewFromTransport(tc, broker.Config{AccountNumber: account, IntentStore: store})
		return &u, err
	}
}

func (u *unsafePlacer) ClientOrderID(key string) string {
	return idempotency.ClientOrderID(u.account, "", key)
}

func (u *unsafePlacer) Recover(ctx context.Context) (broker.RecoverReport, error) {
	if u.lazyRecover {
		return broker.RecoverReport{}, nil
	}
	rep, err := u.safe.Recover(ctx)
	if rep == nil {
		return broker.RecoverReport{}, err
	}
	return *rep, err
}

func (u *unsafePlacer) Place(ctx context.Context, key string, req broker.OrderRequest) (*broker.Order, error) {
	if u.lazyRecover {
		return u.safe.Place(ctx, key, req)
	}
	cid := u.ClientOrderID(key)
	body, err := unsafeBody(req, cid)
	if err != nil {
		return nil, err
	}
	now := u.tc.Config().Clock.Now()
	rec := idempotency.Record{ClientOrderID: cid, Key: key, AccountNumber: u.account, Symbol: req.Symbol,
		Fingerprint: "unsafe", State: idempotency.Pending, Body: body,
		Target: "/api/v2/crypto/trading/orders/?" + url.Values{"account_number": {u.account}}.Encode(), CreatedAt: now, UpdatedAt: now}
	if !u.recordAfter {
		old, created, err := u.store.Create(ctx, rec)
		if err != nil {
			return nil, err
		}
		if !created && old.State == idempotency.Acknowledged {
			return orderOf(old.Order)
		}
		rec = old
	}
	for sends := 1; ; sends++ {
		resp, err := u.tc.Do(ctx, "POST", rec.Target, body)
		rec.Sends++
		rec.LastSignedAt = u.tc.Config().Clock.Now()
		if err == nil {
			o, err := orderOf(resp.Body)
			if err != nil {
				return nil, err
			}
			rec.State, rec.OrderID, rec.Order = idempotency.Acknowledged, o.ID, resp.Body
			if u.recordAfter {
				_, _, err = u.store.Create(ctx, rec)
			} else {
				err = u.store.Update(ctx, rec)
			}
			return o, err
		}
		if u.recordAfter {
			return nil, err
		}
		if !errors.Is(err, transport.ErrUnknownOutcome) || !u.resendAtOnce || sends == 3 {
			rec.State = idempotency.NotPlaced
			if !errors.Is(err, transport.ErrUnknownOutcome) {
				rec.State = idempotency.Rejected
			}
			u.store.Update(ctx, rec)
			return nil, err
		}
	}
}

// orderOf reads what the placement scenario uses of an order in the
// venue's shape (broker's read types decode only the venue's answers
// inside broker).
func orderOf(body []byte) (*broker.Order, error) {
	var o struct {
		ID    string            `json:"id"`
		Type  broker.OrderType  `json:"type"`
		State broker.OrderState `json:"state"`
	}
	if err := json.Unmarshal(body, &o); err != nil {
		return nil, err
	}
	return &broker.Order{ID: o.ID, Type: o.Type, State: o.State}, nil
}

// TestPlacementNegativeControls feeds deliberately unsafe placers to the
// placement scenario and checks that the invariant meant to catch each
// one does.
func TestPlacementNegativeControls(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		placer unsafePlacer
		dup    venue.DuplicateMode
		want   []string
	}{
		{"resends a create at once on 503 (CreateSecond)", unsafePlacer{resendAtOnce: true}, venue.CreateSecond,
			[]string{"one-order-per-key", "create-resent-after-expiry"}},
		{"resends a create at once on 503 (ReturnOriginal)", unsafePlacer{resendAtOnce: true}, venue.ReturnOriginal,
			[]string{"create-resent-after-expiry"}},
		{"records the intent after the answer", unsafePlacer{recordAfter: true}, venue.ReturnOriginal,
			[]string{"no-intent-lost"}},
		{"a Recover that settles nothing", unsafePlacer{lazyRecover: true}, venue.ReturnOriginal,
			[]string{"no-unknown-after-recover"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sc := placementScenario(5, NamedMix{Name: "5xx", Mix: venue.Mix{Rate5xx: 0.1, RateLost: 0.1}}, tt.dup, 3*time.Minute, 50*time.Second)
			sc.Placement.CommitFaults = 0.3
			sc.Placement.newPlacer = newUnsafePlacer(tt.placer)
			if tt.placer.recordAfter {
				sc.Placement.Reuse = -1 // a key placed again would find its order
			}
			if tt.placer.lazyRecover {
				// Leave intents for Recover: no key is placed again, and
				// Places are often cut off while they wait.
				sc.Placement.Reuse, sc.Placement.Crash = -1, 0.5
			}
			r := run(t, sc)
			var got []string
			for _, v := range r.Violations {
				got = append(got, v.Invariant)
			}
			for _, w := range tt.want {
				if !slices.Contains(got, w) {
					t.Errorf("violations %v: want %s among them", got, w)
				}
			}
			t.Logf("%s; caught: %v", r.Placement.Figures, r.Err())
		})
	}
}

// TestPlacementInvariantsOnForgedRuns checks each placement rule on a
// hand-made run, one row per rule.
func TestPlacementInvariantsOnForgedRuns(t *testing.T) {
	t.Parallel()
	t0 := DefaultStart
	cid := idempotency.ClientOrderID("ACCT1", "sim", "k1")
	rnd := "0b6a1b59-4d43-4f0e-9d43-6f1f3c8c2d10" // a v4 id: not derived from a key
	order := func(c, id string) venue.OrderRecord { return venue.OrderRecord{ID: id, ClientOrderID: c} }
	rec := func(st idempotency.State, orderID string) idempotency.Record {
		return idempotency.Record{ClientOrderID: cid, Key: "k1", State: st, OrderID: orderID, LastSignedAt: t0}
	}
	create := func(op int, at time.Duration) Event {
		return Event{Request: venue.Request{Time: t0.Add(at), Method: "POST", Status: 201,
			Timestamp: strconv.FormatInt(t0.Add(at).Unix(), 10)}, Op: op, ClientOrderID: cid}
	}
	base := func() *PlacementRun {
		return &PlacementRun{Keys: []KeyRecord{{Key: "k1", ClientOrderID: cid, Places: 1}},
			Records: []idempotency.Record{rec(idempotency.Acknowledged, "o1")}, LastSend: t0, FinalRecover: t0.Add(41 * time.Second),
			Ops: []PlaceOp{{ID: 1, Op: "place", Key: "k1", ClientOrderID: cid}}}
	}
	tests := []struct {
		name      string
		invariant string
		orders    []venue.OrderRecord
		events    []Event
		edit      func(*PlacementRun)
		ok        bool
	}{
		{"one order per key", "one-order-per-key", []venue.OrderRecord{order(cid, "o1")}, nil, nil, true},
		{"two orders for one key", "one-order-per-key", []venue.OrderRecord{order(cid, "o1"), order(cid, "o2")}, nil, nil, false},
		{"two orders for one random id", "one-order-per-key", []venue.OrderRecord{order(rnd, "o1"), order(rnd, "o2")}, nil, nil, false},
		{"acknowledged with its order", "no-intent-lost", []venue.OrderRecord{order(cid, "o1")}, nil, nil, true},
		{"acknowledged, no order", "no-intent-lost", nil, nil, nil, false},
		{"acknowledged as another order", "no-intent-lost", []venue.OrderRecord{order(cid, "o2")}, nil, nil, false},
		{"not placed, no order", "no-intent-lost", nil, nil,
			func(p *PlacementRun) { p.Records = []idempotency.Record{rec(idempotency.NotPlaced, "")} }, true},
		{"not placed, an order", "no-intent-lost", []venue.OrderRecord{order(cid, "o1")}, nil,
			func(p *PlacementRun) { p.Records = []idempotency.Record{rec(idempotency.NotPlaced, "")} }, false},
		{"attempted key without intent", "no-intent-lost", nil, nil, func(p *PlacementRun) { p.Records = nil }, false},
		{"derived order without intent", "no-intent-lost", []venue.OrderRecord{order(cid, "o1")}, nil,
			func(p *PlacementRun) { p.Records, p.Keys = nil, nil }, false},
		{"random order without intent", "no-intent-lost", []venue.OrderRecord{order(cid, "o1"), order(rnd, "o9")}, nil, nil, true},
		{"settled 41 s after the last send", "no-unknown-after-recover", nil, nil, nil, true},
		{"final Recover 30 s after the last send", "no-unknown-after-recover", nil, nil,
			func(p *PlacementRun) { p.FinalRecover = t0.Add(30 * time.Second) }, false},
		{"no final Recover", "no-unknown-after-recover", nil, nil, func(p *PlacementRun) { p.FinalRecover = time.Time{} }, false},
		{"unknown left", "no-unknown-after-recover", nil, nil,
			func(p *PlacementRun) { p.Records = []idempotency.Record{rec(idempotency.Unknown, "")} }, false},
		{"pending left", "no-unknown-after-recover", nil, nil,
			func(p *PlacementRun) { p.Records = []idempotency.Record{rec(idempotency.Pending, "")} }, false},
		{"unresolved by the final Recover", "no-unknown-after-recover", nil, nil,
			func(p *PlacementRun) { p.Final.Unresolved = []idempotency.Record{rec(idempotency.Unknown, "")} }, false},
		{"resent 40 s later", "create-resent-after-expiry", nil, []Event{create(1, 0), create(1, 40*time.Second)}, nil, true},
		{"resent 31 s later", "create-resent-after-expiry", nil, []Event{create(1, 0), create(1, 31*time.Second)}, nil, false},
		{"resent by another op 1 s later", "create-resent-after-expiry", nil, []Event{create(1, 0), create(2, time.Second)}, nil, false},
		{"replay of an acknowledged key, silent", "replay-sends-nothing", nil, []Event{create(1, 0)},
			func(p *PlacementRun) {
				p.Ops = append(p.Ops, PlaceOp{ID: 2, Op: "place", Key: "k1", Before: idempotency.Acknowledged})
			}, true},
		{"replay of an acknowledged key sends", "replay-sends-nothing", nil, []Event{create(1, 0), create(2, 50*time.Second)},
			func(p *PlacementRun) {
				p.Ops = append(p.Ops, PlaceOp{ID: 2, Op: "place", Key: "k1", Before: idempotency.Acknowledged})
			}, false},
	}
	checks := map[string]func(*Run) error{}
	for _, inv := range PlacementInvariants() {
		checks[inv.Name] = inv.Check
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pr := base()
			if tt.edit != nil {
				tt.edit(pr)
			}
			r := &Run{Scenario: Scenario{Start: t0}, Orders: tt.orders, Events: tt.events, Placement: pr}
			err := checks[tt.invariant](r)
			if (err == nil) != tt.ok {
				t.Errorf("%s: err = %v, want ok=%v", tt.invariant, err, tt.ok)
			}
		})
	}
}

// unsafeBody is the create's JSON for the requests newRequest makes
// (limit and market, sized by asset quantity): the unsafe placers send it
// themselves, around broker.Client.
func unsafeBody(req broker.OrderRequest, cid string) ([]byte, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	type config struct {
		AssetQuantity string `json:"asset_quantity"`
		LimitPrice    string `json:"limit_price,omitempty"`
		TimeInForce   string `json:"time_in_force,omitempty"`
	}
	w := struct {
		ClientOrderID string  `json:"client_order_id"`
		Side          string  `json:"side"`
		Type          string  `json:"type"`
		Symbol        string  `json:"symbol"`
		Market        *config `json:"market_order_config,omitempty"`
		Limit         *config `json:"limit_order_config,omitempty"`
	}{ClientOrderID: cid, Side: string(req.Side), Type: string(req.Type), Symbol: req.Symbol}
	switch req.Type {
	case broker.TypeMarket:
		w.Market = &config{AssetQuantity: req.AssetQuantity.String()}
	case broker.TypeLimit:
		w.Limit = &config{AssetQuantity: req.AssetQuantity.String(), LimitPrice: req.LimitPrice.String(), TimeInForce: "gtc"}
	default:
		return nil, fmt.Errorf("unsafeBody: %s orders are not made by newRequest", req.Type)
	}
	return json.Marshal(w)
}
