package orders_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shopspring/decimal"

	"github.com/tradewire/tradewire/broker"
	"github.com/tradewire/tradewire/broker/brokertest"
	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/orders"
	"github.com/tradewire/tradewire/signing"
	"github.com/tradewire/tradewire/transport"
	"github.com/tradewire/tradewire/venue"
)

// env is one simulated venue with a client and a Placer, inside a synctest
// bubble: the venue and the client run on the bubble's clock, which
// advances by itself whenever every goroutine waits. The venue creates a
// second order for a reused client_order_id, so "at most one order per
// key" rests on the Placer alone.
type env struct {
	srv    *brokertest.Server
	tc     *transport.Client
	store  idempotency.Store
	placer *broker.Client
	// procs are the processes started on the env's store with process;
	// starting one ends those before it (see procStore).
	procs []*procStore
}

// envConfig is what a test changes about an env.
type envConfig struct {
	store     idempotency.Store
	venue     venue.Config                              // Seed 7 and CreateSecond where it leaves them unset
	wrap      func(http.RoundTripper) http.RoundTripper // between the client and the venue
	transport transport.Config
	placer    orders.Config
}

// newEnv is newEnvWith with store, and the venue configured by cfg if
// given.
func newEnv(t *testing.T, store idempotency.Store, cfg ...venue.Config) *env {
	t.Helper()
	c := envConfig{store: store}
	if len(cfg) > 0 {
		c.venue = cfg[0]
	}
	return newEnvWith(t, c)
}

func newEnvWith(t *testing.T, c envConfig) *env {
	t.Helper()
	cfg := c.venue
	if cfg.Seed == 0 {
		cfg.Seed = 7
	}
	if cfg.Faults.Duplicate == "" {
		cfg.Faults.Duplicate = venue.CreateSecond
	}
	srv, err := brokertest.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	key, err := signing.ParsePrivateKey(srv.PrivateKeyBase64)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := signing.New(srv.APIKey, key)
	if err != nil {
		t.Fatal(err)
	}
	rt := srv.Client().Transport
	if c.wrap != nil {
		rt = c.wrap(rt)
	}
	tcfg := c.transport
	tcfg.RoundTripper = rt
	tc, err := transport.New(srv.URL, signer, tcfg)
	if err != nil {
		t.Fatal(err)
	}
	store := c.store
	if store == nil {
		store = idempotency.NewMemoryStore()
	}
	p, err := newPlacer(tc, store, srv.AccountNumber, c.placer)
	if err != nil {
		t.Fatal(err)
	}
	return &env{srv: srv, tc: tc, store: store, placer: p}
}

// creates returns the create requests the venue received for an id.
func (e *env) creates() []venue.Request {
	var out []venue.Request
	for _, r := range e.srv.Ledger().Requests() {
		if r.Method == "POST" && r.Target == "/api/v2/crypto/trading/orders/?account_number="+e.srv.AccountNumber {
			out = append(out, r)
		}
	}
	return out
}

// limitBuy is far below the market, so it rests open.
func limitBuy(qty string) broker.OrderRequest {
	return broker.OrderRequest{
		Symbol: "BTC-USD", Side: broker.SideBuy, Type: broker.TypeLimit,
		AssetQuantity: decimal.RequireFromString(qty), LimitPrice: decimal.RequireFromString("1000.00"),
	}
}

// liveOrders counts the venue's orders for a client_order_id.
func (e *env) liveOrders(cid string) int { return len(e.srv.Ledger().OrdersByClientID(cid)) }

func TestPlaceOnceAndAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, nil)
		ctx := context.Background()
		o, err := e.placer.Place(ctx, "order-1", limitBuy("0.001"))
		if err != nil {
			t.Fatal(err)
		}
		cid := e.placer.ClientOrderID("order-1")
		if o.ClientOrderID != cid || o.State != broker.StateOpen || o.ID == "" {
			t.Fatalf("order = %+v", o)
		}
		before, creates := len(e.srv.Ledger().Requests()), len(e.creates())
		again, err := e.placer.Place(ctx, "order-1", limitBuy("0.001"))
		if err != nil || again.ID != o.ID {
			t.Fatalf("second Place = %+v, %v", again, err)
		}
		// The facade reads the acknowledged order afresh (one GET); the
		// engine sends no create.
		if n := len(e.creates()); n != creates {
			t.Fatalf("Place of an acknowledged key sent %d creates", n-creates)
		}
		for _, r := range e.srv.Ledger().Requests()[before:] {
			if r.Method != "GET" {
				t.Fatalf("Place of an acknowledged key sent %s %s", r.Method, r.Target)
			}
		}
		before = len(e.srv.Ledger().Requests())
		rec, err := e.store.Get(ctx, cid)
		if err != nil || rec.State != idempotency.Acknowledged || rec.OrderID != o.ID || rec.Sends != 1 {
			t.Fatalf("intent = %+v, %v", rec, err)
		}

		var conflict *orders.Error
		if _, err := e.placer.Place(ctx, "order-1", limitBuy("0.002")); !errors.As(err, &conflict) || conflict.Kind != transport.ErrInvalidRequest || !errors.Is(err, transport.ErrInvalidRequest) {
			t.Fatalf("a different request under the same key: err = %v", err)
		}
		if after := len(e.srv.Ledger().Requests()); after != before {
			t.Fatal("a key conflict sent something")
		}
	})
}

// TestCreateFailures covers each failure of the create, before and after
// the venue committed it, on a venue that creates a second order for a
// reused client_order_id. The invariant: exactly one order per key.
func TestCreateFailures(t *testing.T) {
	type failure struct {
		name      string
		fault     venue.Fault
		committed bool // the venue holds the order after the failed answer
	}
	post := func(f venue.Fault) venue.Fault {
		f.Method, f.Path = "POST", "/api/v2/crypto/trading/orders/"
		return f
	}
	var failures []failure
	for _, st := range []int{429, 500, 502, 503, 504} {
		failures = append(failures,
			failure{fmt.Sprintf("%d before commit", st), post(venue.Fault{Kind: "respond", Status: st, Body: `{"type":"server_error","errors":[]}`}), false},
			failure{fmt.Sprintf("%d after commit", st), post(venue.Fault{Kind: "lose_response", Status: st}), true})
	}
	failures = append(failures,
		failure{"connection lost after commit", post(venue.Fault{Kind: "lose_response"}), true},
		failure{"timeout before commit", post(venue.Fault{Kind: "latency", Delay: 15 * time.Second}), false},
		failure{"timeout after commit", post(venue.Fault{Kind: "latency", Delay: 15 * time.Second, AfterCommit: true}), true})

	for _, dup := range []venue.DuplicateMode{venue.CreateSecond} {
		for _, f := range failures {
			t.Run(string(dup)+"/"+f.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					e := newEnv(t, nil, venue.Config{Faults: venue.FaultPlan{Duplicate: dup, Faults: []venue.Fault{f.fault}}})
					ctx := context.Background()
					o, err := e.placer.Place(ctx, "k-1", limitBuy("0.001"))
					if err != nil {
						t.Fatalf("Place: %v", err)
					}
					cid := e.placer.ClientOrderID("k-1")
					if n := e.liveOrders(cid); n != 1 {
						t.Fatalf("the venue holds %d orders for the key, want exactly 1", n)
					}
					if o.ClientOrderID != cid {
						t.Fatalf("returned order %+v", o)
					}
					creates := e.creates()
					if f.committed {
						if len(creates) != 1 {
							t.Fatalf("a committed create was sent %d times; the lookup should have found it", len(creates))
						}
					} else {
						if len(creates) != 2 {
							t.Fatalf("create sent %d times, want 2 (once refused, once after its signature expired)", len(creates))
						}
						// The venue's clock is measured from its Date headers:
						// the margin is the floor.
						if gap := creates[1].Time.Sub(creates[0].Time); gap < signing.ValidFor+10*time.Second {
							t.Fatalf("resent %v after the first send, before its signature expired", gap)
						}
					}
					rec, err := e.store.Get(ctx, cid)
					if err != nil || rec.State != idempotency.Acknowledged || rec.OrderID != o.ID {
						t.Fatalf("intent = %+v, %v", rec, err)
					}
				})
			})
		}
	}
}

func TestRandomIDIsSentOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, nil, venue.Config{Faults: venue.FaultPlan{Faults: []venue.Fault{{Kind: "respond", Method: "POST", Path: "/api/v2/crypto/trading/orders/", Status: 503}}}})
		ctx := context.Background()
		_, err := e.placer.Place(ctx, "", limitBuy("0.001"))
		var unknown *orders.Error
		if !errors.As(err, &unknown) || unknown.Kind != transport.ErrUnknownOutcome || unknown.ClientOrderID == "" || !errors.Is(err, transport.ErrUnknownOutcome) {
			t.Fatalf("err = %v, want an unknown outcome naming the client_order_id", err)
		}
		if n := len(e.creates()); n != 1 {
			t.Fatalf("a create under a random id was sent %d times", n)
		}
		// Recover settles it by lookup, without placing: the 503 came
		// before the venue committed, so it was not placed.
		rep, err := e.placer.Recover(ctx)
		if err != nil || len(rep.NotPlaced) != 1 || rep.NotPlaced[0].ClientOrderID != unknown.ClientOrderID {
			t.Fatalf("Recover = %+v, %v", rep, err)
		}
		if n := len(e.creates()); n != 1 {
			t.Fatal("Recover placed something")
		}
	})
}

func TestCancelledContextDuringReconcile(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, nil, venue.Config{Faults: venue.FaultPlan{Faults: []venue.Fault{{Kind: "respond", Method: "POST", Path: "/api/v2/crypto/trading/orders/", Status: 503}}}})
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // bubble time
		defer cancel()
		_, err := e.placer.Place(ctx, "k-1", limitBuy("0.001"))
		var unknown *orders.Error
		if !errors.As(err, &unknown) || unknown.Kind != transport.ErrUnknownOutcome || unknown.ClientOrderID != e.placer.ClientOrderID("k-1") || !errors.Is(unknown.Err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want an unknown outcome carrying the client_order_id", err)
		}
		rec, _ := e.store.Get(context.Background(), unknown.ClientOrderID)
		if rec.State != idempotency.Unknown {
			t.Fatalf("intent state = %s, want unknown", rec.State)
		}
		// The same key later: reconciled, then placed exactly once.
		o, err := e.placer.Place(context.Background(), "k-1", limitBuy("0.001"))
		if err != nil || e.liveOrders(o.ClientOrderID) != 1 {
			t.Fatalf("Place again = %v, %v; orders %d", o, err, e.liveOrders(unknown.ClientOrderID))
		}
	})
}

// TestCrashBetweenSendAndRecord: the create is committed and its answer
// lost, and the process dies before recording anything after the send. A
// new Placer on the same store file recovers the order by lookup and never
// places a second one.
func TestCrashBetweenSendAndRecord(t *testing.T) {
	for _, mode := range []venue.DuplicateMode{venue.CreateSecond} {
		t.Run(string(mode), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "intents.db")
				store, err := idempotency.Open(path, idempotency.Config{})
				if err != nil {
					t.Fatal(err)
				}
				e := newEnv(t, &crashingStore{Store: store, afterWrites: 2}, venue.Config{Faults: venue.FaultPlan{Duplicate: mode,
					Faults: []venue.Fault{{Kind: "lose_response", Method: "POST", Path: "/api/v2/crypto/trading/orders/"}}}})
				ctx := context.Background()
				cid := e.placer.ClientOrderID("k-1")
				_, _ = e.placer.Place(ctx, "k-1", limitBuy("0.001")) // "crashes" after the send
				store.Close()

				onDisk, err := idempotency.Open(path, idempotency.Config{})
				if err != nil {
					t.Fatal(err)
				}
				defer onDisk.Close()
				rec, err := onDisk.Get(ctx, cid)
				if err != nil || rec.State != idempotency.Pending || rec.Sends != 1 || rec.LastSignedAt.IsZero() {
					t.Fatalf("after the crash the store holds %+v, %v; want the pending intent with its signature time", rec, err)
				}
				restarted, err := newPlacer(e.tc, onDisk, e.srv.AccountNumber)
				if err != nil {
					t.Fatal(err)
				}
				rep, err := restarted.Recover(ctx)
				if err != nil || len(rep.Acknowledged) != 1 {
					t.Fatalf("Recover = %+v, %v", rep, err)
				}
				o, err := restarted.Place(ctx, "k-1", limitBuy("0.001"))
				if err != nil || o.ClientOrderID != cid {
					t.Fatalf("Place after restart = %+v, %v", o, err)
				}
				if n := e.liveOrders(cid); n != 1 {
					t.Fatalf("%d orders for the key", n)
				}
				if n := len(e.creates()); n != 1 {
					t.Fatalf("create sent %d times", n)
				}
			})
		})
	}
}

