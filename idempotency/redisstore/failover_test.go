package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tradewire/tradewire/broker"
	"github.com/tradewire/tradewire/broker/brokertest"
	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/idempotency/redisstore"
	"github.com/tradewire/tradewire/internal/redistest"
	"github.com/tradewire/tradewire/transport"
	"github.com/tradewire/tradewire/venue"
)

// The answers a Place can give, as the fleet tests tally them.
const (
	ansOrder       = "order"       // the order
	ansInProgress  = "in progress" // another process holds it; nothing sent here
	ansReset       = "store reset" // redisstore.ErrStoreReset; nothing sent
	ansUnavailable = "unavailable" // the store failed; nothing sent
	ansUnknown     = "unknown"     // may have taken effect
	ansNotPlaced   = "not placed"
	ansRejected    = "rejected"
)

// answerOf names what a Place said, most damaging claims first: a
// not-placed or rejected that wraps a store error is still a claim that
// no order exists.
func answerOf(o *broker.Order, err error) string {
	switch {
	case err == nil && o != nil:
		return ansOrder
	case errors.Is(err, broker.ErrNotPlaced):
		return ansNotPlaced
	case errors.Is(err, transport.ErrRejected):
		return ansRejected
	case errors.Is(err, redisstore.ErrStoreReset):
		return ansReset
	case errors.Is(err, idempotency.ErrInProgress):
		return ansInProgress
	case errors.Is(err, transport.ErrUnknownOutcome):
		return ansUnknown
	case errors.Is(err, transport.ErrUnavailable):
		return ansUnavailable
	}
	return "other: " + fmt.Sprint(err)
}

// truthful reports whether a Place's answer is true of a key for which
// the venue holds the order want (empty: none).
func truthful(r placeResult, want string) bool {
	switch r.Answer {
	case ansOrder:
		return want != "" && r.OrderID == want
	case ansInProgress, ansReset, ansUnavailable, ansUnknown:
		return true
	case ansNotPlaced, ansRejected:
		return want == ""
	}
	return false
}

// fleetVenue is the dangerous venue: a reused client_order_id creates a
// second order, so only the client keeps a key to one order.
func fleetVenue(t *testing.T, seed int64) *brokertest.Server {
	srv := brokertest.NewServer(venue.Config{Seed: seed, Faults: venue.FaultPlan{Duplicate: venue.CreateSecond}, RateLimits: venue.RateLimits{Account: venue.RateLimit{PerMinute: math.Inf(1)}}})
	t.Cleanup(srv.Close)
	return srv
}

// worker is one process's Placer and Store.
type worker struct {
	name  string
	p     *broker.Client
	store idempotency.Store
}

func newWorker(t *testing.T, name string, srv *brokertest.Server, url, ns string, cfg redisstore.Config) (*worker, error) {
	t.Helper()
	p, store, err := newPlacer(context.Background(), srv.URL, srv.APIKey, srv.PrivateKeyBase64, srv.AccountNumber, url, ns, cfg)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { store.Close() })
	return &worker{name, p, store}, nil
}

func mustWorker(t *testing.T, name string, srv *brokertest.Server, url, ns string, cfg redisstore.Config) *worker {
	t.Helper()
	w, err := newWorker(t, name, srv, url, ns, cfg)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return w
}

// placeAll places every key once and returns the answers.
func (w *worker) placeAll(ctx context.Context, keys []string) []placeResult {
	out := make([]placeResult, len(keys))
	for i, k := range keys {
		o, err := w.p.Place(ctx, k, buy)
		out[i] = result(k, o, err)
	}
	return out
}

// ledgerCheck asserts one order at most per key, and that every answer
// is true of what the venue holds; it returns the venue's order per key
// and a tally of the answers.
func ledgerCheck(t *testing.T, srv *brokertest.Server, w *worker, keys []string, answers map[string][]placeResult) (map[string]string, map[string]int) {
	t.Helper()
	orderOf := map[string]string{}
	for _, k := range keys {
		at := srv.Ledger().OrdersByClientID(w.p.ClientOrderID(k))
		if len(at) > 1 {
			t.Errorf("key %s: %d orders at the venue", k, len(at))
		}
		if len(at) > 0 {
			orderOf[k] = at[0].ID
		}
	}
	tally := map[string]int{}
	for who, rs := range answers {
		for _, r := range rs {
			tally[r.Answer]++
			if !truthful(r, orderOf[r.Key]) {
				t.Errorf("%s: key %s answered %q (%s) while the venue holds %q", who, r.Key, r.Answer, r.Err, orderOf[r.Key])
			}
		}
	}
	return orderOf, tally
}

