package venue

import (
	"encoding/json"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/shopspring/decimal"
)

func TestExpiryCalendar(t *testing.T) {
	t.Parallel()
	utc := func(s string) time.Time {
		t.Helper()
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		ny = time.FixedZone("EDT", -4*3600)
	}
	for _, tc := range []struct {
		tif     string
		created time.Time
		want    string // "" for none
	}{
		{"gtc", utc("2026-08-20T17:00:00Z"), ""},
		{"", utc("2026-08-20T17:00:00Z"), ""},
		{"gfd", utc("2026-08-20T17:00:00Z"), "2026-08-21T00:00:00Z"},
		{"gfd", utc("2026-08-20T00:00:00Z"), "2026-08-21T00:00:00Z"}, // the boundary starts a day
		{"gfd", utc("2026-08-20T23:59:59.999999Z"), "2026-08-21T00:00:00Z"},
		{"gfd", utc("2026-12-31T12:00:00Z"), "2027-01-01T00:00:00Z"},
		// 21:00 in New York on the 20th is 01:00 UTC on the 21st: the UTC day counts.
		{"gfd", time.Date(2026, 8, 20, 21, 0, 0, 0, ny), "2026-08-22T00:00:00Z"},
		{"gfw", utc("2026-08-20T17:00:00Z"), "2026-08-24T00:00:00Z"}, // Thursday → Monday
		{"gfw", utc("2026-08-24T00:00:00Z"), "2026-08-31T00:00:00Z"}, // Monday 00:00 starts a week
		{"gfw", utc("2026-08-23T23:59:59Z"), "2026-08-24T00:00:00Z"}, // Sunday night
		{"gfw", utc("2026-12-30T08:00:00Z"), "2027-01-04T00:00:00Z"},
		{"gfm", utc("2026-08-20T17:00:00Z"), "2026-09-01T00:00:00Z"},
		{"gfm", utc("2026-08-01T00:00:00Z"), "2026-09-01T00:00:00Z"},
		{"gfm", utc("2026-12-31T23:59:59Z"), "2027-01-01T00:00:00Z"},
		{"gfm", utc("2028-02-29T10:00:00Z"), "2028-03-01T00:00:00Z"},
		{"gfm", utc("2026-01-31T10:00:00Z"), "2026-02-01T00:00:00Z"},
	} {
		got := expiry(tc.tif, tc.created)
		switch {
		case tc.want == "" && !got.IsZero():
			t.Errorf("expiry(%q, %v) = %v, want none", tc.tif, tc.created, got)
		case tc.want != "" && !got.Equal(utc(tc.want)):
			t.Errorf("expiry(%q, %v) = %v, want %s", tc.tif, tc.created, got, tc.want)
		}
	}
}

// restingConfig returns a config for typ on BTC-USD that the market of the
// next weeks never fills: a buy limit at half the ask, a sell stop at half
// the bid, a buy stop at twice the ask.
func restingConfig(t *testing.T, h *harness, typ, tif string) (side, cfg string) {
	t.Helper()
	bid, ask, _ := h.v.quote("BTC-USD")
	cent := decimal.RequireFromString("0.01")
	half, twice := decimal.RequireFromString("0.5"), decimal.NewFromInt(2)
	tf := ""
	if tif != "" {
		tf = `,"time_in_force":"` + tif + `"`
	}
	switch typ {
	case "limit":
		return "buy", `{"asset_quantity":"0.0001","limit_price":"` + floorTo(ask.Mul(half), cent).String() + `"` + tf + `}`
	case "stop_loss":
		return "sell", `{"asset_quantity":"0.0001","stop_price":"` + floorTo(bid.Mul(half), cent).String() + `"` + tf + `}`
	case "stop_limit":
		p := floorTo(ask.Mul(twice), cent).String()
		return "buy", `{"asset_quantity":"0.0001","limit_price":"` + p + `","stop_price":"` + p + `"` + tf + `}`
	}
	t.Fatalf("no resting config for %s", typ)
	return "", ""
}

