package pgbudget_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tradewire/tradewire/internal/pgtest"
	"github.com/tradewire/tradewire/transport/pgbudget"
)

// TestFleetSpendsTheBudget: the budget never under-grants. Four Budgets
// on one account, each with two callers, at the venue's budget scaled 60
// times (6,000 a minute: a second here is a minute there) are granted at
// least 95 % of the configured rate over 3 s, so a fleet can place 95
// orders a minute under 100; and no more than the budget's own rate
// (adaptive.Headroom: 5,940 a minute, bursts of 30 less the 25 the venue
// regains in 250 ms) allows.
func TestFleetSpendsTheBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("spends a budget for 3 s of real time")
	}
	t.Parallel()
	u := pgtest.URL(t)
	acct := pgtest.Account(t)
	const (
		perSecond = 100 // configured: 6,000 a minute
		headroom  = 99  // a second, kept to
		burst     = 5
	)
	var budgets []*pgbudget.Budget
	for i := 0; i < 4; i++ {
		budgets = append(budgets, open(t, u, acct, pgbudget.Config{RatePerMinute: perSecond * 60, Burst: 30}))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var granted atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for _, b := range budgets {
		for w := 0; w < 2; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for b.Wait(ctx) == nil {
					granted.Add(1)
				}
			}()
		}
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	n := float64(granted.Load())
	t.Logf("4 Budgets × 2 callers at %d a second (bursts of %d here) for %.2f s: %.0f granted, %.1f %% of the configured rate, %.1f %% of the %d a second and burst kept to; past the burst, %.1f a second: scaled back, %.1f orders a minute under 100",
		perSecond, burst, elapsed, n, 100*n/(perSecond*elapsed), 100*n/(headroom*elapsed+burst), headroom, (n-burst)/elapsed, (n-burst)/elapsed)
	if n < 0.95*perSecond*elapsed {
		t.Errorf("%.0f granted in %.2f s: under 95 %% of %d a second", n, elapsed, perSecond)
	}
	if n > headroom*elapsed+burst+1 {
		t.Errorf("%.0f granted in %.2f s: more than %d a second and a burst of %d allow", n, elapsed, headroom, burst)
	}
}