func keysN(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%d", i)
	}
	return keys
}

func posts(srv *brokertest.Server) int {
	n := 0
	for _, r := range srv.Ledger().Requests() {
		if r.Method == "POST" {
			n++
		}
	}
	return n
}

// TestFleetRedisWipe: two processes place keys through a private Redis,
// one create still in flight; Redis then loses everything, by a SIGKILL
// and a restart without its append-only file, or a restart on an empty
// directory. Both processes must notice: every later Place refuses with
// ErrStoreReset and sends nothing, and the in-flight one still reports
// its order. A process started after the wipe must not place a key a
// second time.
func TestFleetRedisWipe(t *testing.T) {
	if testing.Short() {
		t.Skip("restarts redis-servers")
	}
	for _, tc := range []struct {
		name    string
		wipe    func(*redistest.Server)
		durable bool // the restarted server passes New's durability check
	}{
		{"restart without appendonly", func(s *redistest.Server) { s.RestartWith("--appendonly", "no") }, false},
		{"restart on an empty directory", (*redistest.Server).RestartEmpty, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs := redistest.Start(t)
			srv := fleetVenue(t, 5)
			ns := runID(t)
			keys := keysN(6)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			a := mustWorker(t, "A", srv, rs.URL(), ns, redisstore.Config{})
			b := mustWorker(t, "B", srv, rs.URL(), ns, redisstore.Config{})
			answers := map[string][]placeResult{}

			// Before: the first two creates' answers are lost (committed
			// anyway); A finds those orders by lookup. B gets them all
			// from the store.
			for _, st := range []int{0, 500} {
				srv.Inject(venue.Fault{Kind: "lose_response", Method: "POST", Status: st})
			}
			answers["A before"] = a.placeAll(ctx, keys)
			answers["B before"] = b.placeAll(ctx, keys)

			// One more key is in flight when Redis loses everything: its
			// create is committed and its answer held back.
			inflight := "inflight"
			srv.Inject(venue.Fault{Kind: "latency", Method: "POST", Delay: 2 * time.Second, AfterCommit: true})
			done := make(chan placeResult, 1)
			go func() { o, err := a.p.Place(ctx, inflight, buy); done <- result(inflight, o, err) }()
			for deadline := time.Now().Add(10 * time.Second); len(srv.Ledger().OrdersByClientID(a.p.ClientOrderID(inflight))) == 0; {
				if time.Now().After(deadline) {
					t.Fatal("the in-flight create never reached the venue")
				}
				time.Sleep(5 * time.Millisecond)
			}
			tc.wipe(rs)
			answers["A in flight"] = []placeResult{<-done}
			all := append(keys, inflight)

			// After: both running processes refuse, sending nothing.
			sent := len(srv.Ledger().Requests())
			answers["A after"] = a.placeAll(ctx, all)
			answers["B after"] = b.placeAll(ctx, all)
			if n := len(srv.Ledger().Requests()) - sent; n != 0 {
				t.Errorf("%d requests sent after the wipe by processes that knew the old Redis", n)
			}
			for _, who := range []string{"A after", "B after"} {
				for _, r := range answers[who] {
					if r.Answer != ansReset {
						t.Errorf("%s: key %s answered %q (%s), want %q", who, r.Key, r.Answer, r.Err, ansReset)
					}
				}
			}
			orderOf, tally := ledgerCheck(t, srv, a, all, answers)
			if len(orderOf) != len(all) {
				t.Errorf("%d keys hold an order, want %d", len(orderOf), len(all))
			}

			// A process started after the wipe.
			c, err := newWorker(t, "C", srv, rs.URL(), ns, redisstore.Config{})
			if !tc.durable {
				if !errors.Is(err, redisstore.ErrNotDurable) {
					t.Fatalf("a new process on the restarted Redis without appendonly: err = %v, want ErrNotDurable", err)
				}
				t.Logf("%s: %d keys, orders at the venue %d (per key: at most 1); answers %v; a new process refused to start (ErrNotDurable)",
					tc.name, len(all), len(srv.Ledger().Orders()), tally)
				return
			}
			if err != nil {
				t.Fatalf("a new process on the emptied Redis: %v", err)
			}
			answers["C"] = c.placeAll(ctx, all)
			var cTally = map[string]int{}
			for _, r := range answers["C"] {
				cTally[r.Answer]++
			}
			dups := srv.Ledger().DuplicateClientIDs()
			t.Logf("%s: %d keys, orders at the venue %d, keys with a second order %d; answers of A and B %v; of the new process C %v",
				tc.name, len(all), len(srv.Ledger().Orders()), len(dups), tally, cTally)
			// The new process finds each key's order by the lookup
			// orders.Placer makes before the first send on a store that
			// does not vouch for new intents.
			if len(dups) > 0 {
				t.Errorf("the new process placed %d keys a second time: it sent a fresh-looking intent without a lookup", len(dups))
			}
			ledgerCheck(t, srv, c, all, map[string][]placeResult{"C": answers["C"]})
		})
	}
}

