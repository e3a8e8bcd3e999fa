package orders_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/tradewire/tradewire/idempotency"
)

// TestAdmit: Admit judges a new key once its intent is recorded pending
// with its notional, even on a store that vouches for newness; a refusal
// settles the intent as not placed, sends no create, and is returned as
// it is; the same key placed again is judged again before it is sent.
func TestAdmit(t *testing.T) {
	var creates int
	var store idempotency.Store
	p, _, _ := placement(t, func(s idempotency.Store) idempotency.Store { store = s; return s }, func(next http.RoundTripper) http.RoundTripper {
		return rtFunc(func(r *http.Request) (*http.Response, error) {
			if isCreate(r) {
				creates++
			}
			return next.RoundTrip(r)
		})
	})
	ctx := context.Background()
	refuse := errors.New("over the limit")
	var seen []idempotency.Record
	c := handBuy
	c.Notional = "12.5"
	admit := func(err error) func(context.Context, string) error {
		return func(ctx context.Context, cid string) error {
			if cid != p.ClientOrderID("k") {
				t.Errorf("Admit(%q); want the key's client_order_id", cid)
			}
			recs, lerr := store.List(ctx, idempotency.Pending)
			if lerr != nil {
				t.Fatal(lerr)
			}
			seen = append(seen, recs...)
			return err
		}
	}
	c.Admit = admit(refuse)
	if _, err := p.Place(ctx, "k", c); !errors.Is(err, refuse) {
		t.Fatalf("Place = %v; want the refusal", err)
	}
	if creates != 0 {
		t.Fatalf("%d creates sent for a refused order", creates)
	}
	if len(seen) != 1 || seen[0].Notional != "12.5" || seen[0].ClientOrderID != p.ClientOrderID("k") {
		t.Fatalf("Admit saw %+v; want the pending intent with its notional", seen)
	}
	rec, err := store.Get(ctx, p.ClientOrderID("k"))
	if err != nil || rec.State != idempotency.NotPlaced || rec.Sends != 0 {
		t.Fatalf("the refused intent: %+v, %v; want not placed, never sent", rec, err)
	}
	seen = nil
	c.Admit = admit(nil)
	if _, err := p.Place(ctx, "k", c); err != nil {
		t.Fatal(err)
	}
	if creates != 1 || len(seen) != 1 {
		t.Fatalf("creates %d, admissions %d; want 1, 1", creates, len(seen))
	}
	// An acknowledged key is answered as it was sent: not judged again.
	c.Admit = admit(refuse)
	if _, err := p.Place(ctx, "k", c); err != nil {
		t.Fatalf("an acknowledged key: %v", err)
	}
}
