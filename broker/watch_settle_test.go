package broker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/tradewire/tradewire/broker"
	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/idempotency/redisstore"
	"github.com/tradewire/tradewire/internal/redistest"
	"github.com/tradewire/tradewire/signing"
	"github.com/tradewire/tradewire/venue"
)

// crashedIntent places key from a store of its own and copies its intent
// into w.store (or into, if given) as a process killed after the send
// leaves it: unknown, the order unseen. It returns the order the venue
// holds.
func (w *watchWorld) crashedIntent(key string, into ...idempotency.Store) (*broker.Order, idempotency.Record) {
	w.t.Helper()
	ctx := context.Background()
	es := newMetaStore()
	o := restingOrder(w.t.(*testing.T), w.client(es), key)
	rec, err := es.Get(ctx, o.ClientOrderID)
	if err != nil {
		w.t.Fatal(err)
	}
	rec.State, rec.OrderID, rec.Order, rec.Holder, rec.Reason = idempotency.Unknown, "", nil, "", ""
	var store idempotency.Store = w.store
	if len(into) > 0 {
		store = into[0]
	}
	fresh, _, err := store.Create(ctx, rec)
	if err != nil {
		w.t.Fatal(err)
	}
	// The Place that left it unknown released its claim as it returned.
	if err := store.Release(ctx, fresh.ClientOrderID, fresh.Holder); err != nil {
		w.t.Fatal(err)
	}
	return o, rec
}

// settledEvents returns the EventSettled events by client_order_id,
// failing on a repeat.
func settledEvents(t *testing.T, events []broker.Event) map[string]broker.Event {
	t.Helper()
	out := map[string]broker.Event{}
	for _, ev := range events {
		if ev.Kind != broker.EventSettled {
			continue
		}
		if _, ok := out[ev.Order.ClientOrderID]; ok {
			t.Errorf("intent %s settled twice: %+v", ev.Order.ClientOrderID, ev)
		}
		out[ev.Order.ClientOrderID] = ev
	}
	return out
}

