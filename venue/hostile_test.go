package venue

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
)

const cidA = "a1111111-2222-4333-8444-555555555555"

func limitBody(cid string) []byte {
	return orderBody(cid, "buy", "limit", "DOGE-USD", `{"asset_quantity":"10","limit_price":"0.01"}`)
}

// listPage reads one page of the orders list.
func (h *harness) listPage(target string) (results []map[string]any, next any) {
	h.t.Helper()
	resp, b := h.do("GET", target, nil)
	mustStatus(h.t, resp, b, 200)
	var pg struct {
		Next    any              `json:"next"`
		Results []map[string]any `json:"results"`
	}
	if err := json.Unmarshal(b, &pg); err != nil {
		h.t.Fatal(err)
	}
	return pg.Results, pg.Next
}

func TestHostileClockOffset(t *testing.T) {
	t.Parallel()
	for _, off := range []time.Duration{3 * time.Minute, -3 * time.Minute} {
		t.Run(off.String(), func(t *testing.T) {
			t.Parallel()
			h := setup(t, engineConfig{Hostile: Hostile{ClockOffset: off}})
			venueNow := epoch.Add(off)
			// Signed on the client's clock: outside the venue's window.
			resp, b := h.do("GET", pathAccounts, nil)
			mustStatus(t, resp, b, 401)
			if got := resp.Header.Get("Date"); got != venueNow.Format(http.TimeFormat) {
				t.Errorf("401 Date = %q, want the venue's %q", got, venueNow.Format(http.TimeFormat))
			}
			// Signed on the venue's clock: accepted, and the order is
			// stamped with the venue's time.
			hdr := h.sign("POST", ordersTarget, limitBody(cidA), venueNow)
			resp, b = h.doHeader("POST", ordersTarget, limitBody(cidA), hdr)
			mustStatus(t, resp, b, 201)
			created, err := time.Parse(time.RFC3339Nano, decode(t, b)["created_at"].(string))
			if err != nil || !created.Equal(venueNow) {
				t.Errorf("created_at %v (%v), want %v", created, err, venueNow)
			}
			if got := resp.Header.Get("Date"); got != venueNow.Format(http.TimeFormat) {
				t.Errorf("Date = %q, want %q", got, venueNow.Format(http.TimeFormat))
			}
			if r := h.v.ledger.Requests(); !r[1].Time.Equal(venueNow) {
				t.Errorf("ledger time %v, want the venue's %v", r[1].Time, venueNow)
			}
		})
	}
}

func TestDateHeaderOnEveryAnswer(t *testing.T) {
	t.Parallel()
	h := setup(t, engineConfig{})
	h.v.inject(Fault{Kind: faultRespond, Path: pathBBA, Status: 503})
	want := epoch.Format(http.TimeFormat)
	for _, tc := range []struct {
		target string
		hdr    http.Header
	}{
		{pathAccounts, nil},           // 200
		{pathBBA, nil},                // injected 503
		{pathAccounts, http.Header{}}, // 400 missing headers
		{pathOrders + "nope/", nil},   // 404
	} {
		hdr := tc.hdr
		if hdr == nil {
			hdr = h.sign("GET", tc.target, nil, epoch)
		}
		resp, _ := h.doHeader("GET", tc.target, nil, hdr)
		if got := resp.Header.Get("Date"); got != want {
			t.Errorf("%s (%d): Date %q, want %q", tc.target, resp.StatusCode, got, want)
		}
	}
	// Over a real server too: the venue's clock, not the machine's.
	srv := httptest.NewServer(h.v)
	defer srv.Close()
	resp, err := http.Get(srv.URL + pathAccounts)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get("Date"); got != want {
		t.Errorf("over loopback: Date %q, want %q", got, want)
	}
}

