package redisbudget

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/tradewire/tradewire/internal/adaptive"
	"github.com/tradewire/tradewire/internal/redistest"
	"github.com/tradewire/tradewire/transport"
)

// venueTally runs arrivals (sorted) through the venue's own bucket: 100 a
// minute, bursts of 300, full at the first arrival. It returns how many
// it answers 429.
func venueTally(arrivals []time.Time) int {
	const perSecond, burst = 100.0 / 60, 300.0
	tokens, last, throttled := burst, arrivals[0], 0
	for _, at := range arrivals {
		tokens = math.Min(burst, tokens+at.Sub(last).Seconds()*perSecond)
		last = at
		if tokens < 1 {
			throttled++
			continue
		}
		tokens--
	}
	return throttled
}

// spendFleet has members budgets (separate Redis connections, as separate
// processes have) take total tokens between them as fast as they are
// granted, and returns the grant times, on this machine's clock, taken
// as each Wait returned.
func spendFleet(t *testing.T, members []transport.Limiter, total int) []time.Time {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var mu sync.Mutex
	var grants []time.Time
	var wg sync.WaitGroup
	left := total
	for _, m := range members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				if left == 0 {
					mu.Unlock()
					return
				}
				left--
				mu.Unlock()
				var err error
				if a, ok := m.(interface {
					WaitFor(context.Context, string, string) error
				}); ok {
					err = a.WaitFor(ctx, "GET", "/api/v2/crypto/trading/accounts/")
				} else {
					err = m.Wait(ctx)
				}
				if err != nil {
					t.Error(err)
					return
				}
				at := time.Now()
				mu.Lock()
				grants = append(grants, at)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	slices.SortFunc(grants, func(a, b time.Time) int { return a.Compare(b) })
	return grants
}

// worst429s is the most 429s the venue answers over delay patterns of at
// most adaptive.MaxGrantDelay between each grant and its arrival: the
// burst's requests all arriving that late and the rest at once (the worst
// case Headroom is built for), and 50 patterns of uniform delays.
func worst429s(grants []time.Time, burst int) (worst int, pattern string) {
	arrive := func(delay func(i int) time.Duration) int {
		arr := make([]time.Time, len(grants))
		for i, g := range grants {
			arr[i] = g.Add(delay(i))
		}
		slices.SortFunc(arr, func(a, b time.Time) int { return a.Compare(b) })
		return venueTally(arr)
	}
	worst = arrive(func(i int) time.Duration {
		if i < burst {
			return adaptive.MaxGrantDelay
		}
		return 0
	})
	pattern = "burst late, rest at once"
	for seed := uint64(1); seed <= 50; seed++ {
		r := rand.New(rand.NewPCG(seed, 0))
		if n := arrive(func(int) time.Duration { return time.Duration(r.Int64N(int64(adaptive.MaxGrantDelay) + 1)) }); n > worst {
			worst, pattern = n, "uniform delays"
		}
	}
	return worst, pattern
}

// TestFleetBurstSurvivesGrantDelay: four members of a fleet, each with its
// own Redis connection, spend the venue's whole burst and then some at
// once through one shared budget; however the up-to-250 ms between each
// grant and the request's arrival falls, the venue's own bucket (100 a
// minute, bursts of 300) answers no 429 — with the fixed budget and with
// the adaptive one. The control: the same fleet through a budget that
// keeps only RateMargin under the venue (99 a minute, the whole 300
// burst), no Headroom, draws 429s from the same delays.
func TestFleetBurstSurvivesGrantDelay(t *testing.T) {
	t.Parallel()
	url := redistest.URL(t)
	const members, extra = 4, 3 // extra: tokens past the burst, 0.6 s apart
	fleet := func(acct string, learn bool) []transport.Limiter {
		var ls []transport.Limiter
		for i := 0; i < members; i++ {
			opt, err := redis.ParseURL(url)
			if err != nil {
				t.Fatal(err)
			}
			rdb := redis.NewClient(opt)
			t.Cleanup(func() { rdb.Close() })
			b, err := New(context.Background(), rdb, acct, Config{RatePerMinute: 100, Burst: 300, Adaptive: learn})
			if err != nil {
				t.Fatal(err)
			}
			ls = append(ls, b)
		}
		return ls
	}
	_, burst := adaptive.Headroom(100, 300)
	for _, tc := range []struct {
		name     string
		adaptive bool
	}{{"fixed", false}, {"adaptive", true}} {
		grants := spendFleet(t, fleet(redistest.Account(t, url), tc.adaptive), burst+extra)
		n, pattern := worst429s(grants, burst)
		t.Logf("%s budget, %d members: %d grants over %v; venue 429s, worst over the delay patterns: %d (%s)",
			tc.name, members, len(grants), grants[len(grants)-1].Sub(grants[0]).Round(time.Millisecond), n, pattern)
		if n != 0 {
			t.Errorf("%s: the venue answered %d 429s with grants delayed up to %v (%s)", tc.name, n, adaptive.MaxGrantDelay, pattern)
		}
	}

	// Control: no Headroom.
	ctrl := fleet(redistest.Account(t, url), false)
	for _, l := range ctrl {
		l.(*Budget).limit = redis_rate.Limit{Rate: 99_000, Period: 1000 * time.Minute, Burst: 300}
	}
	grants := spendFleet(t, ctrl, 300+extra)
	n, pattern := worst429s(grants, 300)
	t.Logf("control, no Headroom (99/min, burst 300): %d grants; venue 429s, worst: %d (%s)", len(grants), n, pattern)
	if n == 0 {
		t.Error("without Headroom the delays drew no 429: the test shows nothing")
	}
}
