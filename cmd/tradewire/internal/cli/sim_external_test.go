package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/tradewire/tradewire/venue"
)

// TestPlaceSimExternal checks what "sim serve --external-every" places:
// limit orders at the bid and the ask in turn, with client_order_ids of
// their own, that rest and fill on the venue's clock.
func TestPlaceSimExternal(t *testing.T) {
	t.Parallel()
	clk := clockwork.NewFakeClockAt(time.Date(2026, 8, 20, 12, 0, 0, 0, time.UTC))
	v, err := venue.New(venue.Config{Clock: clk, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	var placed []venue.OrderRecord
	for n := range 4 {
		o, err := placeSimExternal(v, n)
		if err != nil {
			t.Fatalf("order %d: %v", n, err)
		}
		if want := []string{"buy", "sell"}[n%2]; o.Side != want || o.Type != "limit" || o.State != "open" || !o.External {
			t.Errorf("order %d: %+v, want an open external limit %s", n, o, want)
		}
		placed = append(placed, o)
		clk.Advance(time.Second)
	}
	if placed[0].ClientOrderID == placed[1].ClientOrderID {
		t.Errorf("two external orders share client_order_id %s", placed[0].ClientOrderID)
	}
	if c := v.Ledger().Counts(); c.Total != 0 {
		t.Errorf("placing external orders sent %d requests", c.Total)
	}
}

// TestSimServe_ExternalEvery checks that --external-every places orders
// on the server's clock that a client then sees in the orders list.
func TestSimServe_ExternalEvery(t *testing.T) {
	t.Parallel()
	clk := clockwork.NewFakeClockAt(time.Now())
	env, _, stop := startSimServeWith(t, Options{Clock: clk}, "--addr", "127.0.0.1:0", "--external-every", "10s")
	list := func() []map[string]any {
		t.Helper()
		r := runCLI(t, env, "", "api", "GET", "/api/v2/crypto/trading/orders/?account_number=TW0000000001&created_at_start="+clk.Now().Add(-time.Minute).UTC().Format(time.RFC3339))
		var pg struct{ Results []map[string]any }
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &pg) != nil {
			t.Fatalf("list: exit %d, stdout %.300q, stderr %q", r.code, r.stdout, r.stderr)
		}
		return pg.Results
	}
	if rows := list(); len(rows) != 0 {
		t.Fatalf("external orders before the first interval: %v", rows)
	}
	clk.Advance(10 * time.Second)
	var rows []map[string]any
	// The ticker's goroutine places the order as soon as it runs: look
	// until the list shows it, a bounded number of times.
	for i := 0; i < 500 && len(rows) == 0; i++ {
		rows = list()
	}
	if len(rows) != 1 || rows[0]["side"] != "buy" || rows[0]["type"] != "limit" {
		t.Fatalf("after 10 s the list shows %v, want one external limit buy", rows)
	}
	res := stop()
	if res.code != 0 || !strings.Contains(res.stderr, "external order "+rows[0]["id"].(string)+" placed (client_order_id "+rows[0]["client_order_id"].(string)) {
		t.Errorf("stop: exit %d, stderr %q", res.code, res.stderr)
	}
}