// TestCrashBeforeSend: the intent was recorded and the process died before
// anything was sent. Recover marks it not placed; Place sends it once.
func TestCrashBeforeSend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "intents.db")
		store, err := idempotency.Open(path, idempotency.Config{})
		if err != nil {
			t.Fatal(err)
		}
		e := newEnv(t, &crashingStore{Store: store, afterWrites: 1})
		ctx := context.Background()
		if _, err := e.placer.Place(ctx, "k-1", limitBuy("0.001")); err == nil {
			t.Fatal("Place succeeded with a store that fails before the send")
		}
		if n := len(e.creates()); n != 0 {
			t.Fatalf("sent %d creates although the signature's time could not be recorded", n)
		}
		store.Close()
		onDisk, err := idempotency.Open(path, idempotency.Config{})
		if err != nil {
			t.Fatal(err)
		}
		defer onDisk.Close()
		restarted, _ := newPlacer(e.tc, onDisk, e.srv.AccountNumber)
		rep, err := restarted.Recover(ctx)
		if err != nil || len(rep.NotPlaced) != 1 {
			t.Fatalf("Recover = %+v, %v", rep, err)
		}
		if _, err := restarted.Place(ctx, "k-1", limitBuy("0.001")); err != nil {
			t.Fatal(err)
		}
		if n := e.liveOrders(restarted.ClientOrderID("k-1")); n != 1 {
			t.Fatalf("%d orders", n)
		}
	})
}

// crashingStore lets the first afterWrites writes through, then fails
// every later one, like a process that died at that point.
type crashingStore struct {
	idempotency.Store
	mu          sync.Mutex
	writes      int
	afterWrites int
}

var errCrashed = errors.New("process crashed")

func (s *crashingStore) write() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes++
	if s.writes > s.afterWrites {
		return errCrashed
	}
	return nil
}

func (s *crashingStore) Create(ctx context.Context, r idempotency.Record) (idempotency.Record, bool, error) {
	if err := s.write(); err != nil {
		return idempotency.Record{}, false, err
	}
	return s.Store.Create(ctx, r)
}

func (s *crashingStore) Update(ctx context.Context, r idempotency.Record) error {
	if err := s.write(); err != nil {
		return err
	}
	return s.Store.Update(ctx, r)
}

func TestConcurrentPlaceSameKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, nil, venue.Config{Faults: venue.FaultPlan{Duplicate: venue.CreateSecond,
			Faults: []venue.Fault{{Kind: "lose_response", Method: "POST", Path: "/api/v2/crypto/trading/orders/", Status: 503}}}})
		ctx := context.Background()
		var wg sync.WaitGroup
		ids := make(chan string, 8)
		for i := 0; i < 8; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				o, err := e.placer.Place(ctx, "shared", limitBuy("0.001"))
				if err != nil {
					t.Error(err)
					return
				}
				ids <- o.ID
			}()
		}
		wg.Wait()
		close(ids)
		first := ""
		for id := range ids {
			if first == "" {
				first = id
			}
			if id != first {
				t.Fatalf("two orders for one key: %s and %s", first, id)
			}
		}
		if n := e.liveOrders(e.placer.ClientOrderID("shared")); n != 1 {
			t.Fatalf("%d orders at the venue", n)
		}
	})
}

