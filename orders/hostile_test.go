package orders_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tradewire/tradewire/broker"
	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/orders"
	"github.com/tradewire/tradewire/transport"
	"github.com/tradewire/tradewire/venue"
)

// Tests against a hostile venue: one that creates a second order for a
// reused client_order_id (every env), answers a committed create with a
// 2xx it cannot read, lists orders late or incompletely, and a store that
// loses claims, fails writes or cannot vouch that an intent is new. Each
// checks the invariant with checkTruth: the venue holds at most one order
// per client_order_id, and Place's answer is true.

const ordersTarget = "/api/v2/crypto/trading/orders/"

// rtFunc adapts a function to http.RoundTripper.
type rtFunc func(*http.Request) (*http.Response, error)

func (f rtFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func isCreate(r *http.Request) bool { return r.Method == http.MethodPost && r.URL.Path == ordersTarget }
func isList(r *http.Request) bool   { return r.Method == http.MethodGet && r.URL.Path == ordersTarget }

func setBody(resp *http.Response, b []byte) {
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(b))
	resp.ContentLength = int64(len(b))
	resp.Header.Del("Content-Length")
}

// mangleCreates passes every create to the venue (it commits) and, when
// the venue answers 2xx and on is true, replaces the answer's body.
func mangleCreates(on *bool, mangle func([]byte) []byte) func(http.RoundTripper) http.RoundTripper {
	return func(next http.RoundTripper) http.RoundTripper {
		return rtFunc(func(r *http.Request) (*http.Response, error) {
			resp, err := next.RoundTrip(r)
			if err != nil || !isCreate(r) || resp.StatusCode/100 != 2 || (on != nil && !*on) {
				return resp, err
			}
			b, _ := io.ReadAll(resp.Body)
			setBody(resp, mangle(b))
			return resp, nil
		})
	}
}

// listPage is a page of the orders list, rows kept as sent.
type listPage struct {
	Next     *string                      `json:"next"`
	Previous *string                      `json:"previous"`
	Results  []map[string]json.RawMessage `json:"results"`
}

// editLists passes every list request to the venue and rewrites each
// page it answers with edit (n counts list pages answered, from 1).
func editLists(edit func(n int, pg *listPage) []byte) func(http.RoundTripper) http.RoundTripper {
	var mu sync.Mutex
	n := 0
	return func(next http.RoundTripper) http.RoundTripper {
		return rtFunc(func(r *http.Request) (*http.Response, error) {
			resp, err := next.RoundTrip(r)
			if err != nil || !isList(r) || resp.StatusCode != http.StatusOK {
				return resp, err
			}
			b, _ := io.ReadAll(resp.Body)
			var pg listPage
			if err := json.Unmarshal(b, &pg); err != nil {
				panic(err)
			}
			mu.Lock()
			n++
			k := n
			mu.Unlock()
			out := edit(k, &pg)
			if out == nil {
				out, _ = json.Marshal(pg)
			}
			setBody(resp, out)
			return resp, nil
		})
	}
}

// lagging hides from list answers every order created less than lag ago,
// like a venue whose list trails its creates.
func lagging(lag time.Duration) func(http.RoundTripper) http.RoundTripper {
	return editLists(func(_ int, pg *listPage) []byte {
		kept := pg.Results[:0]
		for _, row := range pg.Results {
			var created time.Time
			if err := json.Unmarshal(row["created_at"], &created); err != nil {
				panic(err)
			}
			if time.Since(created) >= lag {
				kept = append(kept, row)
			}
		}
		pg.Results = kept
		return nil
	})
}

func chain(wraps ...func(http.RoundTripper) http.RoundTripper) func(http.RoundTripper) http.RoundTripper {
	return func(rt http.RoundTripper) http.RoundTripper {
		for _, w := range wraps {
			rt = w(rt)
		}
		return rt
	}
}

