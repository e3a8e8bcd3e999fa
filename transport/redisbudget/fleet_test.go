package redisbudget_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/tradewire/tradewire/internal/redistest"
	"github.com/tradewire/tradewire/transport"
	"github.com/tradewire/tradewire/transport/internal/budgettest"
	"github.com/tradewire/tradewire/transport/redisbudget"
)

// fleet: the budget set to 90 % of the venue's (600 a minute, bursts of
// 20), leaving room for the jitter between a token being taken and the
// request arriving.
var fleet = budgettest.Fleet{Name: "Redis", PerMinute: 540, Burst: 18, HelperEnv: "TRADEWIRE_REDISBUDGET_HELPER",
	Open: func(ctx context.Context, url, account string) (transport.Limiter, func(), error) {
		opt, err := redis.ParseURL(url)
		if err != nil {
			return nil, nil, err
		}
		rdb := redis.NewClient(opt)
		b, err := redisbudget.New(ctx, rdb, account, redisbudget.Config{RatePerMinute: 540, Burst: 18})
		if err != nil {
			rdb.Close()
			return nil, nil, err
		}
		return b, func() { rdb.Close() }, nil
	}}

// TestHelperProcess is not a test: it is one bot process of the fleet,
// started by TestFleetSharesOneBudget.
func TestHelperProcess(t *testing.T) {
	redistest.ServeHelper(t, fleet.HelperEnv, "fleet", func() (any, error) { return fleet.Bot() })
}

// TestFleetSharesOneBudget: four OS processes on one Redis budget keep to
// the venue's budget, where private buckets do not
// (budgettest.Fleet.SharesOneBudget).
func TestFleetSharesOneBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("runs OS processes for several seconds")
	}
	url := redistest.URL(t)
	fleet.SharesOneBudget(t, url, redistest.Account(t, url))
}