func TestHostileListLag(t *testing.T) {
	t.Parallel()
	h := setup(t, engineConfig{Hostile: Hostile{ListLag: 90 * time.Second}})
	o := h.create(limitBody(cidA), 201)
	id := o["id"].(string)
	if rows, _ := h.listPage(ordersTarget); len(rows) != 0 {
		t.Fatalf("an order 0 s old is listed under a 90 s lag: %v", rows)
	}
	if got := h.getOrder(id); got["client_order_id"] != cidA {
		t.Errorf("GET by id must show the order at once: %v", got)
	}
	h.clock.Advance(89 * time.Second)
	if rows, _ := h.listPage(ordersTarget); len(rows) != 0 {
		t.Fatalf("listed after 89 s: %v", rows)
	}
	h.clock.Advance(time.Second)
	if rows, _ := h.listPage(ordersTarget); len(rows) != 1 || rows[0]["id"] != id {
		t.Fatalf("not listed after 90 s: %v", rows)
	}
}

// TestHostileListLagUpdates checks that a lagging list lags updates
// too: at each second, the list's row for an order filling in parts is
// what GET by id answered ListLag before, updated_at included, while GET
// by id answers it as it is; and a cancel settles on the list the lag
// after it settles, for the state and updated_at filters as well.
func TestHostileListLagUpdates(t *testing.T) {
	t.Parallel()
	const lag = 5 * time.Second
	h := setup(t, engineConfig{Seed: 3, Hostile: Hostile{ListLag: lag}})
	raw := func(target string) []byte {
		t.Helper()
		resp, b := h.do("GET", target, nil)
		mustStatus(t, resp, b, 200)
		return b
	}
	row := func(id string) map[string]any {
		t.Helper()
		rows, _ := h.listPage(ordersTarget + "&id=" + id)
		if len(rows) != 1 {
			t.Fatalf("%d rows for %s", len(rows), id)
		}
		return rows[0]
	}
	_, ask, _ := h.v.quote("BTC-USD")
	o := h.create(orderBody("21111111-2222-4333-8444-555555555555", "buy", "limit", "BTC-USD",
		`{"asset_quantity":"0.004","limit_price":"`+ask.Add(decimal.NewFromInt(5000)).String()+`"}`), 201)
	id := o["id"].(string)
	var byID []map[string]any // GET by id at each second
	states := map[any]bool{}
	for sec := 0; sec <= 15; sec++ {
		var now map[string]any
		if err := json.Unmarshal(raw(pathOrders+id+"/"), &now); err != nil {
			t.Fatal(err)
		}
		byID = append(byID, now)
		states[now["state"]] = true
		if back := sec - int(lag/time.Second); back >= 0 {
			if got, want := row(id), byID[back]; !reflect.DeepEqual(got, want) {
				t.Errorf("at %d s the list shows\n%v\nwant GET by id at %d s\n%v", sec, got, back, want)
			}
		}
		h.clock.Advance(time.Second)
	}
	if !states["partially_filled"] || !states["filled"] || len(byID[0]["executions"].([]any)) == len(byID[15]["executions"].([]any)) {
		t.Fatalf("the order did not fill in parts after its create (states %v): the test shows nothing", states)
	}

	// A cancel settles on the list, and in its filters, lag after it does.
	c := h.create(limitBody(cidA), 201)
	cid := c["id"].(string)
	h.clock.Advance(lag)
	resp, b := h.do("POST", pathOrders+cid+"/cancel/", nil)
	mustStatus(t, resp, b, 200)
	h.clock.Advance(2 * time.Second) // settled after 1 s
	settled := h.getOrder(cid)
	if settled["state"] != "canceled" {
		t.Fatalf("GET by id after the cancel settled: %v", settled["state"])
	}
	canceledSince := ordersTarget + "&state=canceled&updated_at_start=" + url.QueryEscape(settled["updated_at"].(string))
	if r := row(cid); r["state"] != "open" || r["updated_at"] != c["updated_at"] {
		t.Errorf("the list shows the cancel %v before the lag: %v at %v", lag, r["state"], r["updated_at"])
	}
	if rows, _ := h.listPage(canceledSince); len(rows) != 0 {
		t.Errorf("state=canceled&updated_at_start lists the cancel before the lag: %v", rows)
	}
	h.clock.Advance(lag)
	if r := row(cid); r["state"] != "canceled" || r["updated_at"] != settled["updated_at"] {
		t.Errorf("the list shows %v at %v a lag after the cancel settled, want canceled at %v", r["state"], r["updated_at"], settled["updated_at"])
	}
	if rows, _ := h.listPage(canceledSince); len(rows) != 1 || rows[0]["id"] != cid {
		t.Errorf("state=canceled&updated_at_start after the lag: %v", rows)
	}
}

