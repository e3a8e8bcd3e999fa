package orders_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shopspring/decimal"

	"github.com/tradewire/tradewire/broker"
	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/orders"
	"github.com/tradewire/tradewire/transport"
	"github.com/tradewire/tradewire/venue"
)

// Answers that contradict themselves, or say "failed" of a live order,
// are never a verdict: a caller told "rejected" may place again under a
// new key, and the venue would then hold two live orders.

// TestCreateAnswerNotAVerdict: the venue commits the create (a live,
// open order) and its 2xx says otherwise: a repeated or case-variant
// "state":"failed", a plain "failed", a repeated or case-variant id.
// Place never answers rejected and never records the intent rejected: a
// lookup settles it with the row the list shows (its id), or, while the
// list does not show it, it stays unknown with Answered2xx, never sent
// again.
func TestCreateAnswerNotAVerdict(t *testing.T) {
	const other = `"00000000-0000-4000-8000-000000000000"`
	mangles := []struct {
		name   string
		mangle func([]byte) []byte
	}{
		{"state repeated", func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"state":"open"`), []byte(`"state":"open","state":"failed"`), 1)
		}},
		{"STATE", func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"state":"open"`), []byte(`"state":"open","STATE":"failed"`), 1)
		}},
		{"state failed", func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"state":"open"`), []byte(`"state":"failed"`), 1)
		}},
		{"id repeated", func(b []byte) []byte { return bytes.Replace(b, []byte(`"id":`), []byte(`"id":`+other+`,"id":`), 1) }},
		{"ID", func(b []byte) []byte { return bytes.Replace(b, []byte(`"id":`), []byte(`"ID":`+other+`,"id":`), 1) }},
		{"negative filled_asset_quantity", func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"filled_asset_quantity":"`), []byte(`"filled_asset_quantity":"-1`), 1)
		}},
	}
	for _, m := range mangles {
		for _, listed := range []bool{true, false} {
			name := m.name + "/listed"
			if !listed {
				name = m.name + "/list lags an hour"
			}
			t.Run(name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					mangled := false
					wraps := []func(http.RoundTripper) http.RoundTripper{mangleCreates(nil, func(b []byte) []byte {
						out := m.mangle(b)
						mangled = !bytes.Equal(out, b)
						return out
					})}
					if !listed {
						wraps = append(wraps, lagging(time.Hour))
					}
					e := newEnvWith(t, envConfig{store: boltStore(t), wrap: chain(wraps...)})
					ctx := context.Background()
					cid := e.placer.ClientOrderID("k")
					o, err := e.placer.Place(ctx, "k", limitBuy("0.001"))
					e.checkTruth(t, cid, o, err)
					if !mangled {
						t.Fatal("the mangle did not apply to the venue's answer")
					}
					held := e.srv.Ledger().OrdersByClientID(cid)
					if len(held) != 1 || held[0].State != "open" || len(e.creates()) != 1 {
						t.Fatalf("the venue holds %+v after %d creates; want one open order", held, len(e.creates()))
					}
					if errors.Is(err, broker.ErrRejected) {
						t.Fatalf("Place = %v: rejected while the order is live", err)
					}
					rec, _ := e.store.Get(ctx, cid)
					if listed {
						if err != nil || o.ID != held[0].ID || rec.State != idempotency.Acknowledged || rec.OrderID != held[0].ID {
							t.Fatalf("Place = %+v, %v; intent %s (order %s); want the venue's order %s acknowledged", o, err, rec.State, rec.OrderID, held[0].ID)
						}
						return
					}
					var unknown *orders.Error
					if !errors.As(err, &unknown) || unknown.Kind != transport.ErrUnknownOutcome || !unknown.Answered2xx || rec.State != idempotency.Unknown {
						t.Fatalf("Place = %v, intent %s; want an unknown outcome the venue answered 2xx", err, rec.State)
					}
				})
			})
		}
	}
}