// TestFleetRedisFailover: a primary and a replica. The replica is promoted
// (REPLICAOF NO ONE) while processes still reach the old primary, so the
// claims they write next provably never reach it; then the old primary
// dies. The claims' writers must have sent nothing (no replica
// acknowledged the claim in time: transport.ErrUnavailable); a process on the
// promoted replica finds every earlier intent and places the lost keys
// once each.
func TestFleetRedisFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("runs redis-servers")
	}
	primary := redistest.Start(t)
	replica := redistest.StartReplica(t, primary)
	srv := fleetVenue(t, 6)
	ns := runID(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	wait := redisstore.Config{ReplicaTimeout: 3 * time.Second} // generous on a loaded machine; the promoted-away replica makes the lost keys wait it out
	a := mustWorker(t, "A", srv, primary.URL(), ns, wait)
	b := mustWorker(t, "B", srv, primary.URL(), ns, wait)
	before, lost := []string{"k0", "k1"}, []string{"k2", "k3"}
	answers := map[string][]placeResult{}
	answers["A before"] = a.placeAll(ctx, before)

	replica.Promote()
	sent := posts(srv)
	answers["A lost"] = a.placeAll(ctx, lost[:1])
	answers["B lost"] = b.placeAll(ctx, lost[1:])
	if n := posts(srv) - sent; n != 0 {
		t.Errorf("%d creates sent on claims the replica did not acknowledge", n)
	}
	for _, r := range append(answers["A lost"], answers["B lost"]...) {
		if r.Answer != ansUnavailable {
			t.Errorf("key %s: answered %q (%s), want %q", r.Key, r.Answer, r.Err, ansUnavailable)
		}
	}
	// Those answers are judged against the venue as it is now: the keys
	// are placed later, on the promoted replica, as they should be.
	_, lostTally := ledgerCheck(t, srv, a, lost, map[string][]placeResult{"A lost": answers["A lost"], "B lost": answers["B lost"]})
	delete(answers, "A lost")
	delete(answers, "B lost")
	pc := redis.NewClient(&redis.Options{Addr: primary.Addr()})
	defer pc.Close()
	intentKey := func(k string) string { return "tradewire:{" + srv.AccountNumber + "}:intent:" + a.p.ClientOrderID(k) }
	if n, err := pc.Exists(ctx, intentKey(lost[0])).Result(); err != nil || n != 1 {
		t.Fatalf("the unacknowledged claim is not on the primary: %d, %v", n, err)
	}
	primary.Kill()
	rc := redis.NewClient(&redis.Options{Addr: replica.Addr()})
	defer rc.Close()
	if n, err := rc.Exists(ctx, intentKey(lost[0]), intentKey(lost[1])).Result(); err != nil || n != 0 {
		t.Fatalf("the promoted replica has %d of the unacknowledged claims (%v); want none, to prove the failover lost them", n, err)
	}
	if n, err := rc.Exists(ctx, intentKey(before[0])).Result(); err != nil || n != 1 {
		t.Fatalf("the promoted replica lacks an acknowledged claim: %d, %v", n, err)
	}

	// The old primary is gone: its processes' Places fail, sending nothing.
	// (A short deadline: go-redis would otherwise retry the dial for seconds.)
	dead, cancelDead := context.WithTimeout(ctx, 500*time.Millisecond)
	answers["A after"] = a.placeAll(dead, lost[:1])
	cancelDead()
	// A process on the promoted replica.
	c := mustWorker(t, "C", srv, replica.URL(), ns, redisstore.Config{})
	all := append(before, lost...)
	answers["C"] = c.placeAll(ctx, all)
	orderOf, tally := ledgerCheck(t, srv, a, all, answers)
	for _, r := range answers["C"] {
		if r.Answer != ansOrder {
			t.Errorf("C: key %s answered %q (%s), want its order", r.Key, r.Answer, r.Err)
		}
	}
	if dups := srv.Ledger().DuplicateClientIDs(); len(dups) > 0 || len(orderOf) != len(all) {
		t.Errorf("venue: %d keys with an order, %d with a second one; want %d and 0", len(orderOf), len(dups), len(all))
	}
	t.Logf("failover to a replica promoted before 2 claims: %d keys, %d orders at the venue, 0 sent on unreplicated claims (answers %v); answers after %v",
		len(all), len(srv.Ledger().Orders()), lostTally, tally)
}

