package pgbudget_test

import (
	"context"
	"testing"

	"github.com/tradewire/tradewire/internal/pgtest"
	"github.com/tradewire/tradewire/internal/redistest"
	"github.com/tradewire/tradewire/transport"
	"github.com/tradewire/tradewire/transport/internal/budgettest"
	"github.com/tradewire/tradewire/transport/pgbudget"
)

// fleet: the budget set to exactly the venue's (600 a minute, bursts of
// 20): it keeps its own headroom (adaptive.Headroom: 594 a minute, bursts
// of 17) for the jitter between a token being granted and the request
// arriving.
var fleet = budgettest.Fleet{Name: "PostgreSQL", PerMinute: 600, Burst: 20, HelperEnv: "TRADEWIRE_PGBUDGET_HELPER",
	Open: func(ctx context.Context, url, account string) (transport.Limiter, func(), error) {
		b, err := pgbudget.Open(ctx, url, account, pgbudget.Config{RatePerMinute: 600, Burst: 20})
		if err != nil {
			return nil, nil, err
		}
		return b, b.Close, nil
	}}

// TestHelperProcess is not a test: it is one bot process of the fleet,
// started by TestFleetSharesOneBudget.
func TestHelperProcess(t *testing.T) {
	redistest.ServeHelper(t, fleet.HelperEnv, "fleet", func() (any, error) { return fleet.Bot() })
}

// TestFleetSharesOneBudget: four OS processes on one PostgreSQL budget
// keep to the venue's budget, where private buckets do not
// (budgettest.Fleet.SharesOneBudget).
func TestFleetSharesOneBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("runs OS processes for several seconds")
	}
	fleet.SharesOneBudget(t, pgtest.URL(t), pgtest.Account(t))
}
