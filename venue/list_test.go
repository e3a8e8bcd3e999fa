package venue

import (
	"encoding/json"
	"testing"
)

// TestOrdersListNeedsAccountNumber: the spec marks account_number required
// on GET /api/v2/crypto/trading/orders/, so the list without it (or with it
// empty) is a 400 validation_error naming it, whatever the other filters;
// with it, the list answers.
func TestOrdersListNeedsAccountNumber(t *testing.T) {
	t.Parallel()
	h := setup(t, engineConfig{History: 3})
	for _, target := range []string{pathOrders, pathOrders + "?account_number=", pathOrders + "?state=open", pathOrders + "?cursor=x"} {
		resp, b := h.do("GET", target, nil)
		mustStatus(t, resp, b, 400)
		var env errorEnvelope
		if err := json.Unmarshal(b, &env); err != nil || env.Type != "validation_error" || len(env.Errors) != 1 ||
			env.Errors[0].Attr == nil || *env.Errors[0].Attr != "account_number" || env.Errors[0].Detail != "This field is required." {
			t.Errorf("GET %s: %s", target, b)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("GET %s: Content-Type %q", target, ct)
		}
	}
	resp, b := h.do("GET", ordersTarget, nil)
	mustStatus(t, resp, b, 200)
	if n := len(decode(t, b)["results"].([]any)); n != 3 {
		t.Errorf("%d orders listed, want 3", n)
	}
	resp, b = h.do("GET", pathOrders+"?account_number=XX0000000000", nil)
	mustStatus(t, resp, b, 403)
}

// TestEstimateAboveMaxOrderSize: an estimate for more than the pair's
// max_order_size (BTC-USD: 20) is a 400 naming quantity, even among valid
// quantities; exactly the maximum is estimated.
func TestEstimateAboveMaxOrderSize(t *testing.T) {
	t.Parallel()
	h := setup(t, engineConfig{})
	for _, q := range []string{"20.00000001", "0.1,21", "25"} {
		resp, b := h.do("GET", pathEstimated+"?symbol=BTC-USD&side=ask&quantity="+q, nil)
		mustStatus(t, resp, b, 400)
		var env errorEnvelope
		if err := json.Unmarshal(b, &env); err != nil || env.Type != "validation_error" || len(env.Errors) != 1 ||
			env.Errors[0].Attr == nil || *env.Errors[0].Attr != "quantity" {
			t.Errorf("quantity %s: %s", q, b)
		}
	}
	resp, b := h.do("GET", pathEstimated+"?symbol=BTC-USD&side=both&quantity=20", nil)
	mustStatus(t, resp, b, 200)
	if n := len(decode(t, b)["results"].([]any)); n != 2 {
		t.Errorf("%d estimates for the maximum, want 2", n)
	}
}
