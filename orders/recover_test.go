package orders_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tradewire/tradewire/broker"
	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/orders"
	"github.com/tradewire/tradewire/signing"
	"github.com/tradewire/tradewire/transport"
	"github.com/tradewire/tradewire/venue"
)

// Tests of Recover's shared lookup: the open intents of one symbol are
// looked up with one read of the orders list, on the venue every env uses,
// which makes a second order for a reused client_order_id. Each test then
// places every key again: an intent Recover wrongly settled as not placed
// would be created a second time.

// diesAfterSend plays the store of a process that dies after each send,
// once dying is set: it records the time of a create's first signature
// (the hook before the send), and nothing after that.
type diesAfterSend struct {
	idempotency.Store
	dying *atomic.Bool
}

// VouchesNew is the bolt store's: it vouches that a new intent is new.
func (s *diesAfterSend) VouchesNew() bool { return true }

func (s *diesAfterSend) Update(ctx context.Context, rec idempotency.Record) error {
	if s.dying.Load() && (rec.State != idempotency.Pending || rec.Sends != 1) {
		return errCrashed
	}
	return s.Store.Update(ctx, rec)
}

// dead, once on, fails every request before it reaches the venue: the
// process is gone, and only what it sent before can land.
func dead(on *atomic.Bool) func(http.RoundTripper) http.RoundTripper {
	return func(next http.RoundTripper) http.RoundTripper {
		return rtFunc(func(r *http.Request) (*http.Response, error) {
			if on.Load() {
				return nil, errors.New("the process is gone")
			}
			return next.RoundTrip(r)
		})
	}
}

// refuseCreates answers a create whose body names a client_order_id in
// refused with a 503 before the venue sees it: not committed.
func refuseCreates(mu *sync.Mutex, refused map[string]bool) func(http.RoundTripper) http.RoundTripper {
	return func(next http.RoundTripper) http.RoundTripper {
		return rtFunc(func(r *http.Request) (*http.Response, error) {
			if !isCreate(r) {
				return next.RoundTrip(r)
			}
			body, err := io.ReadAll(r.Body)
			if err != nil {
				return nil, err
			}
			mu.Lock()
			refuse := false
			for cid := range refused {
				if bytes.Contains(body, []byte(`"`+cid+`"`)) {
					refuse = true
				}
			}
			mu.Unlock()
			if !refuse {
				r.Body = io.NopCloser(bytes.NewReader(body))
				return next.RoundTrip(r)
			}
			b := `{"type":"server_error","errors":[{"detail":"unavailable","attr":null}]}`
			return &http.Response{StatusCode: http.StatusServiceUnavailable, Status: "503 Service Unavailable",
				Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Request: r, ContentLength: int64(len(b)),
				Header: http.Header{"Content-Type": {"application/json"}, "Date": {time.Now().UTC().Format(http.TimeFormat)}},
				Body:   io.NopCloser(strings.NewReader(b))}, nil
		})
	}
}