// checkTruth asserts the invariant for cid after Place answered (o, err):
// at most one order at the venue; success names it; not placed means none;
// rejected means none live.
func (e *env) checkTruth(t *testing.T, cid string, o *broker.Order, err error) {
	t.Helper()
	held := e.srv.Ledger().OrdersByClientID(cid)
	if len(held) > 1 {
		t.Fatalf("the venue holds %d orders for client_order_id %s", len(held), cid)
	}
	switch {
	case err == nil:
		if len(held) != 1 || o == nil || o.ClientOrderID != cid || o.ID != held[0].ID {
			t.Fatalf("Place returned %+v, the venue holds %+v", o, held)
		}
	case errors.Is(err, orders.ErrNotPlaced):
		if len(held) != 0 {
			t.Fatalf("Place said not placed (%v), the venue holds %+v", err, held)
		}
	case errors.Is(err, broker.ErrRejected):
		if len(held) != 0 && held[0].State != "failed" {
			t.Fatalf("Place said rejected (%v), the venue holds %+v", err, held)
		}
	case errors.Is(err, broker.ErrUnknownOutcome):
		// True whatever the venue holds.
	case errors.Is(err, transport.ErrNotSent):
		// Nothing sent by this call: true whatever the venue holds,
		// checked by the callers against the creates they count.
	default:
		t.Fatalf("Place returned an error outside the taxonomy: %v", err)
	}
}

