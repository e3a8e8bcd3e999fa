package venue

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// BenchmarkLaggedList times a page of 100 orders, every one canceled
// within the last seconds, under a 5 s ListLag (every row rebuilt as it
// was 5 s ago, still open) against the same page with no lag in the same
// run, and reports the ratio (x-nolag): what showing the past costs the
// list at its worst.
//
//	go test -run '^$' -bench LaggedList ./venue/
func BenchmarkLaggedList(b *testing.B) {
	perPage := map[time.Duration]float64{}
	for _, lag := range []time.Duration{0, 5 * time.Second} {
		b.Run("lag="+lag.String(), func(b *testing.B) {
			h := setup(b, engineConfig{Seed: 3, RatePerMinute: -1, Hostile: Hostile{ListLag: lag}})
			var ids []string
			for i := range 100 {
				ids = append(ids, h.create(limitBody(newID(5, 0x6c6167, uint64(i))), 201)["id"].(string))
			}
			h.clock.Advance(5 * time.Second)
			for _, id := range ids {
				resp, body := h.do("POST", pathOrders+id+"/cancel/", nil)
				mustStatus(b, resp, body, 200)
			}
			h.clock.Advance(2 * time.Second) // settled, after the instant a 5 s lag shows
			rows, _ := h.listPage(ordersTarget)
			want := map[time.Duration]string{0: "canceled", 5 * time.Second: "open"}[lag]
			for _, r := range rows {
				if r["state"] != want {
					b.Fatalf("lag %v: a row is %v, want %s", lag, r["state"], want)
				}
			}
			a := h.v.accounts[0]
			now := h.clock.Now()
			b.ResetTimer()
			for b.Loop() {
				r := httptest.NewRequest(http.MethodGet, "https://venue.test"+ordersTarget, nil)
				h.v.mu.Lock()
				rep := h.v.listOrders(r, a, now, "")
				h.v.mu.Unlock()
				if rep.status != http.StatusOK {
					b.Fatalf("list: %d %s", rep.status, rep.body)
				}
			}
			us := float64(b.Elapsed().Nanoseconds()) / 1e3 / float64(b.N)
			perPage[lag] = us
			b.ReportMetric(us, "us/page")
			if base := perPage[0]; base > 0 {
				b.ReportMetric(us/base, "x-nolag")
			}
		})
	}
}