// process is a new process on the env's venue: its own transport (wrap
// between it and the venue) and Placer, on store.
func (e *env) process(t *testing.T, store idempotency.Store, wrap func(http.RoundTripper) http.RoundTripper, cfg ...orders.Config) *broker.Client {
	t.Helper()
	key, err := signing.ParsePrivateKey(e.srv.PrivateKeyBase64)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := signing.New(e.srv.APIKey, key)
	if err != nil {
		t.Fatal(err)
	}
	rt := e.srv.Client().Transport
	if wrap != nil {
		rt = wrap(rt)
	}
	tc, err := transport.New(e.srv.URL, signer, transport.Config{RoundTripper: rt, AttemptTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	for _, old := range e.procs {
		old.kill()
	}
	ps := newProcStore(store)
	e.procs = append(e.procs, ps)
	p, err := newPlacer(tc, ps, e.srv.AccountNumber, cfg...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// crash is what processes that died left: intents of keys, each sent
// once, whose creates the venue committed (committed[key]) or refused
// before committing, and a store that recorded each send and no outcome.
type crash struct {
	e         *env
	store     idempotency.Store // the store they left
	keys      []string
	committed map[string]bool
}

// crashAfterSends makes an env on a bolt store, places background orders
// through its Placer, and then has a process on the same store place k
// keys at once and die after each is sent (crashOn).
func crashAfterSends(t *testing.T, prefix string, k, background int, cfg envConfig) *crash {
	t.Helper()
	cfg.store = boltStore(t)
	e := newEnvWith(t, cfg)
	for i := 0; i < background; i++ {
		if _, err := e.placer.Place(context.Background(), fmt.Sprintf("background-%d", i), limitBuy("0.001")); err != nil {
			t.Fatal(err)
		}
	}
	c := &crash{e: e, store: cfg.store, committed: map[string]bool{}}
	c.crashOn(t, prefix, k, even)
	return c
}

func even(i int) bool { return i%2 == 0 }

// crashOn starts a process on the crash's store, has it place k keys
// (prefix-0, prefix-1, …) at once, and kills it once every create is
// sent: key i is committed when commit(i), and otherwise refused (503,
// nothing at the venue). The process records each send and no outcome,
// and nothing it sends after its death reaches the venue.
func (c *crash) crashOn(t *testing.T, prefix string, k int, commit func(int) bool) {
	t.Helper()
	var gone atomic.Bool
	var mu sync.Mutex
	refused := map[string]bool{}
	dying := &atomic.Bool{}
	dying.Store(true)
	p := c.e.process(t, &diesAfterSend{Store: c.store, dying: dying}, chain(refuseCreates(&mu, refused), dead(&gone)))
	ctx := context.Background()
	if _, err := p.Account(ctx); err != nil { // reads the venue's clock
		t.Fatal(err)
	}
	var keys []string
	for i := 0; i < k; i++ {
		key := fmt.Sprintf("%s-%d", prefix, i)
		keys = append(keys, key)
		if commit(i) {
			c.committed[key] = true
		} else {
			refused[p.ClientOrderID(key)] = true
		}
	}
	var wg sync.WaitGroup
	for _, key := range keys {
		wg.Go(func() { _, _ = p.Place(ctx, key, limitBuy("0.001")) })
	}
	synctest.Wait() // every create sent; the refused ones wait to look again
	gone.Store(true)
	t.Cleanup(wg.Wait)
	for _, key := range keys {
		rec, err := c.store.Get(ctx, p.ClientOrderID(key))
		if err != nil || rec.State != idempotency.Pending || rec.Sends != 1 {
			t.Fatalf("intent %s after the crash: %+v, %v; want pending, sent once", key, rec, err)
		}
	}
	c.keys = append(c.keys, keys...)
}

// lists counts the reads of the orders list the venue received since
// request number from.
func (e *env) lists(from int) int {
	n := 0
	for _, r := range e.srv.Ledger().Requests()[from:] {
		if r.Method == http.MethodGet && strings.HasPrefix(r.Target, ordersTarget+"?") {
			n++
		}
	}
	return n
}

// placeAgain places every key again through p and checks that each has
// exactly one order at the venue.
func (c *crash) placeAgain(t *testing.T, p *broker.Client) {
	t.Helper()
	for _, key := range c.keys {
		cid := p.ClientOrderID(key)
		o, err := p.Place(context.Background(), key, limitBuy("0.001"))
		c.e.checkTruth(t, cid, o, err)
		if err != nil {
			t.Fatalf("Place %s again: %v", key, err)
		}
		if n := c.e.liveOrders(cid); n != 1 {
			t.Fatalf("%d orders for key %s", n, key)
		}
	}
}

// TestRecoverSharesOneRead: K intents of one symbol, half committed, half
// refused before commit, all sent moments before the restart. Recover
// reads the list once for all of them, acknowledges the committed, waits
// for the others' signatures to expire and reads once more: two reads
// whatever K, each intent settled truly.
func TestRecoverSharesOneRead(t *testing.T) {
	for _, k := range []int{1, 2, 10, 40} {
		t.Run(fmt.Sprint(k), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := crashAfterSends(t, "k", k, 3, envConfig{})
				ctx := context.Background()
				before := len(c.e.srv.Ledger().Requests())
				restarted := c.e.process(t, c.store, nil)
				rep, err := restarted.Recover(ctx)
				if err != nil {
					t.Fatal(err)
				}
				reads := c.e.lists(before)
				if n := len(c.e.srv.Ledger().Requests()) - before; n != reads {
					t.Fatalf("Recover sent %d requests, %d of them reads of the list", n, reads)
				}
				wantReads := 2 // the refused wait for their signatures to expire
				if k == 1 {
					wantReads = 1 // committed: found at once
				}
				if reads != wantReads {
					t.Fatalf("Recover read the list %d times for %d intents, want %d", reads, k, wantReads)
				}
				acked := (k + 1) / 2
				if len(rep.Acknowledged) != acked || len(rep.NotPlaced) != k-acked || len(rep.Unresolved)+len(rep.InProgress)+len(rep.Rejected) != 0 {
					t.Fatalf("Recover = %d acknowledged, %d not placed, %d unresolved, %d in progress; want %d and %d",
						len(rep.Acknowledged), len(rep.NotPlaced), len(rep.Unresolved), len(rep.InProgress), acked, k-acked)
				}
				for _, rec := range rep.Acknowledged {
					if !c.committed[rec.Key] || rec.OrderID == "" {
						t.Fatalf("acknowledged %+v, which the venue did not commit", rec)
					}
				}
				for _, rec := range rep.NotPlaced {
					if c.committed[rec.Key] {
						t.Fatalf("not placed %s, which the venue holds", rec.Key)
					}
					if gap := rec.UpdatedAt.Sub(rec.LastSignedAt); gap < signing.ValidFor+10*time.Second {
						t.Fatalf("%s settled not placed %v after its signature, before it expired", rec.Key, gap)
					}
				}
				c.placeAgain(t, restarted)
			})
		})
	}
}

// TestRecoverIncompleteSharedRead: the list shows a row without a
// client_order_id on every read, so no read can see every order. Recover
// acknowledges the intents it finds, and concludes nothing of the others:
// each stays unresolved, never not placed, however long it waits.
func TestRecoverIncompleteSharedRead(t *testing.T) {
	cases := []struct {
		name  string
		found int // the committed intents a read still finds
		edit  func(pg *listPage) []byte
	}{
		{"a row without client_order_id", 3, func(pg *listPage) []byte {
			pg.Results = append(pg.Results, map[string]json.RawMessage{"id": json.RawMessage(`"00000000-0000-4000-8000-000000000001"`), "symbol": json.RawMessage(`"BTC-USD"`)})
			return nil
		}},
		{"a row that does not decode", 3, func(pg *listPage) []byte {
			pg.Results = append(pg.Results, map[string]json.RawMessage{"id": json.RawMessage(`7`), "client_order_id": json.RawMessage(`[]`)})
			return nil
		}},
		{"a page that does not decode", 0, func(*listPage) []byte { return []byte(`{"next":null,"results":[{`) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := crashAfterSends(t, "k", 6, 0, envConfig{})
				var hostile atomic.Bool
				hostile.Store(true)
				restarted := c.e.process(t, c.store, editLists(func(_ int, pg *listPage) []byte {
					if !hostile.Load() {
						return nil
					}
					return tc.edit(pg)
				}))
				ctx := context.Background()
				for round := 0; round < 2; round++ {
					rep, err := restarted.Recover(ctx)
					if err != nil {
						t.Fatal(err)
					}
					open := 6 - tc.found
					if round == 0 {
						if len(rep.Acknowledged) != tc.found {
							t.Fatalf("Recover acknowledged %d, want the %d it found", len(rep.Acknowledged), tc.found)
						}
					}
					if len(rep.NotPlaced) != 0 || len(rep.Unresolved) != open {
						t.Fatalf("Recover #%d = %d not placed, %d unresolved; want 0 and %d", round+1, len(rep.NotPlaced), len(rep.Unresolved), open)
					}
					for _, rec := range rep.Unresolved {
						if c.committed[rec.Key] && tc.found > 0 {
							t.Fatalf("%s is unresolved; the read that could not see every order still found it", rec.Key)
						}
						if rec.State != idempotency.Pending {
							t.Fatalf("%s is recorded %s", rec.Key, rec.State)
						}
					}
					time.Sleep(time.Hour)
				}
				hostile.Store(false)
				c.placeAgain(t, restarted)
			})
		})
	}
}