func TestHostileOmitClientOrderID(t *testing.T) {
	t.Parallel()
	t.Run("all", func(t *testing.T) {
		t.Parallel()
		h := setup(t, engineConfig{Hostile: Hostile{OmitClientOrderID: 1}})
		o := h.create(limitBody(cidA), 201)
		if o["client_order_id"] != cidA {
			t.Errorf("the create's answer keeps its client_order_id: %v", o)
		}
		rows, _ := h.listPage(ordersTarget)
		if len(rows) != 1 {
			t.Fatalf("rows %v", rows)
		}
		if _, ok := rows[0]["client_order_id"]; ok {
			t.Errorf("row keeps client_order_id: %v", rows[0])
		}
		if rows[0]["id"] != o["id"] {
			t.Errorf("row %v", rows[0])
		}
		if got := h.getOrder(o["id"].(string)); got["client_order_id"] != cidA {
			t.Errorf("GET by id lost it: %v", got)
		}
	})
	t.Run("some, the same on every list", func(t *testing.T) {
		t.Parallel()
		h := setup(t, engineConfig{Hostile: Hostile{OmitClientOrderID: 0.5}, RatePerMinute: -1})
		for i := 0; i < 40; i++ {
			h.create(limitBody(fmt.Sprintf("a%07d-2222-4333-8444-555555555555", i)), 201)
		}
		count := func() (n int, which string) {
			rows, _ := h.listPage(ordersTarget)
			for _, r := range rows {
				if _, ok := r["client_order_id"]; !ok {
					n++
					which += r["id"].(string)
				}
			}
			return n, which
		}
		n, first := count()
		if n == 0 || n == 40 {
			t.Errorf("omitted %d of 40 at 0.5", n)
		}
		if _, again := count(); again != first {
			t.Error("a second list omits other rows")
		}
	})
}

func TestHostileDropNext(t *testing.T) {
	t.Parallel()
	h := setup(t, engineConfig{PageSize: 2, RatePerMinute: -1, Hostile: Hostile{DropNext: 1}})
	for _, c := range []string{"a", "b", "c"} {
		h.create(limitBody(strings.Replace(cidA, "a111", c+"111", 1)), 201)
	}
	rows, next := h.listPage(ordersTarget)
	if len(rows) != 2 || next != nil {
		t.Errorf("page 1 of 2: %d rows, next %v; want 2 rows and no next", len(rows), next)
	}
	if err := h.v.apply(FaultPlan{Hostile: &Hostile{}}); err != nil {
		t.Fatal(err)
	}
	if _, next := h.listPage(ordersTarget); next == nil {
		t.Error("a well-behaved venue has a next link here")
	}
}