func TestRejections(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, nil)
		ctx := context.Background()
		// An unknown symbol passes the offline shape check; the venue
		// refuses it: rejected, nothing placed, remembered.
		req := limitBuy("0.001")
		req.Symbol = "ZZZ-USD"
		_, err := e.placer.Place(ctx, "bad-symbol", req)
		var rejected *orders.Error
		var status *transport.StatusError
		if !errors.As(err, &rejected) || rejected.Kind != transport.ErrRejected || !errors.As(rejected.Err, &status) || status.StatusCode != 400 || !errors.Is(err, transport.ErrRejected) {
			t.Fatalf("err = %v", err)
		}
		before := len(e.creates())
		if _, err := e.placer.Place(ctx, "bad-symbol", req); !errors.As(err, &rejected) || rejected.Kind != transport.ErrRejected {
			t.Fatalf("second Place err = %v", err)
		}
		if len(e.creates()) != before {
			t.Fatal("a rejected key was sent again")
		}
	})
}

// sharedStore plays a store shared with another process: it refuses the
// claim of some intents, and fences updates of others.
type sharedStore struct {
	idempotency.Store
	refuseCreate, loseClaim bool
}

func (s *sharedStore) Create(ctx context.Context, r idempotency.Record) (idempotency.Record, bool, error) {
	if s.refuseCreate {
		return idempotency.Record{}, false, fmt.Errorf("held by host-b/42: %w", idempotency.ErrInProgress)
	}
	return s.Store.Create(ctx, r)
}

func (s *sharedStore) Update(ctx context.Context, r idempotency.Record) error {
	if s.loseClaim {
		return idempotency.ErrClaimLost
	}
	return s.Store.Update(ctx, r)
}

func TestIntentHeldByAnotherProcess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := idempotency.NewMemoryStore()
		shared := &sharedStore{Store: mem, refuseCreate: true}
		e := newEnv(t, shared)
		ctx := context.Background()
		_, err := e.placer.Place(ctx, "k", limitBuy("0.001"))
		var inProgress *orders.Error
		if !errors.As(err, &inProgress) || inProgress.Kind != idempotency.ErrInProgress || !errors.Is(err, idempotency.ErrInProgress) || !errors.Is(err, transport.ErrUnknownOutcome) {
			t.Fatalf("err = %v, want an in-progress error", err)
		}
		// A claim lost before the send (another process took the intent
		// over): nothing is sent, and the intent is left to its holder.
		shared.refuseCreate, shared.loseClaim = false, true
		_, err = e.placer.Place(ctx, "k2", limitBuy("0.001"))
		if !errors.As(err, &inProgress) || inProgress.Kind != idempotency.ErrInProgress {
			t.Fatalf("err = %v, want an in-progress error", err)
		}
		if n := len(e.creates()); n != 0 {
			t.Fatalf("%d creates sent without the claim", n)
		}
		// Recover leaves held intents alone.
		shared.loseClaim, shared.refuseCreate = false, true
		if _, _, err := mem.Create(ctx, idempotency.Record{ClientOrderID: "x", AccountNumber: e.srv.AccountNumber, State: idempotency.Unknown, Sends: 1}); err != nil {
			t.Fatal(err)
		}
		rep, err := e.placer.Recover(ctx)
		if err != nil || len(rep.InProgress) == 0 || len(rep.Acknowledged)+len(rep.NotPlaced) != 0 {
			t.Fatalf("Recover = %+v, %v", rep, err)
		}
	})
}

// newPlacer places through a broker.Client on tc, as a bot does: the
// engine, with the order vocabulary package broker owns and gives it.
func newPlacer(tc *transport.Client, store idempotency.Store, account string, cfg ...orders.Config) (*broker.Client, error) {
	bc := broker.Config{AccountNumber: account, IntentStore: store}
	if len(cfg) > 0 {
		bc.Orders = cfg[0]
	}
	return broker.NewFromTransport(tc, bc)
}
