package venue

import (
	"crypto/ed25519"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
)

// TestPlaceExternal checks that an order placed as if by another tool has
// that tool's client_order_id (one drawn from the seed when the body has
// none), sends no request, and is then like any other: listed, got by id,
// filling on the venue's clock and cancelable through the API.
func TestPlaceExternal(t *testing.T) {
	t.Parallel()
	place := func(h *harness, body string) (OrderRecord, error) {
		return (&Venue{e: h.v}).PlaceExternal([]byte(body))
	}
	h := setup(t, engineConfig{Seed: 3, Duplicate: CreateSecond})
	_, ask, _ := h.v.quote("BTC-USD")
	filling := `{"side":"buy","type":"limit","symbol":"BTC-USD","limit_order_config":{"asset_quantity":"0.004","limit_price":"` +
		ask.Add(decimal.NewFromInt(5000)).String() + `"}}`
	rec, err := place(h, filling)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := uuid.Parse(rec.ClientOrderID); err != nil || !rec.External || rec.ID == "" {
		t.Fatalf("record %+v", rec)
	}
	if again, err := place(setup(t, engineConfig{Seed: 3}), filling); err != nil || again.ClientOrderID != rec.ClientOrderID || again.ID != rec.ID {
		t.Errorf("the same seed placed %+v, %v; want client_order_id %s, id %s", again, err, rec.ClientOrderID, rec.ID)
	}
	if c := h.v.ledger.Counts(); c.Total != 0 || c.Creates != 0 {
		t.Errorf("an external order counted as a request: %+v", c)
	}
	if got := h.v.ledger.Orders(); len(got) != 1 || got[0] != rec {
		t.Errorf("ledger orders %+v, want %+v", got, rec)
	}
	if rows, _ := h.listPage(ordersTarget); len(rows) != 1 || rows[0]["id"] != rec.ID || rows[0]["client_order_id"] != rec.ClientOrderID {
		t.Fatalf("list %v", rows)
	}
	h.clock.Advance(10 * time.Second)
	if got := h.getOrder(rec.ID); got["state"] != "filled" || len(got["executions"].([]any)) < 2 {
		t.Errorf("after 10 s: %v with %d executions, want filled in parts", got["state"], len(got["executions"].([]any)))
	}

	// Resting, it is canceled through the API like any order.
	rest, err := place(h, string(limitBody(cidA)))
	if err != nil || rest.ClientOrderID != cidA || rest.State != "open" {
		t.Fatalf("%+v, %v", rest, err)
	}
	resp, b := h.do("POST", pathOrders+rest.ID+"/cancel/", nil)
	mustStatus(t, resp, b, 200)
	h.clock.Advance(2 * time.Second)
	if s := h.getOrder(rest.ID)["state"]; s != "canceled" {
		t.Errorf("after cancel: %v", s)
	}
	// The venue's duplicate mode holds for it: create_second creates another.
	if _, err := place(h, string(limitBody(cidA))); err != nil {
		t.Errorf("create_second: %v", err)
	}
	if d := h.v.ledger.DuplicateClientIDs(); len(d) != 1 || d[0] != cidA {
		t.Errorf("duplicates %v", d)
	}
}

// TestPlaceExternalRefusals checks that what a create would refuse is an
// error naming why, and creates nothing.
func TestPlaceExternalRefusals(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		cfg  engineConfig
		body string
		want string
	}{
		{"bad price", engineConfig{}, `{"side":"buy","type":"limit","symbol":"DOGE-USD","limit_order_config":{"asset_quantity":"10","limit_price":"-1"}}`,
			"limit_order_config.limit_price"},
		{"not JSON", engineConfig{}, `{`, "Invalid JSON body."},
		{"reused key", engineConfig{}, string(limitBody(cidA)), "exists"},
		{"reused key, reject", engineConfig{Duplicate: Reject400}, string(limitBody(cidA)), "client_order_id: An order with this client_order_id already exists."},
		{"deactivated", engineConfig{Accounts: []accountConfig{{Number: demoAccountNumber, APIKey: demoAPIKey,
			PublicKey: demoPrivateKey().Public().(ed25519.PublicKey), Status: accountDeactivated}}}, string(limitBody(cidA)), detailDeactivated},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := setup(t, c.cfg)
			v := &Venue{e: h.v}
			if strings.HasPrefix(c.name, "reused") {
				if _, err := v.PlaceExternal(limitBody(cidA)); err != nil {
					t.Fatal(err)
				}
			}
			n := len(h.v.orders)
			_, err := v.PlaceExternal([]byte(c.body))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one naming %q", err, c.want)
			}
			if len(h.v.orders) != n {
				t.Errorf("a refused external order created one")
			}
		})
	}
}