// TestRecoverPageCapNarrows: an intent sent long ago reaches back over
// more pages than a read may take; the intents sent just before the
// restart reach back over one. The widest read stops at the cap, so it
// leaves every intent it did not find open, but narrower reads are made
// for the others, and settle them.
func TestRecoverPageCapNarrows(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := crashAfterSends(t, "old", 2, 0, envConfig{venue: venue.Config{PageSize: 3}})
		ctx := context.Background()
		// An hour later: other orders, then two more intents left by a
		// crash. The old intents' windows hold the other orders; the new
		// ones' do not.
		time.Sleep(time.Hour)
		others := c.e.process(t, c.store, nil)
		if _, err := others.Account(ctx); err != nil { // reads the venue's clock
			t.Fatal(err)
		}
		for i := 0; i < 6; i++ {
			if _, err := others.Place(ctx, fmt.Sprintf("other-%d", i), limitBuy("0.001")); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(time.Hour)
		c.crashOn(t, "new", 2, even)
		before := len(c.e.srv.Ledger().Requests())
		restarted := c.e.process(t, c.store, nil, orders.Config{LookupPageCap: 1})
		rep, err := restarted.Recover(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, set := range []struct {
			name string
			recs []idempotency.Record
		}{{"acknowledged", rep.Acknowledged}, {"not placed", rep.NotPlaced}, {"unresolved", rep.Unresolved}, {"in progress", rep.InProgress}} {
			for _, rec := range set.recs {
				got[rec.Key] = set.name
			}
		}
		// The old intents lie beyond the cap's one page: unresolved, as
		// each one's own lookup would leave it. The new ones are settled
		// by a read of their own window, which fits on one page.
		want := map[string]string{"old-0": "unresolved", "old-1": "unresolved", "new-0": "acknowledged", "new-1": "not placed"}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("Recover settled %v; want %v", got, want)
		}
		for _, rec := range rep.Unresolved {
			if rec.State != idempotency.Pending {
				t.Fatalf("%s is recorded %s", rec.Key, rec.State)
			}
		}
		// The widest read, capped; a read of the new intents' window; a
		// second read of it once new-1's signature has expired.
		if n := c.e.lists(before); n != 3 {
			t.Fatalf("Recover read the list %d times, want 3", n)
		}
		uncapped := c.e.process(t, c.store, nil)
		c.placeAgain(t, uncapped)
	})
}