// TestFailedCreateConfirmed: a create the account cannot cover is
// answered 201 in state failed. Place answers rejected once a lookup shows
// the order failed, and records it so; while the list does not show it,
// it is unknown.
func TestFailedCreateConfirmed(t *testing.T) {
	huge := limitBuy("1") // 1,000 USD, on an account holding 10
	for _, listed := range []bool{true, false} {
		name := "listed"
		var wrap func(http.RoundTripper) http.RoundTripper
		if !listed {
			name, wrap = "list lags an hour", lagging(time.Hour)
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				lists := 0
				count := func(next http.RoundTripper) http.RoundTripper {
					return rtFunc(func(r *http.Request) (*http.Response, error) {
						if isList(r) {
							lists++
						}
						return next.RoundTrip(r)
					})
				}
				if wrap != nil {
					count = chain(count, wrap)
				}
				e := newEnvWith(t, envConfig{store: boltStore(t), wrap: count,
					venue: venue.Config{BuyingPower: decimal.RequireFromString("10")}})
				ctx := context.Background()
				if _, err := e.placer.Place(ctx, "warm-up", limitBuy("0.001")); err != nil {
					t.Fatal(err)
				}
				before := lists
				cid := e.placer.ClientOrderID("k")
				o, err := e.placer.Place(ctx, "k", huge)
				e.checkTruth(t, cid, o, err)
				held := e.srv.Ledger().OrdersByClientID(cid)
				if len(held) != 1 || held[0].State != "failed" {
					t.Fatalf("the venue holds %+v; want one failed order", held)
				}
				if lists == before {
					t.Fatal("no lookup confirmed the failed state")
				}
				rec, _ := e.store.Get(ctx, cid)
				if listed {
					if !errors.Is(err, broker.ErrRejected) || rec.State != idempotency.Rejected || rec.OrderID != held[0].ID {
						t.Fatalf("Place = %v, intent %s (order %s); want rejected", err, rec.State, rec.OrderID)
					}
					return
				}
				if !errors.Is(err, broker.ErrUnknownOutcome) || rec.State != idempotency.Unknown {
					t.Fatalf("Place = %v, intent %s; want unknown until the list shows the order", err, rec.State)
				}
			})
		})
	}
}

// TestListedTwice: after an ambiguous create (committed, its answer lost)
// the list shows our client_order_id twice, a failed copy before the live
// order. Place acknowledges the live order, never rejected.
func TestListedTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lost := venue.Fault{Kind: "lose_response", Method: http.MethodPost, Path: ordersTarget, Status: 503, Times: 1}
		var cid string
		e := newEnvWith(t, envConfig{store: boltStore(t), wrap: editLists(func(_ int, pg *listPage) []byte {
			for i, row := range pg.Results {
				if string(row["client_order_id"]) != `"`+cid+`"` {
					continue
				}
				fake := map[string]json.RawMessage{}
				for k, v := range row {
					fake[k] = v
				}
				fake["id"] = json.RawMessage(`"00000000-0000-4000-8000-000000000000"`)
				fake["state"] = json.RawMessage(`"failed"`)
				pg.Results = append(pg.Results[:i:i], append([]map[string]json.RawMessage{fake}, pg.Results[i:]...)...)
				break
			}
			return nil
		})})
		ctx := context.Background()
		if _, err := e.placer.Place(ctx, "warm-up", limitBuy("0.001")); err != nil {
			t.Fatal(err)
		}
		if err := e.srv.Inject(lost); err != nil {
			t.Fatal(err)
		}
		cid = e.placer.ClientOrderID("k")
		o, err := e.placer.Place(ctx, "k", limitBuy("0.001"))
		e.checkTruth(t, cid, o, err)
		if err != nil || len(e.creates()) != 2 {
			t.Fatalf("Place = %v after %d creates; want the live order, sent once", err, len(e.creates()))
		}
	})
}

// TestShiftedPages: a store that does not vouch looks a key up before its
// first send, and the key's order is already at the venue (its record was
// lost), on the list's second page. That page comes back as a repeat of
// the first, as when the pages shift under a read: the repeated rows make
// the read incomplete, so nothing is sent (the venue would make a second
// order), where a read taken as whole would say "absent".
func TestShiftedPages(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var cid string
		shift := false
		var first []map[string]json.RawMessage
		e := newEnvWith(t, envConfig{store: boltStore(t), venue: venue.Config{PageSize: 2},
			wrap: editLists(func(_ int, pg *listPage) []byte {
				if pg.Previous == nil {
					first = append(first[:0], pg.Results...)
					return nil
				}
				for _, row := range pg.Results {
					if shift && string(row["client_order_id"]) == `"`+cid+`"` {
						pg.Results = append([]map[string]json.RawMessage(nil), first...)
						break
					}
				}
				return nil
			})})
		ctx := context.Background()
		cid = e.placer.ClientOrderID("k")
		for _, key := range []string{"older", "k", "newer-1", "newer-2", "newer-3"} {
			if _, err := e.placer.Place(ctx, key, limitBuy("0.001")); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Second)
		}
		amnesiac, err := newPlacer(e.tc, idempotency.NewMemoryStore(), e.srv.AccountNumber)
		if err != nil {
			t.Fatal(err)
		}
		shift = true
		o, err := amnesiac.Place(ctx, "k", limitBuy("0.001"))
		e.checkTruth(t, cid, o, err)
		if !errors.Is(err, transport.ErrNotSent) || !errors.Is(err, orders.ErrLookupIncomplete) {
			t.Fatalf("Place = %v, want not sent after an incomplete lookup", err)
		}
	})
}
