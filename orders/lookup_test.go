package orders_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/transport"
)

// holdCreates, while on, hands every create to the venue only after d, as
// a network that holds it, and tells the client at once that the
// connection dropped: an ambiguous outcome whose create lands later,
// while its signature is still valid.
func holdCreates(on *atomic.Bool, d time.Duration) func(http.RoundTripper) http.RoundTripper {
	return func(next http.RoundTripper) http.RoundTripper {
		return rtFunc(func(r *http.Request) (*http.Response, error) {
			if !isCreate(r) || !on.Load() {
				return next.RoundTrip(r)
			}
			body, err := io.ReadAll(r.Body)
			if err != nil {
				return nil, err
			}
			late := r.Clone(context.WithoutCancel(r.Context()))
			late.Body = io.NopCloser(bytes.NewReader(body))
			go func() {
				time.Sleep(d)
				if resp, err := next.RoundTrip(late); err == nil {
					resp.Body.Close()
				}
			}()
			return nil, errors.New("connection reset by peer")
		})
	}
}

// slowLists, while on, answers each page of the orders list d after the
// venue made it (with a Date header of when it is sent): a read that takes
// that long, whose pages show the list as it was when each was asked for.
func slowLists(on *atomic.Bool, d time.Duration) func(http.RoundTripper) http.RoundTripper {
	return func(next http.RoundTripper) http.RoundTripper {
		return rtFunc(func(r *http.Request) (*http.Response, error) {
			resp, err := next.RoundTrip(r)
			if err == nil && isList(r) && on.Load() {
				time.Sleep(d)
				resp.Header.Set("Date", time.Now().UTC().Format(http.TimeFormat))
			}
			return resp, err
		})
	}
}

// TestReadStraddlingTheExpiry: a create is held in the network and lands
// 25 s after it was signed; the read that follows the dropped connection
// asks for its page before the create lands and gets it 45 s later, after
// every signature has expired. That read's "not found" was true when it
// began, not when it ended: the Placer reads again, finds the order, and
// never sends the create twice (the venue would make a second order).
func TestReadStraddlingTheExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var holding, slow atomic.Bool
		e := newEnvWith(t, envConfig{store: boltStore(t),
			wrap:      chain(holdCreates(&holding, 25*time.Second), slowLists(&slow, 45*time.Second)),
			transport: transport.Config{AttemptTimeout: time.Minute}})
		ctx := context.Background()
		if _, err := e.placer.Place(ctx, "warm-up", limitBuy("0.001")); err != nil {
			t.Fatal(err)
		}
		holding.Store(true)
		slow.Store(true)
		cid := e.placer.ClientOrderID("k")
		o, err := e.placer.Place(ctx, "k", limitBuy("0.001"))
		e.checkTruth(t, cid, o, err)
		if err != nil {
			t.Fatalf("Place = %v; the second read should have found the order", err)
		}
		if n := len(e.creates()); n != 2 {
			t.Fatalf("the venue received %d creates, want 2 (the warm-up's and the held one): the key's was sent again", n)
		}
	})
}

// TestBurstOfOneSymbol: a store that does not vouch (memory) looks every
// key up before its first send, so each Place reads the symbol's list of
// the last few minutes. 250 Places of one symbol in a burst, within the
// venue's rate budget, fill that list to exactly 100 and 200 rows (full
// last pages without a next link) on the way: each is confirmed by one
// narrower read, and every Place succeeds with one order per key. Each
// Place costs the create and the pages its window holds.
func TestBurstOfOneSymbol(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, idempotency.NewMemoryStore())
		ctx := context.Background()
		const n = 250
		perPlace := make([]int, n)
		for i := range n {
			before := len(e.srv.Ledger().Requests())
			key := fmt.Sprintf("burst-%d", i)
			cid := e.placer.ClientOrderID(key)
			o, err := e.placer.Place(ctx, key, limitBuy("0.001"))
			e.checkTruth(t, cid, o, err)
			if err != nil {
				t.Fatalf("Place #%d = %v", i+1, err)
			}
			perPlace[i] = len(e.srv.Ledger().Requests()) - before
			// A bot's Places are a round trip apart at least, so no two
			// orders share a creation time.
			time.Sleep(20 * time.Millisecond)
		}
		if c := len(e.creates()); c != n {
			t.Fatalf("%d creates for %d keys", c, n)
		}
		total, most, confirmations := 0, 0, 0
		for _, r := range e.srv.Ledger().Requests() {
			if strings.Contains(r.Target, "created_at_end=") {
				confirmations++
			}
		}
		for _, k := range perPlace {
			total += k
			most = max(most, k)
		}
		if confirmations == 0 {
			t.Fatal("no full last page was confirmed: the burst did not reach a multiple of the page size")
		}
		t.Logf("%d Places: %d requests (%.2f a Place, at most %d), %d of them confirming reads", n, total, float64(total)/n, most, confirmations)
	})
}
