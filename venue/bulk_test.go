package venue

import (
	"net/url"
	"testing"
	"time"
)

// TestBulkScale checks that a million generated orders cost nothing up
// front and that a deep page is as cheap as the first.
func TestBulkScale(t *testing.T) {
	t.Parallel()
	h := setup(t, engineConfig{BulkOrders: 1_000_000, RatePerMinute: -1})
	_, b := h.do("GET", ordersTarget, nil)
	m := decode(t, b)
	if len(m["results"].([]any)) != defaultPageSize {
		t.Fatalf("page size %d", len(m["results"].([]any)))
	}
	// Jump deep with a time filter: the bulk index is found by arithmetic.
	end := h.clock.Now().Add(-20 * 24 * time.Hour).Format(time.RFC3339Nano)
	_, b = h.do("GET", ordersTarget+"&created_at_end="+url.QueryEscape(end), nil)
	m = decode(t, b)
	first := m["results"].([]any)[0].(map[string]any)["created_at"].(string)
	if first > end {
		t.Errorf("first %s after end %s", first, end)
	}
	u, _ := url.Parse(m["next"].(string))
	_, b = h.do("GET", u.RequestURI(), nil)
	if n := len(decode(t, b)["results"].([]any)); n != defaultPageSize {
		t.Errorf("page 2 has %d", n)
	}
}

func BenchmarkBulkPage(b *testing.B) {
	h := setup(b, engineConfig{BulkOrders: 1_000_000, RatePerMinute: -1})
	b.ReportAllocs()
	for b.Loop() {
		h.do("GET", ordersTarget, nil)
	}
}