// TestTimeInForceExpiresOnVenueClock places each time in force on each
// order type that takes one, at epoch (Thursday 2026-08-20 17:00 UTC),
// and reads it back 1 ns before its expiry (open) and at it (canceled,
// updated_at the expiry); a gtc order outlives every boundary.
func TestTimeInForceExpiresOnVenueClock(t *testing.T) {
	t.Parallel()
	expiries := map[string]time.Time{
		"gfd": time.Date(2026, 8, 21, 0, 0, 0, 0, time.UTC),
		"gfw": time.Date(2026, 8, 24, 0, 0, 0, 0, time.UTC),
		"gfm": time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC),
	}
	for _, typ := range []string{"limit", "stop_loss", "stop_limit"} {
		for _, tif := range []string{"gfd", "gfw", "gfm"} {
			t.Run(typ+"/"+tif, func(t *testing.T) {
				t.Parallel()
				h := setup(t, engineConfig{NoPartialFills: true})
				side, cfg := restingConfig(t, h, typ, tif)
				o := h.create(orderBody("51111111-2222-4333-8444-555555555555", side, typ, "BTC-USD", cfg), 201)
				id := o["id"].(string)
				if o["state"] != "open" {
					t.Fatalf("created %v, want open", o["state"])
				}
				if typ != "limit" {
					if got := o[typ+"_order_config"].(map[string]any)["time_in_force"]; got != tif {
						t.Errorf("%s_order_config.time_in_force = %v, want %s", typ, got, tif)
					}
				}
				exp := expiries[tif]
				h.clock.Advance(exp.Add(-time.Nanosecond).Sub(h.clock.Now()))
				if got := h.getOrder(id); got["state"] != "open" {
					t.Fatalf("1ns before %v: state %v, want open", exp, got["state"])
				}
				h.clock.Advance(time.Nanosecond)
				got := h.getOrder(id)
				if got["state"] != "canceled" || got["updated_at"] != orderStamp(exp) {
					t.Fatalf("at %v: state %v updated_at %v, want canceled at %s", exp, got["state"], got["updated_at"], orderStamp(exp))
				}
				if got["estimated_fee_remaining"].(json.Number).String() != "0.0" {
					t.Errorf("expired order still estimates a fee: %v", got["estimated_fee_remaining"])
				}
				// The list agrees, and the order can no longer be canceled.
				resp, b := h.do("GET", ordersTarget+"&state=canceled&updated_at_start="+url.QueryEscape(exp.Format(time.RFC3339Nano)), nil)
				mustStatus(t, resp, b, 200)
				if rs := decode(t, b)["results"].([]any); len(rs) != 1 || rs[0].(map[string]any)["id"] != id {
					t.Errorf("canceled since expiry: %s", b)
				}
				resp, b = h.do("POST", pathOrders+id+"/cancel/", nil)
				mustStatus(t, resp, b, 400)
			})
		}
	}
	t.Run("gtc", func(t *testing.T) {
		t.Parallel()
		h := setup(t, engineConfig{NoPartialFills: true})
		for i, tif := range []string{"gtc", ""} {
			side, cfg := restingConfig(t, h, "limit", tif)
			o := h.create(orderBody(fmt.Sprintf("6111111%d-2222-4333-8444-555555555555", i), side, "limit", "BTC-USD", cfg), 201)
			defer func(id string) {
				if got := h.getOrder(id); got["state"] != "open" {
					t.Errorf("%q after %v: state %v, want open", tif, h.clock.Now(), got["state"])
				}
			}(o["id"].(string))
		}
		h.clock.Advance(expiries["gfm"].Add(time.Hour).Sub(h.clock.Now()))
	})
}

// TestCancelAndExpiryTheEarlierWins: a cancel asked for half a second
// before a gfd expiry settles after it, so the order ends at the expiry.
func TestCancelAndExpiryTheEarlierWins(t *testing.T) {
	t.Parallel()
	h := setup(t, engineConfig{NoPartialFills: true})
	side, cfg := restingConfig(t, h, "limit", "gfd")
	o := h.create(orderBody("71111111-2222-4333-8444-555555555555", side, "limit", "BTC-USD", cfg), 201)
	id := o["id"].(string)
	exp := time.Date(2026, 8, 21, 0, 0, 0, 0, time.UTC)
	h.clock.Advance(exp.Add(-500 * time.Millisecond).Sub(h.clock.Now()))
	resp, b := h.do("POST", pathOrders+id+"/cancel/", nil)
	mustStatus(t, resp, b, 200)
	h.clock.Advance(2 * time.Second)
	if got := h.getOrder(id); got["state"] != "canceled" || got["updated_at"] != orderStamp(exp) {
		t.Fatalf("state %v updated_at %v, want canceled at the expiry %s", got["state"], got["updated_at"], orderStamp(exp))
	}
}

func TestTimeInForceValidation(t *testing.T) {
	t.Parallel()
	h := setup(t, engineConfig{})
	cid := "81111111-2222-4333-8444-555555555555"
	for _, tc := range []struct{ name, typ, cfg, attr, detail string }{
		{"ioc", "limit", `{"asset_quantity":"0.1","limit_price":"100","time_in_force":"ioc"}`, "limit_order_config.time_in_force", `"ioc" is not a valid choice.`},
		{"upper case", "stop_loss", `{"asset_quantity":"0.1","stop_price":"100","time_in_force":"GFD"}`, "stop_loss_order_config.time_in_force", `"GFD" is not a valid choice.`},
		{"number", "limit", `{"asset_quantity":"0.1","limit_price":"100","time_in_force":1}`, "limit_order_config.time_in_force", "Not a valid string."},
		{"market", "market", `{"asset_quantity":"0.1","time_in_force":"gfd"}`, "market_order_config.time_in_force", ""},
	} {
		resp, b := h.do("POST", ordersTarget, orderBody(cid, "buy", tc.typ, "BTC-USD", tc.cfg))
		if resp.StatusCode != 400 {
			t.Errorf("%s: status %d %s", tc.name, resp.StatusCode, b)
			continue
		}
		var env errorEnvelope
		if err := json.Unmarshal(b, &env); err != nil || env.Type != "validation_error" || len(env.Errors) != 1 ||
			env.Errors[0].Attr == nil || *env.Errors[0].Attr != tc.attr || (tc.detail != "" && env.Errors[0].Detail != tc.detail) {
			t.Errorf("%s: body %s", tc.name, b)
		}
	}
	if n := h.v.ledger.Counts().Creates; n != 0 {
		t.Errorf("%d refused creates were recorded", n)
	}
}
