package broker_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/tradewire/tradewire/broker"
	"github.com/tradewire/tradewire/broker/brokertest"
	"github.com/tradewire/tradewire/internal/adaptive"
	"github.com/tradewire/tradewire/signing"
	"github.com/tradewire/tradewire/transport"
	"github.com/tradewire/tradewire/venue"
)

// The fee-sweep benchmarks run on the in-memory simulated venue with its
// real budget (100 a minute, bursts of 300) and the client's default token
// bucket (the same), pages of 100 orders, on a skipping clock shared by
// both: a wait moves the clock forward by exactly what was asked, at once.
// Simulated time is then the time the sweep would take against a venue
// that answers instantly, and no benchmark sleeps.
//
//	go test -run '^$' -bench FeeSweep -benchtime 1x ./broker/

const (
	benchPageSize = 100
	// benchWindow covers all of venue.Config.BulkOrders' orders, spread over the
	// last 30 days.
	benchWindow = 31 * 24 * time.Hour
)

var benchStart = time.Date(2026, 8, 20, 18, 0, 0, 0, time.UTC)

// sweepSetup returns a client and a venue holding exactly pages pages of
// orders, sharing a fresh skipping clock. Its ledger keeps the last
// request only, so that the heap measured is the client's.
func sweepSetup(b *testing.B, pages int) (*broker.Client, *brokertest.Server, venue.Clock) {
	b.Helper()
	clk := venue.NewClock(benchStart)
	clk.SkipWaits(1)
	srv, err := brokertest.New(
		venue.Config{Clock: clk, BulkOrders: pages * benchPageSize, PageSize: benchPageSize, LedgerLimit: 1, RateLimits: venue.RateLimits{Account: venue.RateLimit{PerMinute: adaptive.PerMinute, Burst: adaptive.Burst}}},
	)
	if err != nil {
		b.Fatal(err)
	}
	key, err := signing.ParsePrivateKey(srv.PrivateKeyBase64)
	if err != nil {
		b.Fatal(err)
	}
	c, err := broker.New(broker.Config{
		APIKey:     srv.APIKey,
		PrivateKey: key,
		BaseURL:    srv.URL,
		PageCap:    pages,
		Transport:  transport.Config{RoundTripper: srv.Client().Transport, Clock: clk},
	})
	if err != nil {
		b.Fatal(err)
	}
	return c, srv, clk
}

// sweep runs one fee summary over all pages and checks it read them all,
// and the one page of its catch-up read (nothing changes meanwhile).
func sweep(b *testing.B, c *broker.Client, pages int, opts ...broker.Paging) *broker.FeeReport {
	b.Helper()
	r, err := c.FeeSummary(context.Background(), benchWindow, opts...)
	if err != nil {
		b.Fatal(err)
	}
	if r.Pages != pages+1 || r.Orders != pages*benchPageSize || r.Partial {
		b.Fatalf("sweep read %d pages, %d orders (partial %v); want %d pages of %d and one empty", r.Pages, r.Orders, r.Partial, pages, benchPageSize)
	}
	return r
}

// minimumSweepTime is the least time a token bucket of perMinute and
// burst lets n requests be sent in, starting full: the first burst go at
// once, then one every minute/perMinute.
func minimumSweepTime(n int, perMinute float64, burst int) time.Duration {
	if n <= burst {
		return 0
	}
	return time.Duration(float64(n-burst) * float64(time.Minute) / perMinute)
}

// BenchmarkFeeSweep1000Pages times a 1,000-page fee summary (1 accounts
// read + 1,000 pages + the catch-up read's 1 = 1,002 requests) against the
// rate budget. It reports the simulated seconds taken (sim-seconds), the
// least the budget allows (min-seconds: 300 at once from the burst, the
// other 702 at 100 a minute, 421.2 s), their ratio (x-minimum, goal at most 1.02) and the
// 429s the venue answered (429s, goal 0).
func BenchmarkFeeSweep1000Pages(b *testing.B) {
	const pages = 1000
	minimum := minimumSweepTime(1+pages+1, adaptive.PerMinute, adaptive.Burst)
	var took time.Duration
	var throttled, requests int
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		c, srv, clk := sweepSetup(b, pages)
		b.StartTimer()
		start := clk.Now()
		sweep(b, c, pages)
		took = clk.Since(start)
		counts := srv.Ledger().Counts()
		throttled, requests = counts.Throttled, counts.Total
	}
	if requests != 1+pages+1 {
		b.Errorf("the venue saw %d requests, want %d", requests, 1+pages+1)
	}
	b.ReportMetric(took.Seconds(), "sim-seconds")
	b.ReportMetric(minimum.Seconds(), "min-seconds")
	b.ReportMetric(float64(took)/float64(minimum), "x-minimum")
	b.ReportMetric(float64(throttled), "429s")
}

// BenchmarkFeeSweepMemory shows that a sweep's memory stays flat however
// many pages it reads. Total allocation grows with the pages (bytes/op of
// the pages=N sub-benchmarks, for the record); what must not grow is the
// peak heap. Each pages=N sub-benchmark samples the live heap (HeapAlloc
// right after a forced collection: below Go's 4 MB minimum heap target an
// uncollected reading would sit near the target whatever the sweep kept)
// a hundred times in the sweep, evenly, and reports its peak
// (peak-heap-bytes);
// the flat sub-benchmark reports both peaks (peak-heap-100,
// peak-heap-10000) and their ratio (x-flat, goal at most 1.5), sweeping
// itself any size a -bench filter skipped.
//
// The venue records every request in its ledger; the sweep resets the
// ledger after each page so that the venue's bookkeeping is not counted
// as the client's memory. Each sample collects the heap, which adds to
// ns/op and nothing to bytes/op.
func BenchmarkFeeSweepMemory(b *testing.B) {
	sizes := []int{100, 10000}
	peaks := map[int]uint64{}
	for _, pages := range sizes {
		b.Run(fmt.Sprintf("pages=%d", pages), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				c, srv, _ := sweepSetup(b, pages)
				b.StartTimer()
				peaks[pages] = max(peaks[pages], sweepPeakHeap(b, c, srv, pages))
			}
			b.ReportMetric(float64(peaks[pages]), "peak-heap-bytes")
		})
	}
	b.Run("flat", func(b *testing.B) {
		for _, pages := range sizes {
			if peaks[pages] == 0 {
				c, srv, _ := sweepSetup(b, pages)
				peaks[pages] = sweepPeakHeap(b, c, srv, pages)
			}
		}
		for i := 0; i < b.N; i++ {
			// The sweeps ran above or in the pages=N sub-benchmarks.
		}
		b.ReportMetric(float64(peaks[100]), "peak-heap-100")
		b.ReportMetric(float64(peaks[10000]), "peak-heap-10000")
		b.ReportMetric(float64(peaks[10000])/float64(peaks[100]), "x-flat")
	})
}

// sweepPeakHeap sweeps pages pages (the venue's ledger keeps one request:
// see sweepSetup) and returns the largest live heap (HeapAlloc after a collection)
// of a hundred samples spread over the sweep.
func sweepPeakHeap(b *testing.B, c *broker.Client, srv *brokertest.Server, pages int) uint64 {
	b.Helper()
	var ms runtime.MemStats
	var peak uint64
	sample := func() {
		runtime.GC() // the live heap, not the collector's target
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapAlloc)
	}
	runtime.GC()
	sample()
	every := max(1, pages/100) // a hundred samples, each a collection
	sweep(b, c, pages, broker.Paging{OnProgress: func(p broker.Progress) {
		if p.Pages%every == 0 {
			sample()
		}
	}})
	return peak
}