func TestBadBodyFaults(t *testing.T) {
	t.Parallel()
	const cidB = "b1111111-2222-4333-8444-555555555555"
	tests := []struct {
		kind  faultKind
		prior bool // another order exists first
		check func(t *testing.T, body []byte, id string)
	}{
		{faultTruncatedBody, false, func(t *testing.T, body []byte, _ string) {
			if json.Valid(body) || len(body) == 0 {
				t.Errorf("body is whole: %s", body)
			}
		}},
		{faultOtherOrderBody, true, func(t *testing.T, body []byte, _ string) {
			if m := decode(t, body); m["client_order_id"] != cidB {
				t.Errorf("want the other order: %s", body)
			}
		}},
		{faultOtherOrderBody, false, func(t *testing.T, body []byte, id string) {
			if m := decode(t, body); m["client_order_id"] == cidA || m["id"] == id {
				t.Errorf("want an order the venue does not hold: %s", body)
			}
		}},
		{faultWrongClientOrderID, false, func(t *testing.T, body []byte, id string) {
			if m := decode(t, body); m["client_order_id"] == cidA || m["id"] != id {
				t.Errorf("want this order under another client_order_id: %s", body)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(string(tt.kind), func(t *testing.T) {
			t.Parallel()
			h := setup(t, engineConfig{})
			if tt.prior {
				h.create(limitBody(cidB), 201)
			}
			if err := h.v.inject(Fault{Kind: tt.kind, Method: "POST", Path: pathOrders}); err != nil {
				t.Fatal(err)
			}
			resp, b := h.do("POST", ordersTarget, limitBody(cidA))
			mustStatus(t, resp, b, 201)
			recs := h.v.ledger.OrdersByClientID(cidA)
			if len(recs) != 1 {
				t.Fatalf("the create must be committed: %v", recs)
			}
			tt.check(t, b, recs[0].ID)
		})
	}
}

func TestStreamFaults(t *testing.T) {
	t.Parallel()
	for _, k := range []faultKind{faultRefusedStream, faultProtocolError, faultGoAway} {
		t.Run(string(k), func(t *testing.T) {
			t.Parallel()
			var got faultKind
			for _, aborts := range []bool{true, false} {
				h := setup(t, engineConfig{StreamAbort: func(r *http.Request, kind faultKind) bool { got = kind; return aborts }})
				h.v.inject(Fault{Kind: k, Method: "POST", Path: pathOrders})
				resp, _ := h.do("POST", ordersTarget, limitBody(cidA))
				if aborts && (resp.StatusCode != 200 || got != k) {
					// The recorder sees no WriteHeader: the server ends the stream.
					t.Errorf("StreamAbort got %q, answer %d", got, resp.StatusCode)
				}
				if !aborts && resp.StatusCode != 0 {
					t.Errorf("fallback: status %d, want a dropped connection", resp.StatusCode)
				}
				if n := len(h.v.ledger.OrdersByClientID(cidA)); n != 1 {
					t.Errorf("%d orders, want the create committed", n)
				}
				if r := h.v.ledger.Requests()[0]; !r.Dropped || r.Fault != string(k) {
					t.Errorf("ledger %+v", r)
				}
			}
		})
	}
}

func TestParseHostilePlan(t *testing.T) {
	t.Parallel()
	p, err := ParseFaultPlan([]byte(`{"faults":[{"kind":"refused_stream","method":"POST"},{"kind":"truncated_body"}],
		"hostile":{"clock_offset":"-3m","list_lag":"90s","omit_client_order_id":0.5,"drop_next":1},"duplicate":"create_second"}`))
	if err != nil {
		t.Fatal(err)
	}
	want := Hostile{ClockOffset: -3 * time.Minute, ListLag: 90 * time.Second, OmitClientOrderID: 0.5, DropNext: 1}
	if p.Hostile == nil || *p.Hostile != want || len(p.Faults) != 2 {
		t.Fatalf("plan %+v", p)
	}
	h := setup(t, engineConfig{})
	if err := h.v.apply(p); err != nil {
		t.Fatal(err)
	}
	if got := h.v.now(); !got.Equal(epoch.Add(-3 * time.Minute)) {
		t.Errorf("venue now %v", got)
	}
	for _, bad := range []string{`{"hostile":{"list_lag":"-1s"}}`, `{"hostile":{"drop_next":2}}`,
		`{"hostile":{"clock_offset":"soon"}}`, `{"hostile":{"lag":"1s"}}`} {
		if _, err := ParseFaultPlan([]byte(bad)); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
}