// TestWatchSettlesIntentWhenItsOrderShows: an intent left unknown by a
// crash after its create landed is settled acknowledged, with its order's
// id, by the watch that sees the order, and reported.
func TestWatchSettlesIntentWhenItsOrderShows(t *testing.T) {
	w := newWatchWorld(t, venue.Config{Seed: 21})
	ctx := context.Background()
	o, _ := w.crashedIntent("crashed")
	events := w.firstPoll(w.client(w.store), broker.WatchConfig{})
	rec, err := w.store.Get(ctx, o.ClientOrderID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.State != idempotency.Acknowledged || rec.OrderID != o.ID {
		t.Errorf("the intent after the watch: %s, order %q; want acknowledged, order %s", rec.State, rec.OrderID, o.ID)
	}
	ev, ok := settledEvents(t, events)[o.ClientOrderID]
	if !ok || ev.Intent != idempotency.Acknowledged || ev.Order.ID != o.ID || ev.ID == "" {
		t.Errorf("the settled event: %+v (found %v); want intent acknowledged, order %s", ev, ok, o.ID)
	}
	for _, ev := range events {
		if ev.Order.ID == o.ID && ev.Kind == broker.EventCreated && (ev.External || ev.Intent != idempotency.Unknown) {
			t.Errorf("the order's created event: %+v; want intent unknown, not external", ev)
		}
	}
}

// TestWatchSettlesNotPlacedOnlyAfterExpiry: an intent whose create never
// reached the venue stays unknown while a signature it was sent with may
// still land, and is settled not placed after, once, by the watch.
func TestWatchSettlesNotPlacedOnlyAfterExpiry(t *testing.T) {
	w := newWatchWorld(t, venue.Config{Seed: 22})
	ctx := context.Background()
	_, tmpl := w.crashedIntent("template")
	lost := tmpl
	lost.Key = "lost-create"
	lost.ClientOrderID = idempotency.ClientOrderID(tmpl.AccountNumber, tmpl.Namespace, lost.Key)
	lost.FirstSentAt, lost.LastSignedAt = w.clk.Now(), w.clk.Now()
	if _, _, err := w.store.Create(ctx, lost); err != nil {
		t.Fatal(err)
	}
	expiry := lost.LastSignedAt.Add(signing.ValidFor)
	var r recorder
	stop := watch(w.client(w.store), broker.WatchConfig{PollInterval: 5 * time.Second}, &r)
	defer stop()
	var settledAt, otherSeenAt time.Time
	var other *broker.Order // placed elsewhere meanwhile: the watch goes on while the intent waits
	for i := range 60 {
		if err := w.clk.BlockUntilContext(ctx, 1); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			other = restingOrder(t, w.client(nil), "meanwhile")
		}
		if events, _ := r.snapshot(); otherSeenAt.IsZero() && other != nil {
			for _, ev := range events {
				if ev.Order.ID == other.ID {
					otherSeenAt = w.clk.Now()
				}
			}
		}
		rec, err := w.store.Get(ctx, lost.ClientOrderID)
		if err != nil {
			t.Fatal(err)
		}
		if rec.State != idempotency.Unknown {
			if rec.State != idempotency.NotPlaced {
				t.Fatalf("the lost create's intent: %s; want not_placed", rec.State)
			}
			settledAt = w.clk.Now()
			break
		}
		w.clk.Advance(5 * time.Second)
	}
	stop()
	switch {
	case settledAt.IsZero():
		t.Fatal("the lost create's intent was never settled")
	case !settledAt.After(expiry):
		t.Errorf("settled not placed at %v, before its signature expired at %v", settledAt, expiry)
	case settledAt.Sub(expiry) > 2*time.Minute:
		t.Errorf("settled not placed %v after its signature expired; want within two minutes", settledAt.Sub(expiry))
	}
	if otherSeenAt.IsZero() || !otherSeenAt.Before(expiry) {
		t.Errorf("an order placed meanwhile was reported at %v; want before the intent's signature expired (%v): the watch does not wait on it", otherSeenAt, expiry)
	}
	events, errs := r.snapshot()
	if len(errs) > 0 {
		t.Errorf("watch: %v", errs)
	}
	if ev, ok := settledEvents(t, events)[lost.ClientOrderID]; !ok || ev.Intent != idempotency.NotPlaced || ev.Order.ID != "" {
		t.Errorf("the settled event: %+v (found %v); want intent not_placed, no order", ev, ok)
	}
}