// TestRecoverReadStraddlingTheExpiry: a process dies after sending a
// create that the network holds; it lands 25 s after it was signed. The
// restarted process's first read asks for its page before that and gets
// it 45 s later, after the signature expired: not found, but only as of
// when the read began. Recover reads again and finds the order; settling
// it as not placed would let Place create it a second time.
func TestRecoverReadStraddlingTheExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnvWith(t, envConfig{store: boltStore(t)})
		var holding, gone, slow atomic.Bool
		holding.Store(true)
		dying := &atomic.Bool{}
		dying.Store(true)
		p := e.process(t, &diesAfterSend{Store: e.store, dying: dying}, chain(holdCreates(&holding, 25*time.Second), dead(&gone)))
		ctx := context.Background()
		if _, err := p.Account(ctx); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		wg.Go(func() { _, _ = p.Place(ctx, "k", limitBuy("0.001")) })
		synctest.Wait() // sent, dropped, looked up once; waiting to look again
		gone.Store(true)
		defer wg.Wait()
		slow.Store(true)
		restarted := e.process(t, e.store, slowLists(&slow, 45*time.Second))
		rep, err := restarted.Recover(ctx)
		if err != nil || len(rep.Acknowledged) != 1 || len(rep.NotPlaced) != 0 {
			t.Fatalf("Recover = %+v, %v; want the order found by a read begun after the expiry", rep, err)
		}
		slow.Store(false)
		c := &crash{e: e, store: e.store, keys: []string{"k"}, committed: map[string]bool{"k": true}}
		c.placeAgain(t, restarted)
	})
}

// TestRecoverRequests reports what Recover sends for K = 1, 10 and 100
// open intents of one symbol, left by a process that died just after
// sending them: every other one committed, the rest refused (intent 0 is
// refused, so K = 1 needs both reads), over a window of 120 other orders
// and the committed ones, in pages of 100. Each read of the window is 2
// pages; the refused wait for their signatures to expire and are read
// for once more: 2 reads, 4 requests, whatever K.
//
//	go test -run TestRecoverRequests -v ./orders/
func TestRecoverRequests(t *testing.T) {
	var got []int
	for _, k := range []int{1, 10, 100} {
		t.Run(fmt.Sprint(k), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := crashAfterSends(t, "k", 0, 120, envConfig{})
				c.crashOn(t, "k", k, func(i int) bool { return i%2 == 1 })
				before := len(c.e.srv.Ledger().Requests())
				restarted := c.e.process(t, c.store, nil)
				rep, err := restarted.Recover(context.Background())
				if err != nil || len(rep.Acknowledged) != k/2 || len(rep.NotPlaced) != k-k/2 {
					t.Fatalf("Recover = %d acknowledged, %d not placed, %d unresolved, %v", len(rep.Acknowledged), len(rep.NotPlaced), len(rep.Unresolved), err)
				}
				sent := c.e.srv.Ledger().Requests()[before:]
				reads := 0
				for _, r := range sent {
					if r.Method != http.MethodGet || !strings.HasPrefix(r.Target, ordersTarget+"?") {
						t.Fatalf("Recover sent %s %s", r.Method, r.Target)
					}
					if !strings.Contains(r.Target, "cursor=") {
						reads++
					}
				}
				t.Logf("K = %3d open intents: %d requests (%d reads of the list, %d orders in the window)", k, len(sent), reads, 120+k/2)
				got = append(got, len(sent))
				c.placeAgain(t, restarted)
			})
		})
	}
	for _, n := range got {
		if n != got[0] {
			t.Fatalf("requests for K = 1, 10, 100: %v; want them equal", got)
		}
	}
}
