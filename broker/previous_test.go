package broker_test

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/tradewire/tradewire/broker"
	"github.com/tradewire/tradewire/venue"
)

// TestListingsFollowNextOnly: the venue fills previous on every page after
// the first; the client's listings read each page once, forwards, and
// never ask for one again (a previous link followed would request an
// earlier page's target a second time).
func TestListingsFollowNextOnly(t *testing.T) {
	t.Parallel()
	const orders, pageSize = 60, 7
	c, srv, _ := simulated(t, venue.Config{History: orders, PageSize: pageSize})
	ctx := context.Background()
	listed, err := broker.Collect(c.Orders(ctx, broker.OrderFilter{}))
	if err != nil || len(listed) != orders {
		t.Fatalf("%d orders, %v", len(listed), err)
	}
	seen := map[string]bool{}
	for _, o := range listed {
		if seen[o.ID] {
			t.Errorf("order %s listed twice", o.ID)
		}
		seen[o.ID] = true
	}
	if _, err := broker.Collect(c.TradingPairs(ctx, nil)); err != nil {
		t.Fatal(err)
	}
	targets := map[string]int{}
	pages := 0
	for _, r := range srv.Ledger().Requests() {
		u, err := url.Parse(r.Target)
		if err != nil {
			t.Fatal(err)
		}
		targets[r.Target]++
		if u.Path == "/api/v2/crypto/trading/orders/" {
			pages++
		}
	}
	if want := (orders + pageSize - 1) / pageSize; pages != want {
		t.Errorf("%d pages of orders read, want %d", pages, want)
	}
	for target, n := range targets {
		if n > 1 {
			t.Errorf("%s requested %d times", target, n)
		}
	}
	// The control: the venue did offer previous links on those pages.
	resp, err := c.Transport().Get(ctx, "/api/v2/crypto/trading/orders/?account_number="+srv.AccountNumber)
	if err != nil {
		t.Fatal(err)
	}
	next := jsonField(t, resp.Body, "next")
	resp, err = c.Transport().Get(ctx, strings.TrimPrefix(next, srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	if prev := jsonField(t, resp.Body, "previous"); prev == "" {
		t.Errorf("page 2 has no previous link: %s", resp.Body)
	}
}

// jsonField is the value of a page's next or previous link, "" when null.
func jsonField(t *testing.T, body []byte, field string) string {
	t.Helper()
	var p struct{ Next, Previous *string }
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	v := map[string]*string{"next": p.Next, "previous": p.Previous}[field]
	if v == nil {
		return ""
	}
	return *v
}
