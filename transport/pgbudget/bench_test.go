package pgbudget_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tradewire/tradewire/internal/pgconn"
	"github.com/tradewire/tradewire/internal/pgtest"
	"github.com/tradewire/tradewire/transport/pgbudget"
)

// A budget no benchmark can spend: it measures the round trip, not waits.
const (
	benchPerMinute = 1e9
	benchBurst     = 1 << 30
)

// BenchmarkWait compares one Wait on the PostgreSQL budget (one statement
// that locks the account's row and commits) with its floor, a SELECT 1 on
// a pool to the same server, interleaved in one run; ratio reports the
// Wait over the SELECT 1 as x-baseline and the Wait's own cost in µs.
func BenchmarkWait(b *testing.B) {
	u := pgtest.URL(b)
	ctx := context.Background()
	budget := open(b, u, pgtest.Account(b), pgbudget.Config{RatePerMinute: benchPerMinute, Burst: benchBurst})
	pool := inspect(b, u)
	floor := func(b *testing.B, p *pgconn.Pool) {
		var one int
		if err := p.QueryRow(ctx, `SELECT 1`).Scan(&one); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("select1", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			floor(b, pool)
		}
	})
	b.Run("pgbudget", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if err := budget.Wait(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ratio", func(b *testing.B) {
		var base, shared time.Duration
		for i := 0; i < b.N; i++ {
			start := time.Now()
			floor(b, pool)
			base += time.Since(start)
			start = time.Now()
			if err := budget.Wait(ctx); err != nil {
				b.Fatal(err)
			}
			shared += time.Since(start)
		}
		b.ReportMetric(float64(shared)/float64(base), "x-baseline")
		b.ReportMetric(float64(shared.Microseconds())/float64(b.N), "µs-wait")
		b.ReportMetric(float64(base.Microseconds())/float64(b.N), "µs-select1")
	})
}

// BenchmarkWaitContended is four Budgets on one account (four processes)
// taking tokens as fast as they can from parallel goroutines: the row
// lock serializes them, so µs-per-token bounds the rate the budget can
// grant at all.
func BenchmarkWaitContended(b *testing.B) {
	u := pgtest.URL(b)
	acct := pgtest.Account(b)
	var budgets [4]*pgbudget.Budget
	for i := range budgets {
		budgets[i] = open(b, u, acct, pgbudget.Config{RatePerMinute: benchPerMinute, Burst: benchBurst})
	}
	var next atomic.Int64
	ctx := context.Background()
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		budget := budgets[next.Add(1)%int64(len(budgets))]
		for pb.Next() {
			if err := budget.Wait(ctx); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(time.Since(start).Microseconds())/float64(b.N), "µs-per-token")
}