// TestFleetHolderPaused: a holder process sends a create the venue
// commits but answers only 2 s later, and is frozen (SIGSTOP) past its
// lease. Another process is told the key is in progress (the holder's
// signature may still land) and sends nothing; resumed (SIGCONT), the
// holder reports its order, and so does everyone after it: one order.
func TestFleetHolderPaused(t *testing.T) {
	if testing.Short() {
		t.Skip("runs OS processes")
	}
	url := redistest.URL(t)
	srv := fleetVenue(t, 8)
	ns := runID(t)
	const lease = 500 * time.Millisecond
	b := mustWorker(t, "B", srv, url, ns, redisstore.Config{})
	cid := b.p.ClientOrderID("k")
	forgetIntents(t, url, srv.AccountNumber, []string{cid})
	if err := srv.Inject(venue.Fault{Kind: "latency", Method: "POST", Delay: 2 * time.Second, AfterCommit: true}); err != nil {
		t.Fatal(err)
	}
	ps := redistest.StartProcesses(t, 1, helperEnv+"=place",
		"VENUE_URL="+srv.URL, "VENUE_API_KEY="+srv.APIKey, "VENUE_KEY="+srv.PrivateKeyBase64,
		"VENUE_ACCOUNT="+srv.AccountNumber, "REDIS_URL="+url, "ORDER_NS="+ns, "ORDER_KEYS=k",
		fmt.Sprintf("STORE_LEASE_MS=%d", lease.Milliseconds()))
	ps.Go()
	var committed time.Time
	for deadline := time.Now().Add(20 * time.Second); committed.IsZero(); time.Sleep(2 * time.Millisecond) {
		if len(srv.Ledger().OrdersByClientID(cid)) > 0 {
			committed = time.Now()
		} else if time.Now().After(deadline) {
			t.Fatal("the holder's create never reached the venue")
		}
	}
	ps.Signal(t, 0, syscall.SIGSTOP)

	// Past the holder's lease, on Redis's clock.
	rdb := redistest.Client(t)
	ctx := context.Background()
	key := "tradewire:{" + srv.AccountNumber + "}:intent:" + cid
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		leaseMS, _ := rdb.HGet(ctx, key, "lease").Int64()
		now, _ := rdb.Time(ctx).Result()
		if leaseMS > 0 && now.UnixMilli() > leaseMS {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the holder's lease never lapsed")
		}
	}
	answers := map[string][]placeResult{}
	answers["B while the holder is frozen"] = b.placeAll(ctx, []string{"k"})
	if r := answers["B while the holder is frozen"][0]; r.Answer != ansInProgress {
		t.Errorf("B while the holder is frozen past its lease: %q (%s), want %q", r.Answer, r.Err, ansInProgress)
	}
	if n := len(srv.Ledger().Orders()); n != 1 {
		t.Errorf("%d orders at the venue while the holder is frozen, want its 1", n)
	}
	// Resume the holder once the venue has answered it.
	time.Sleep(time.Until(committed.Add(2500 * time.Millisecond)))
	ps.Signal(t, 0, syscall.SIGCONT)
	var held []placeResult
	ps.Wait(t, func(int) any { return &held })
	answers["holder"] = held
	answers["B after"] = b.placeAll(ctx, []string{"k"})
	orderOf, tally := ledgerCheck(t, srv, b, []string{"k"}, answers)
	if answers["holder"][0].Answer != ansOrder || answers["B after"][0].Answer != ansOrder {
		t.Errorf("holder %q, B afterwards %q; want both the order", answers["holder"][0].Answer, answers["B after"][0].Answer)
	}
	if dups := srv.Ledger().DuplicateClientIDs(); len(dups) > 0 || posts(srv) != 1 {
		t.Errorf("%d creates, %d keys with a second order; want 1 and 0", posts(srv), len(dups))
	}
	t.Logf("holder frozen past its %v lease with its create committed: %d order for the key (%s), %d create sent; answers %v",
		lease, len(srv.Ledger().Orders()), orderOf["k"], posts(srv), tally)
}
