package orders_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/tradewire/tradewire/broker"
	"github.com/tradewire/tradewire/idempotency"
)

// TestCompactedAcknowledgedKey: the bolt store compacts an intent once it
// settles (no order JSON, no body), and a key acknowledged before still
// answers true: Place returns its order, read by its id, and sends no
// create; a different request under the key is refused with the order
// it names; and when the order cannot be read, the answer is unknown,
// never "not placed" or "rejected", and nothing is sent.
func TestCompactedAcknowledgedKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var failReads atomic.Bool
		e := newEnvWith(t, envConfig{store: boltStore(t), wrap: func(next http.RoundTripper) http.RoundTripper {
			return rtFunc(func(r *http.Request) (*http.Response, error) {
				if failReads.Load() && r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, ordersTarget) && r.URL.Path != ordersTarget {
					return nil, errors.New("connection reset")
				}
				return next.RoundTrip(r)
			})
		}})
		ctx := context.Background()
		first, err := e.placer.Place(ctx, "k", limitBuy("0.001"))
		if err != nil {
			t.Fatal(err)
		}
		cid := e.placer.ClientOrderID("k")
		rec, err := e.store.Get(ctx, cid)
		if err != nil || rec.State != idempotency.Acknowledged || rec.Order != nil || rec.Body != nil || rec.OrderID != first.ID {
			t.Fatalf("record = %+v, %v; want it acknowledged and compacted, with the order's id", rec, err)
		}
		creates := len(e.creates())

		again, err := e.placer.Place(ctx, "k", limitBuy("0.001"))
		if err != nil || again.ID != first.ID {
			t.Fatalf("Place again = %+v, %v; want order %s", again, err, first.ID)
		}
		_, err = e.placer.Place(ctx, "k", limitBuy("0.002"))
		if !errors.Is(err, broker.ErrInvalidRequest) || !strings.Contains(err.Error(), first.ID) {
			t.Fatalf("Place with another request = %v; want ErrInvalidRequest naming order %s", err, first.ID)
		}
		failReads.Store(true)
		o, err := e.placer.Place(ctx, "k", limitBuy("0.001"))
		if o != nil || !errors.Is(err, broker.ErrUnknownOutcome) || errors.Is(err, broker.ErrNotPlaced) || errors.Is(err, broker.ErrRejected) {
			t.Fatalf("Place when the order cannot be read = %v, %v; want unknown", o, err)
		}
		if n := len(e.creates()); n != creates {
			t.Fatalf("%d creates sent for an acknowledged key", n-creates)
		}
		if n := e.liveOrders(cid); n != 1 {
			t.Fatalf("%d orders for the key", n)
		}
	})
}
