package venue

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"time"
)

// Hostile is the venue's hostile modes, each off at its zero value; the
// zero Hostile is a well-behaved venue. The orders list's lag, omissions
// and dropped links apply to GET .../orders/ only: GET .../orders/{id}/
// always shows the order as it is now, with its client_order_id.
type Hostile struct {
	// ClockOffset moves the venue's own notion of now from its clock:
	// now = clock + ClockOffset, positive when the venue is ahead. It
	// governs the 30 s signature window, every timestamp the venue writes
	// (created_at, updated_at, best_bid_ask), the prices, and the Date
	// header it sets on every answer.
	ClockOffset time.Duration
	// ListLag makes the orders list show the account as it was ListLag
	// ago on the venue's clock, as a lagging index does: an order created
	// since is not listed, and one updated since (a fill, a cancel
	// settling, an expiry) is listed as it was then, with that state,
	// filled_asset_quantity, executions, fee_charged and updated_at; the
	// list's filters (state, updated_at_start, …) apply to what it shows.
	// GET .../orders/{id}/ shows the order as it is now. 0 is no lag.
	ListLag time.Duration
	// OmitClientOrderID is the fraction, in [0, 1], of the orders whose
	// list rows lack the client_order_id field; 1 is every row. Which
	// orders are chosen is a function of the seed and the order's id, so
	// an order that lacks it lacks it on every list.
	OmitClientOrderID float64
	// DropNext is the probability, in [0, 1], that a page of the orders
	// list that should carry a "next" link carries null instead; 1 is
	// every such page. The draws come from an RNG seeded with the seed.
	DropNext float64
}

func (h Hostile) validate() error {
	if h.ListLag < 0 {
		return fmt.Errorf("venue: hostile list_lag %v is negative", h.ListLag)
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"omit_client_order_id", h.OmitClientOrderID}, {"drop_next", h.DropNext}} {
		if !(f.v >= 0 && f.v <= 1) {
			return fmt.Errorf("venue: hostile %s %v is outside [0, 1]", f.name, f.v)
		}
	}
	return nil
}

// now is the venue's own notion of the time: its clock plus the offset.
func (v *engine) now() time.Time {
	return v.clock.Now().Add(time.Duration(v.offset.Load()))
}

// omitted reports whether the order's list rows lack client_order_id.
// Caller holds mu.
func (v *engine) omitted(id string) bool {
	f := v.hostile.OmitClientOrderID
	if f <= 0 {
		return false
	}
	if f >= 1 {
		return true
	}
	h := fnv.New64a()
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], v.seed)
	h.Write(b[:])
	h.Write([]byte(id))
	return float64(h.Sum64()>>11)/float64(1<<53) < f
}

// dropNext draws whether a page that has a next link loses it. Caller
// holds mu.
func (v *engine) dropNext() bool {
	switch p := v.hostile.DropNext; {
	case p <= 0:
		return false
	case p >= 1:
		return true
	default:
		return v.hostileRNG.Float64() < p
	}
}

// withoutClientOrderID re-encodes an order's JSON without the field.
func withoutClientOrderID(o orderJSON) json.RawMessage {
	b, _ := json.Marshal(o)
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return b
	}
	delete(m, "client_order_id")
	out, _ := json.Marshal(m)
	return out
}

// badBody rewrites the 2xx answer to a committed create as the fault
// says: cut short, another order's JSON, or the order's own JSON under
// another client_order_id. Caller holds mu.
func (v *engine) badBody(kind faultKind, rep *reply, o *order, now time.Time) {
	switch kind {
	case faultTruncatedBody:
		rep.body = rep.body[:len(rep.body)/2]
	case faultOtherOrderBody:
		// The newest other order of the account, or, if it has none, a
		// made-up one that the venue does not hold.
		var other orderJSON
		found := false
		for i := len(v.orders) - 1; i >= 0; i-- {
			if p := v.orders[i]; p != o && p.account == o.account {
				other, found = v.orderJSON(p, now), true
				break
			}
		}
		if !found {
			other = v.orderJSON(o, now)
			other.ID = newID(v.seed, 0x6f74686572, uint64(o.seq))
			other.ClientOrderID = newID(v.seed, 0x636c69656e74, uint64(o.seq))
		}
		rep.body = v1OrderBody(other, rep.v1)
	case faultWrongClientOrderID:
		j := v.orderJSON(o, now)
		j.ClientOrderID = newID(v.seed, 0x636c69656e74, uint64(o.seq))
		rep.body = v1OrderBody(j, rep.v1)
	}
}

// streamAbortFunc ends the HTTP/2 stream of r the way kind says
// (faultRefusedStream, faultProtocolError or faultGoAway) once the
// handler returns, and reports whether it could: false when r was not
// served by a server that can. engineConfig.StreamAbort installs one.
type streamAbortFunc func(r *http.Request, kind faultKind) bool
