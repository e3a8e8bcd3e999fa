package venue

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
)

// PlaceExternal places an order in the venue's account as another tool,
// with an API key of its own, would: body is a create's JSON body, as
// POST /api/v2/crypto/trading/orders/ takes it, and its client_order_id
// is that tool's (any UUID; a body without one gets one drawn from the
// seed). The order is then like any other, on the venue's clock: listed,
// filling and cancelable. It is no request: it draws on no rate limit
// and is not among the Ledger's requests nor in Counts.Creates; the
// Ledger's orders hold it, with External set. It fails, creating
// nothing, where a create would (the venue's 400 detail and attr; a
// deactivated account), and where a reused client_order_id would create
// no second order (see DuplicateMode).
func (v *Venue) PlaceExternal(body []byte) (OrderRecord, error) {
	o, err := v.e.placeExternal(body)
	if err != nil {
		return OrderRecord{}, err
	}
	v.e.ledger.addOrder(o)
	return o, nil
}

// placeExternal is PlaceExternal on the first account.
func (v *engine) placeExternal(body []byte) (OrderRecord, error) {
	now := v.now()
	v.mu.Lock()
	defer v.mu.Unlock()
	a := v.accounts[0]
	if a.Status == accountDeactivated {
		return OrderRecord{}, errors.New("venue: external order: " + detailDeactivated)
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) == nil && m != nil && m["client_order_id"] == nil {
		// The other tool's own key: deterministic in the seed and the id
		// sequence, unrelated to any key a client derives.
		m["client_order_id"], _ = json.Marshal(newID(v.seed, 0x65787465726e, uint64(v.seq+1)))
		body, _ = json.Marshal(m)
	}
	v.advance(now)
	rep, o := v.placeOrder(a, body, now)
	if o == nil {
		return OrderRecord{}, externalRefusal(rep)
	}
	rec := o.record()
	rec.External = true
	return rec, nil
}

// externalRefusal is the error for a create the venue answered rep
// without creating an order.
func externalRefusal(rep *reply) error {
	var env errorEnvelope
	if rep.status == http.StatusOK || json.Unmarshal(rep.body, &env) != nil || len(env.Errors) == 0 {
		return errors.New("venue: external order: an order with this client_order_id exists; no second one was created")
	}
	it := env.Errors[0]
	if it.Attr != nil {
		return fmt.Errorf("venue: external order: %s: %s", *it.Attr, it.Detail)
	}
	return fmt.Errorf("venue: external order: %s", it.Detail)
}