// TestWatchLeavesIntentBeingPlaced: a Place whose create landed and whose
// answer is still on its way holds its intent; the watch that lists the
// order meanwhile leaves the intent to it, and the Place ends as usual.
//
// In one process the Placer's lock shows the intent held; in a fleet
// (two processes on one Redis) the store's claim does.
func TestWatchLeavesIntentBeingPlaced(t *testing.T) {
	t.Run("one process", func(t *testing.T) {
		w := newWatchWorld(t, venue.Config{Seed: 23})
		c := w.client(w.store)
		leavesIntentBeingPlaced(t, w, c, c, w.store)
	})
	t.Run("redis, two processes", func(t *testing.T) {
		url := redistest.URL(t)
		w := newWatchWorld(t, venue.Config{Seed: 23, AccountNumber: redistest.Account(t, url)})
		open := func() idempotency.Store {
			s, err := redisstore.Open(context.Background(), url, w.srv.AccountNumber, redisstore.Config{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}
		store := open()
		leavesIntentBeingPlaced(t, w, w.client(open()), w.client(store), store)
	})
}

// leavesIntentBeingPlaced places through placing while watching through
// watching, whose intent store is store.
func leavesIntentBeingPlaced(t *testing.T, w *watchWorld, placing, watching *broker.Client, store idempotency.Store) {
	ctx := context.Background()
	if err := w.srv.Inject(venue.Fault{Kind: "latency", Method: "POST", Path: "/api/v2/crypto/trading/orders/",
		Delay: 5 * time.Second, AfterCommit: true}); err != nil {
		t.Fatal(err)
	}
	type result struct {
		o   *broker.Order
		err error
	}
	placed := make(chan result, 1)
	go func() {
		o, err := placing.Place(ctx, "busy", broker.OrderRequest{Symbol: "BTC-USD", Side: broker.SideBuy, Type: broker.TypeLimit,
			AssetQuantity: decimal.RequireFromString("0.001"), LimitPrice: decimal.RequireFromString("1000")})
		placed <- result{o, err}
	}()
	wait, cancel := context.WithTimeout(ctx, 20*time.Second) // a real bound, reached only by a watch stuck on the intent
	defer cancel()
	if err := w.clk.BlockUntilContext(wait, 1); err != nil { // the answer's delay
		t.Fatal(err)
	}
	var r recorder
	stop := watch(watching, broker.WatchConfig{}, &r)
	if err := w.clk.BlockUntilContext(wait, 2); err != nil { // and the watch's next poll
		t.Fatalf("the watch did not come back to its timer while Place held the intent: %v", err)
	}
	stop()
	events, errs := r.snapshot()
	if len(errs) > 0 {
		t.Errorf("watch: %v", errs)
	}
	var cid string
	for _, ev := range events {
		if ev.Kind == broker.EventCreated {
			cid = ev.Order.ClientOrderID
			if ev.Intent != idempotency.Pending {
				t.Errorf("the order's created event: intent %q; want pending", ev.Intent)
			}
		}
	}
	if cid == "" {
		t.Fatalf("the watch did not list the order being placed: %+v", events)
	}
	if len(settledEvents(t, events)) != 0 {
		t.Errorf("the watch settled an intent Place holds: %+v", events)
	}
	if rec, err := store.Get(ctx, cid); err != nil || rec.State != idempotency.Pending {
		t.Errorf("the intent while Place holds it: %+v, %v; want pending", rec.State, err)
	}
	w.clk.Advance(5 * time.Second)
	res := <-placed
	if res.err != nil {
		t.Fatalf("Place: %v", res.err)
	}
	if rec, err := store.Get(ctx, cid); err != nil || rec.State != idempotency.Acknowledged || rec.OrderID != res.o.ID {
		t.Errorf("the intent after Place: %+v, %v; want acknowledged, order %s", rec, err, res.o.ID)
	}
}

// TestFleetWatchesSettleOnce: two processes of a fleet, each with its own
// handle on the shared Redis store, watch at once; an intent a crash left
// unknown is settled once, by one of them, and reported once.
func TestFleetWatchesSettleOnce(t *testing.T) {
	url := redistest.URL(t)
	w := newWatchWorld(t, venue.Config{Seed: 24, AccountNumber: redistest.Account(t, url)})
	ctx := context.Background()
	open := func() idempotency.Store {
		s, err := redisstore.Open(ctx, url, w.srv.AccountNumber, redisstore.Config{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	a, b := open(), open()
	var crashed []*broker.Order
	for i := range 5 {
		o, _ := w.crashedIntent(fmt.Sprintf("crashed-%d", i), a)
		crashed = append(crashed, o)
	}
	var ra, rb recorder
	stopA := watch(w.client(a), broker.WatchConfig{Name: "a"}, &ra)
	stopB := watch(w.client(b), broker.WatchConfig{Name: "b"}, &rb)
	if err := w.clk.BlockUntilContext(ctx, 2); err != nil {
		t.Fatal(err)
	}
	stopA()
	stopB()
	evA, errsA := ra.snapshot()
	evB, errsB := rb.snapshot()
	if len(errsA)+len(errsB) > 0 {
		t.Errorf("watch errors: %v %v", errsA, errsB)
	}
	settled := settledEvents(t, append(evA, evB...)) // fails on a repeat
	for _, o := range crashed {
		if ev, ok := settled[o.ClientOrderID]; !ok || ev.Intent != idempotency.Acknowledged || ev.Order.ID != o.ID {
			t.Errorf("intent %s: settled event %+v (found %v); want one, acknowledged, order %s", o.ClientOrderID, ev, ok, o.ID)
		}
		if rec, err := a.Get(ctx, o.ClientOrderID); err != nil || rec.State != idempotency.Acknowledged || rec.OrderID != o.ID {
			t.Errorf("intent %s: %+v, %v; want acknowledged", o.ClientOrderID, rec.State, err)
		}
	}
	t.Logf("settled by a: %d, by b: %d", len(settledEvents(t, evA)), len(settledEvents(t, evB)))
}