func boltStore(t *testing.T) idempotency.Store {
	t.Helper()
	s, err := idempotency.Open(filepath.Join(t.TempDir(), "intents.db"), idempotency.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestTwoXXIsNeverResent: a create the venue committed and answered 2xx
// with a body the Placer cannot read is never sent again. A lookup that
// shows the order acknowledges it; a list that does not show it leaves an
// honest unknown carrying the client_order_id and Answered2xx, for Place
// and Recover alike, until the order is listed.
func TestTwoXXIsNeverResent(t *testing.T) {
	mangles := []struct {
		name   string
		mangle func([]byte) []byte
	}{
		{"truncated", func(b []byte) []byte { return b[:len(b)/2] }},
		{"another client_order_id", func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"client_order_id":"`), []byte(`"client_order_id":"0`), 1)
		}},
		{"too large", func(b []byte) []byte { return append(b, bytes.Repeat([]byte(" "), 64<<10)...) }},
		{"not json", func([]byte) []byte { return []byte("<html>OK</html>") }},
	}
	for _, m := range mangles {
		for _, listed := range []bool{true, false} {
			name := m.name + "/listed"
			if !listed {
				name = m.name + "/list lags an hour"
			}
			t.Run(name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					wraps := []func(http.RoundTripper) http.RoundTripper{mangleCreates(nil, m.mangle)}
					if !listed {
						wraps = append(wraps, lagging(time.Hour))
					}
					e := newEnvWith(t, envConfig{wrap: chain(wraps...), transport: transport.Config{MaxResponseBytes: 32 << 10}})
					ctx := context.Background()
					cid := e.placer.ClientOrderID("k")
					o, err := e.placer.Place(ctx, "k", limitBuy("0.001"))
					e.checkTruth(t, cid, o, err)
					if n := len(e.creates()); n != 1 {
						t.Fatalf("a create answered 2xx was sent %d times", n)
					}
					if e.liveOrders(cid) != 1 {
						t.Fatal("the venue does not hold the order")
					}
					if listed {
						if err != nil {
							t.Fatalf("Place = %v; the lookup should have read the order", err)
						}
						return
					}
					var unknown *orders.Error
					if !errors.As(err, &unknown) || unknown.Kind != transport.ErrUnknownOutcome || !unknown.Answered2xx || unknown.ClientOrderID != cid || !strings.Contains(err.Error(), "acknowledged") {
						t.Fatalf("err = %v, want an unknown outcome saying the venue acknowledged %s", err, cid)
					}
					rec, _ := e.store.Get(ctx, cid)
					if rec.State != idempotency.Unknown || !rec.Answered2xx {
						t.Fatalf("intent = %s, answered2xx %v; want unknown, answered", rec.State, rec.Answered2xx)
					}
					// Place again, long after every signature expired:
					// still never sent again, still unknown.
					time.Sleep(20 * time.Minute)
					o, err = e.placer.Place(ctx, "k", limitBuy("0.001"))
					e.checkTruth(t, cid, o, err)
					if !errors.As(err, &unknown) || unknown.Kind != transport.ErrUnknownOutcome || !unknown.Answered2xx {
						t.Fatalf("Place again = %v, want the same unknown outcome", err)
					}
					// A new process on the same store: Recover never takes
					// it as not placed.
					restarted, err := newPlacer(e.tc, e.store, e.srv.AccountNumber)
					if err != nil {
						t.Fatal(err)
					}
					rep, err := restarted.Recover(ctx)
					if err != nil || len(rep.Unresolved) != 1 || len(rep.NotPlaced) != 0 {
						t.Fatalf("Recover = %+v, %v; want it unresolved", rep, err)
					}
					// Once the list shows it, it is acknowledged.
					time.Sleep(time.Hour)
					o, err = restarted.Place(ctx, "k", limitBuy("0.001"))
					if err != nil {
						t.Fatalf("Place once listed = %v", err)
					}
					e.checkTruth(t, cid, o, err)
					if n := len(e.creates()); n != 1 {
						t.Fatalf("%d creates", n)
					}
				})
			})
		}
	}
}

// TestListLag: the venue commits a create, loses its answer, and lists it
// late. A lag the Placer outwaits is found; a lag it cannot outwait, with
// re-sends forbidden (MaxSends 1), is an honest unknown and never a
// second create.
func TestListLag(t *testing.T) {
	lost := venue.Fault{Kind: "lose_response", Method: http.MethodPost, Path: ordersTarget, Status: 503}
	t.Run("outwaited", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnvWith(t, envConfig{venue: venue.Config{Faults: venue.FaultPlan{Faults: []venue.Fault{lost}}}, wrap: lagging(20 * time.Second)})
			cid := e.placer.ClientOrderID("k")
			o, err := e.placer.Place(context.Background(), "k", limitBuy("0.001"))
			e.checkTruth(t, cid, o, err)
			if err != nil || len(e.creates()) != 1 {
				t.Fatalf("Place = %v after %d creates; want the order found after the wait, sent once", err, len(e.creates()))
			}
		})
	})
	for _, committed := range []bool{true, false} {
		name := "never re-send/committed"
		f := lost
		if !committed {
			name = "never re-send/refused before commit"
			f = venue.Fault{Kind: "respond", Method: http.MethodPost, Path: ordersTarget, Status: 503}
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnvWith(t, envConfig{venue: venue.Config{Faults: venue.FaultPlan{Faults: []venue.Fault{f}}}, wrap: lagging(24 * time.Hour),
					placer: orders.Config{MaxSends: 1}})
				ctx := context.Background()
				cid := e.placer.ClientOrderID("k")
				for i := 0; i < 3; i++ {
					o, err := e.placer.Place(ctx, "k", limitBuy("0.001"))
					e.checkTruth(t, cid, o, err)
					var unknown *orders.Error
					if !errors.As(err, &unknown) || unknown.Kind != transport.ErrUnknownOutcome || unknown.ClientOrderID != cid {
						t.Fatalf("Place #%d = %v, want an unknown outcome", i+1, err)
					}
					if n := len(e.creates()); n != 1 {
						t.Fatalf("with re-sends forbidden the create was sent %d times", n)
					}
					time.Sleep(time.Hour)
				}
				rep, err := e.placer.Recover(ctx)
				if err != nil || len(rep.Unresolved) != 1 || len(rep.NotPlaced) != 0 {
					t.Fatalf("Recover = %+v, %v; want it unresolved, never not placed", rep, err)
				}
				if n := len(e.creates()); n != 1 {
					t.Fatalf("Recover sent a create (%d)", n)
				}
			})
		})
	}
}

// TestIncompleteLookup: after an ambiguous answer (refused before commit,
// so the venue holds nothing) the list cannot be read whole. The Placer
// never concludes "not found": it neither re-sends nor says not placed.
// The store vouches, so no lookup precedes the first send.
func TestIncompleteLookup(t *testing.T) {
	refused := venue.Fault{Kind: "respond", Method: http.MethodPost, Path: ordersTarget, Status: 503, Times: 1}
	cases := []struct {
		name   string
		others int // other orders placed first, so the list has pages
		edit   func(n int, pg *listPage) []byte
		opts   orders.Config
	}{
		{"a row without client_order_id", 0, func(_ int, pg *listPage) []byte {
			pg.Results = append(pg.Results, map[string]json.RawMessage{"id": json.RawMessage(`"00000000-0000-4000-8000-000000000001"`), "symbol": json.RawMessage(`"BTC-USD"`)})
			return nil
		}, orders.Config{}},
		{"a row that does not decode", 0, func(_ int, pg *listPage) []byte {
			pg.Results = append(pg.Results, map[string]json.RawMessage{"id": json.RawMessage(`7`), "client_order_id": json.RawMessage(`[]`)})
			return nil
		}, orders.Config{}},
		{"a page that does not decode", 0, func(int, *listPage) []byte { return []byte(`{"next":null,"results":[{`) }, orders.Config{}},
		{"a next that vanished after full pages", 5, func(n int, pg *listPage) []byte {
			if pg.Previous != nil && pg.Next != nil {
				pg.Next = nil // the second page of each walk, as full as the first, loses its link
			}
			return nil
		}, orders.Config{}},
		{"the page cap", 5, func(int, *listPage) []byte { return nil }, orders.Config{LookupPageCap: 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				hostile := false
				e := newEnvWith(t, envConfig{store: boltStore(t), venue: venue.Config{PageSize: 2},
					wrap: editLists(func(n int, pg *listPage) []byte {
						if !hostile {
							return nil
						}
						return tc.edit(n, pg)
					}), placer: tc.opts})
				ctx := context.Background()
				for i := 0; i < tc.others; i++ {
					if _, err := e.placer.Place(ctx, "other-"+string(rune('a'+i)), limitBuy("0.001")); err != nil {
						t.Fatal(err)
					}
				}
				hostile = true
				if err := e.srv.Inject(refused); err != nil {
					t.Fatal(err)
				}
				cid := e.placer.ClientOrderID("k")
				o, err := e.placer.Place(ctx, "k", limitBuy("0.001"))
				e.checkTruth(t, cid, o, err)
				var unknown *orders.Error
				if !errors.As(err, &unknown) || unknown.Kind != transport.ErrUnknownOutcome || !errors.Is(unknown.Err, orders.ErrLookupIncomplete) {
					t.Fatalf("err = %v, want an unknown outcome from an incomplete lookup", err)
				}
				if errors.Is(err, orders.ErrLookupIncomplete) || errors.Is(err, orders.ErrNotPlaced) {
					t.Fatalf("err %v matches more than ErrUnknownOutcome", err)
				}
				if n := len(e.creates()); n != tc.others+1 {
					t.Fatalf("%d creates, want %d: the key's create was sent again", n, tc.others+1)
				}
				rep, err := e.placer.Recover(ctx)
				if err != nil || len(rep.NotPlaced) != 0 || len(rep.Unresolved) != 1 {
					t.Fatalf("Recover = %+v, %v; want it unresolved", rep, err)
				}
			})
		})
	}
}

// claimStore plays a store shared with other processes that takes the
// claim away (idempotency.ErrClaimLost) on the Updates lose chooses.
type claimStore struct {
	idempotency.Store
	mu      sync.Mutex
	updates int
	lose    func(n int, rec idempotency.Record) bool
}

func (s *claimStore) Update(ctx context.Context, rec idempotency.Record) error {
	s.mu.Lock()
	s.updates++
	n := s.updates
	s.mu.Unlock()
	if s.lose(n, rec) {
		return idempotency.ErrClaimLost
	}
	return s.Store.Update(ctx, rec)
}

// TestLostClaim: whenever the store says another process took the intent
// over, Place says in progress (which is also unknown), never not placed
// or rejected, and sends nothing more.
func TestLostClaim(t *testing.T) {
	refused := venue.Fault{Kind: "respond", Method: http.MethodPost, Path: ordersTarget, Status: 503, Times: 3}
	lostAnswer := venue.Fault{Kind: "lose_response", Method: http.MethodPost, Path: ordersTarget, Status: 503}
	cases := []struct {
		name    string
		fault   *venue.Fault
		symbol  string
		lose    func(n int, rec idempotency.Record) bool
		creates int
		order   bool // Place returns the order
	}{
		{"in the hook of a resend", &refused, "", func(_ int, r idempotency.Record) bool { return r.Sends == 2 }, 1, false},
		{"recording unknown", &lostAnswer, "", func(_ int, r idempotency.Record) bool { return r.State == idempotency.Unknown }, 1, false},
		{"recording rejected", nil, "ZZZ-USD", func(_ int, r idempotency.Record) bool { return r.State == idempotency.Rejected }, 1, false},
		{"recording not placed at the cap", &refused, "", func(_ int, r idempotency.Record) bool { return r.State == idempotency.NotPlaced && r.Sends > 0 }, 3, false},
		{"recording acknowledged", &lostAnswer, "", func(_ int, r idempotency.Record) bool { return r.State == idempotency.Acknowledged }, 1, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := envConfig{store: &claimStore{Store: idempotency.NewMemoryStore(), lose: tc.lose}}
				if tc.fault != nil {
					cfg.venue = venue.Config{Faults: venue.FaultPlan{Faults: []venue.Fault{*tc.fault}}}
				}
				e := newEnvWith(t, cfg)
				req := limitBuy("0.001")
				if tc.symbol != "" {
					req.Symbol = tc.symbol
				}
				cid := e.placer.ClientOrderID("k")
				o, err := e.placer.Place(context.Background(), "k", req)
				e.checkTruth(t, cid, o, err)
				if n := len(e.creates()); n != tc.creates {
					t.Fatalf("%d creates, want %d", n, tc.creates)
				}
				if tc.order {
					if err != nil {
						t.Fatalf("Place = %v; the order exists and should be returned", err)
					}
					return
				}
				var inProgress *orders.Error
				if !errors.As(err, &inProgress) || inProgress.Kind != idempotency.ErrInProgress || !errors.Is(err, broker.ErrInProgress) || !errors.Is(err, idempotency.ErrClaimLost) {
					t.Fatalf("err = %v, want an in-progress error from the lost claim", err)
				}
				if errors.Is(err, orders.ErrNotPlaced) || errors.Is(err, broker.ErrRejected) {
					t.Fatalf("err %v also says not placed or rejected", err)
				}
			})
		})
	}
	// A store that does not vouch may have lost an earlier process's
	// create: when the lookup before the first send fails, nothing is sent
	// and nothing is settled. The intent stays open (not "not placed",
	// which Recover would report as a fact) for the next lookup.
	t.Run("the lookup before the first send fails", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			store := idempotency.NewMemoryStore()
			e := newEnvWith(t, envConfig{store: store, venue: venue.Config{Faults: venue.FaultPlan{Faults: []venue.Fault{
				{Kind: "respond", Method: http.MethodGet, Path: ordersTarget, Status: 503, Times: 4}}}}})
			cid := e.placer.ClientOrderID("k")
			o, err := e.placer.Place(context.Background(), "k", limitBuy("0.001"))
			e.checkTruth(t, cid, o, err)
			if !errors.Is(err, transport.ErrNotSent) || len(e.creates()) != 0 {
				t.Fatalf("Place = %v after %d creates; want nothing sent", err, len(e.creates()))
			}
			if rec, err := store.Get(context.Background(), cid); err != nil || rec.State != idempotency.Pending {
				t.Fatalf("record = %+v, %v; want it still pending", rec, err)
			}
			rep, err := e.placer.Recover(context.Background())
			if err != nil || len(rep.NotPlaced) != 1 || len(e.creates()) != 0 {
				t.Fatalf("Recover = %+v, %v; want it looked up and, not found, settled as not placed", rep, err)
			}
		})
	})
	t.Run("Recover", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			store := &claimStore{Store: idempotency.NewMemoryStore(), lose: func(int, idempotency.Record) bool { return false }}
			e := newEnvWith(t, envConfig{store: store, venue: venue.Config{Faults: venue.FaultPlan{Faults: []venue.Fault{
				{Kind: "respond", Method: http.MethodPost, Path: ordersTarget, Status: 503}}}}})
			// Ends while Place waits for the signature to expire (40 s).
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			_, err := e.placer.Place(ctx, "k", limitBuy("0.001"))
			cancel()
			if !errors.Is(err, broker.ErrUnknownOutcome) {
				t.Fatalf("Place = %v", err)
			}
			store.mu.Lock()
			store.lose = func(_ int, r idempotency.Record) bool { return r.State == idempotency.NotPlaced }
			store.mu.Unlock()
			rep, err := e.placer.Recover(context.Background())
			if err != nil || len(rep.InProgress) != 1 || len(rep.NotPlaced) != 0 {
				t.Fatalf("Recover = %+v, %v; want the intent in progress elsewhere", rep, err)
			}
		})
	})
}

// failingStore fails the Updates fail chooses, as a store whose disk or
// connection failed.
type failingStore struct {
	idempotency.Store
	fail func(rec idempotency.Record) bool
}

var errDisk = errors.New("disk I/O error")

func (s *failingStore) Update(ctx context.Context, rec idempotency.Record) error {
	if s.fail(rec) {
		return errDisk
	}
	return s.Store.Update(ctx, rec)
}

// TestFailedStoreWrite: a write that fails for a reason other than a lost
// claim does not change what the venue said, and never turns into a
// resend.
func TestFailedStoreWrite(t *testing.T) {
	t.Run("rejected is still rejected", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnvWith(t, envConfig{store: &failingStore{Store: idempotency.NewMemoryStore(),
				fail: func(r idempotency.Record) bool { return r.State == idempotency.Rejected }}})
			req := limitBuy("0.001")
			req.Symbol = "ZZZ-USD"
			cid := e.placer.ClientOrderID("k")
			o, err := e.placer.Place(context.Background(), "k", req)
			e.checkTruth(t, cid, o, err)
			if !errors.Is(err, broker.ErrRejected) {
				t.Fatalf("err = %v, want the venue's rejection", err)
			}
		})
	})
	t.Run("an order whose acknowledgement is not recorded is returned, and found again", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnvWith(t, envConfig{store: &failingStore{Store: idempotency.NewMemoryStore(),
				fail: func(r idempotency.Record) bool { return r.State == idempotency.Acknowledged }}})
			ctx := context.Background()
			cid := e.placer.ClientOrderID("k")
			o, err := e.placer.Place(ctx, "k", limitBuy("0.001"))
			e.checkTruth(t, cid, o, err)
			if err != nil {
				t.Fatal(err)
			}
			again, err := e.placer.Place(ctx, "k", limitBuy("0.001"))
			e.checkTruth(t, cid, again, err)
			if err != nil || again.ID != o.ID || len(e.creates()) != 1 {
				t.Fatalf("Place again = %+v, %v after %d creates", again, err, len(e.creates()))
			}
		})
	})
	t.Run("a 2xx whose mark is not recorded is still never resent", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnvWith(t, envConfig{store: &failingStore{Store: idempotency.NewMemoryStore(),
				fail: func(r idempotency.Record) bool { return r.Answered2xx }},
				wrap: chain(mangleCreates(nil, func(b []byte) []byte { return b[:10] }), lagging(24*time.Hour))})
			ctx := context.Background()
			cid := e.placer.ClientOrderID("k")
			for i := 0; i < 2; i++ {
				o, err := e.placer.Place(ctx, "k", limitBuy("0.001"))
				e.checkTruth(t, cid, o, err)
				var unknown *orders.Error
				if !errors.As(err, &unknown) || unknown.Kind != transport.ErrUnknownOutcome || !unknown.Answered2xx {
					t.Fatalf("Place #%d = %v, want an unknown outcome the venue acknowledged", i+1, err)
				}
				time.Sleep(time.Hour)
			}
			rep, err := e.placer.Recover(ctx)
			if err != nil || len(rep.NotPlaced) != 0 || len(rep.Unresolved) != 1 {
				t.Fatalf("Recover = %+v, %v", rep, err)
			}
			if n := len(e.creates()); n != 1 {
				t.Fatalf("%d creates", n)
			}
		})
	})
	t.Run("not placed at the cap is still not placed", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnvWith(t, envConfig{store: &failingStore{Store: idempotency.NewMemoryStore(),
				fail: func(r idempotency.Record) bool { return r.State == idempotency.NotPlaced }},
				venue: venue.Config{Faults: venue.FaultPlan{Faults: []venue.Fault{{Kind: "respond", Method: http.MethodPost, Path: ordersTarget, Status: 503, Times: 3}}}}})
			cid := e.placer.ClientOrderID("k")
			o, err := e.placer.Place(context.Background(), "k", limitBuy("0.001"))
			e.checkTruth(t, cid, o, err)
			if !errors.Is(err, orders.ErrNotPlaced) || len(e.creates()) != 3 {
				t.Fatalf("err = %v after %d creates, want not placed after 3", err, len(e.creates()))
			}
		})
	})
}

// TestStoreThatCannotVouch: a fresh store that cannot vouch an intent is
// new (an idempotency.NewMemoryStore after a restart, a wiped Redis) meets a key whose
// order is already at the venue. Place looks before the first send and
// acknowledges it; a lookup that fails sends nothing.
func TestStoreThatCannotVouch(t *testing.T) {
	t.Run("the order is already at the venue", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, nil)
			ctx := context.Background()
			cid := e.placer.ClientOrderID("k")
			first, err := e.placer.Place(ctx, "k", limitBuy("0.001"))
			if err != nil {
				t.Fatal(err)
			}
			// Within the window of the lookup before the first send
			// (30 s + the margin + the lookback): older records a store
			// lost are beyond any lookup's reach.
			time.Sleep(time.Minute)
			amnesiac, err := newPlacer(e.tc, idempotency.NewMemoryStore(), e.srv.AccountNumber)
			if err != nil {
				t.Fatal(err)
			}
			o, err := amnesiac.Place(ctx, "k", limitBuy("0.001"))
			e.checkTruth(t, cid, o, err)
			if err != nil || o.ID != first.ID || len(e.creates()) != 1 {
				t.Fatalf("Place on a fresh store = %+v, %v after %d creates; want the existing order, nothing sent", o, err, len(e.creates()))
			}
		})
	})
	t.Run("the lookup before the first send fails", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, nil, venue.Config{Faults: venue.FaultPlan{Faults: []venue.Fault{{Kind: "respond", Method: http.MethodGet, Path: ordersTarget, Status: 503, Times: 4}}}})
			ctx := context.Background()
			cid := e.placer.ClientOrderID("k")
			o, err := e.placer.Place(ctx, "k", limitBuy("0.001"))
			e.checkTruth(t, cid, o, err)
			var notSent *orders.Error
			if !errors.As(err, &notSent) || notSent.Kind != transport.ErrNotSent || !errors.Is(err, transport.ErrUnavailable) || len(e.creates()) != 0 {
				t.Fatalf("err = %v after %d creates, want not sent, venue unavailable, with nothing sent", err, len(e.creates()))
			}
			o, err = e.placer.Place(ctx, "k", limitBuy("0.001"))
			e.checkTruth(t, cid, o, err)
			if err != nil || len(e.creates()) != 1 {
				t.Fatalf("Place again = %v after %d creates", err, len(e.creates()))
			}
		})
	})
	t.Run("a store that vouches is not looked up first", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnvWith(t, envConfig{store: boltStore(t)})
			// The first Place reads the venue's clock first, by lookup.
			if _, err := e.placer.Place(context.Background(), "k0", limitBuy("0.001")); err != nil {
				t.Fatal(err)
			}
			before := len(e.srv.Ledger().Requests())
			if _, err := e.placer.Place(context.Background(), "k", limitBuy("0.001")); err != nil {
				t.Fatal(err)
			}
			if n := len(e.srv.Ledger().Requests()) - before; n != 1 {
				t.Fatalf("%d requests, want the create alone", n)
			}
		})
	})
}

// TestLookupWindows: the lookup windows and the resend gap follow the
// venue's clock offset: with it measured (the venue's Date headers), the
// floors; without (a venue that sends no Date), the floors plus the
// largest offset the transport accepts.
func TestLookupWindows(t *testing.T) {
	noDate := func(next http.RoundTripper) http.RoundTripper {
		return rtFunc(func(r *http.Request) (*http.Response, error) {
			resp, err := next.RoundTrip(r)
			if resp != nil {
				resp.Header.Del("Date")
			}
			return resp, err
		})
	}
	for _, tc := range []struct {
		name  string
		wrap  func(http.RoundTripper) http.RoundTripper
		extra time.Duration // added to every margin while the offset is not measured
	}{
		{"the venue's clock measured", nil, 0},
		{"a venue without Date headers", noDate, transport.MaxClockOffset},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnvWith(t, envConfig{wrap: tc.wrap, venue: venue.Config{Faults: venue.FaultPlan{Faults: []venue.Fault{{Kind: "respond", Method: http.MethodPost, Path: ordersTarget, Status: 503}}}}})
				start := time.Now()
				if _, err := e.placer.Place(context.Background(), "k", limitBuy("0.001")); err != nil {
					t.Fatal(err)
				}
				var starts, sends []time.Time
				for _, r := range e.srv.Ledger().Requests() {
					if r.Method == http.MethodPost {
						sends = append(sends, r.Time)
						continue
					}
					i := strings.Index(r.Target, "created_at_start=")
					if i < 0 {
						continue
					}
					v := r.Target[i+len("created_at_start="):]
					if j := strings.IndexByte(v, '&'); j >= 0 {
						v = v[:j]
					}
					ts, err := time.Parse(time.RFC3339, strings.ReplaceAll(v, "%3A", ":"))
					if err != nil {
						t.Fatal(err)
					}
					starts = append(starts, ts)
				}
				if len(starts) < 2 || len(sends) != 2 {
					t.Fatalf("lookups from %v, creates at %v", starts, sends)
				}
				near := func(got, want time.Time) bool { d := got.Sub(want); return d > -2*time.Second && d < 2*time.Second }
				// The lookup before the first send reaches back a signature's
				// validity, the margin and the lookback, each with the
				// largest offset more while the venue's clock is not
				// measured (the trading pair's read, first, measured it,
				// unless the venue sends no Date).
				if want := start.Add(-(30*time.Second + 10*time.Second + tc.extra + 2*time.Minute + tc.extra)); !near(starts[0], want) {
					t.Errorf("the lookup before the first send starts at %v, want %v", starts[0], want)
				}
				if want := sends[0].Add(-(2*time.Minute + tc.extra)); !near(starts[1], want) {
					t.Errorf("the lookup after the send starts at %v, want %v", starts[1], want)
				}
				gap := sends[1].Sub(sends[0])
				if min := 30*time.Second + 10*time.Second + tc.extra; gap < min || gap > min+5*time.Second {
					t.Errorf("resent %v after the first send, want just over %v", gap, min)
				}
			})
		})
	}
}

// TestWaitingBehindAnotherPlace: a Place whose context ends while another
// Place of the same key runs in this process says in progress, never not
// placed: the other may be about to place it.
func TestWaitingBehindAnotherPlace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, nil, venue.Config{Faults: venue.FaultPlan{Faults: []venue.Fault{{Kind: "respond", Method: http.MethodPost, Path: ordersTarget, Status: 503}}}})
		cid := e.placer.ClientOrderID("k")
		done := make(chan error, 1)
		go func() {
			_, err := e.placer.Place(context.Background(), "k", limitBuy("0.001"))
			done <- err
		}()
		time.Sleep(time.Second) // the first Place waits for its signature to expire (40 s)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		o, err := e.placer.Place(ctx, "k", limitBuy("0.001"))
		var inProgress *orders.Error
		if !errors.As(err, &inProgress) || inProgress.Kind != idempotency.ErrInProgress || errors.Is(err, orders.ErrNotPlaced) || errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want in progress", err)
		}
		if err := <-done; err != nil {
			t.Fatalf("the first Place: %v", err)
		}
		e.checkTruth(t, cid, o, err)
		if n := len(e.creates()); n != 2 {
			t.Fatalf("%d creates, want 2 (refused, then resent once)", n)
		}
	})
}
