package pgbudget_test

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/tradewire/tradewire/broker/brokertest"
	"github.com/tradewire/tradewire/internal/pgtest"
	"github.com/tradewire/tradewire/internal/redistest"
	"github.com/tradewire/tradewire/signing"
	"github.com/tradewire/tradewire/transport"
	"github.com/tradewire/tradewire/transport/pgbudget"
	"github.com/tradewire/tradewire/venue"
)

// The fleet: venue budget 600/min (10/s), bursts of 20, and the fleet's
// shared budget set to exactly that: the budget keeps its own headroom
// (adaptive.Headroom: 594/min, bursts of 17) for the jitter between a
// token being granted and the request arriving.
const (
	venuePerMinute = 600
	venueBurst     = 20
	fleetPerMinute = venuePerMinute
	fleetBurst     = venueBurst
	fleetProcs     = 4
	procWorkers    = 3
	procRequests   = 15 // per process
)

const helperEnv = "TRADEWIRE_PGBUDGET_HELPER"

// TestHelperProcess is not a test: it is one bot process of the fleet,
// started by runFleet.
func TestHelperProcess(t *testing.T) {
	redistest.ServeHelper(t, helperEnv, "fleet", func() (any, error) { return fleetBot() })
}

func fleetBot() (redistest.Tally, error) {
	var res redistest.Tally
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pk, err := signing.ParsePrivateKey(os.Getenv("VENUE_KEY"))
	if err != nil {
		return res, err
	}
	signer, err := signing.New(os.Getenv("VENUE_API_KEY"), pk)
	if err != nil {
		return res, err
	}
	// One attempt per request: every 429 shows in the venue's ledger and
	// in the result.
	cfg := transport.Config{Retry: &transport.RetryPolicy{}}
	if url := os.Getenv("POSTGRES_URL"); url != "" {
		b, err := pgbudget.Open(ctx, url, os.Getenv("BUDGET_ACCOUNT"), pgbudget.Config{RatePerMinute: fleetPerMinute, Burst: fleetBurst})
		if err != nil {
			return res, err
		}
		defer b.Close()
		cfg.Limiter = b
	} else {
		// Without PostgreSQL: a private bucket at the full budget per process.
		cfg.RatePerMinute, cfg.Burst = venuePerMinute, venueBurst
	}
	tc, err := transport.New(os.Getenv("VENUE_URL"), signer, cfg)
	if err != nil {
		return res, err
	}
	if err := redistest.AwaitRelease(); err != nil {
		return res, err
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	jobs := make(chan int, procRequests)
	for i := 0; i < procRequests; i++ {
		jobs <- i
	}
	close(jobs)
	for w := 0; w < procWorkers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range jobs {
				_, err := tc.Get(ctx, "/api/v2/crypto/trading/accounts/")
				mu.Lock()
				res.Add(err, errors.Is(err, transport.ErrRateLimited))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return res, nil
}

type fleetRun struct {
	results  []redistest.Tally
	requests []venue.Request
}

// runFleet starts fleetProcs bot processes against one venue account,
// sharing the budget in the PostgreSQL at pgURL (private buckets when it
// is empty),
// releases them together and returns what they and the venue saw.
func runFleet(t *testing.T, pgURL, budgetAccount string) fleetRun {
	t.Helper()
	srv := brokertest.NewServer(venue.Config{RateLimits: venue.RateLimits{Account: venue.RateLimit{PerMinute: venuePerMinute, Burst: venueBurst}}, Seed: 1})
	defer srv.Close()
	ps := redistest.StartProcesses(t, fleetProcs, helperEnv+"=fleet",
		"VENUE_URL="+srv.URL, "VENUE_API_KEY="+srv.APIKey, "VENUE_KEY="+srv.PrivateKeyBase64,
		"POSTGRES_URL="+pgURL, "BUDGET_ACCOUNT="+budgetAccount)
	var run fleetRun
	run.results = make([]redistest.Tally, fleetProcs)
	ps.Release(t, func(i int) any { return &run.results[i] })
	run.requests = srv.Ledger().Requests()
	return run
}

// conformance checks the venue's ledger against a token bucket of
// perMinute and burst that starts full. prefix is the largest excess of
// count(first..j) over burst + rate×(t_j − t_first), window the largest
// excess of count(i..j) over burst + rate×(t_j − t_i) over every window;
// both are ≤ 0 when the ledger conforms. perSecond is the most requests
// seen within any one second.
func conformance(reqs []venue.Request, perMinute float64, burst int) (prefix, window float64, perSecond int) {
	rate := perMinute / 60
	prefix, window = -float64(burst), -float64(burst)
	for i := range reqs {
		for j := i; j < len(reqs); j++ {
			el := reqs[j].Time.Sub(reqs[i].Time).Seconds()
			ex := float64(j-i+1) - (float64(burst) + rate*el)
			window = max(window, ex)
			if i == 0 {
				prefix = max(prefix, ex)
			}
			if el < 1 && j-i+1 > perSecond {
				perSecond = j - i + 1
			}
		}
	}
	return prefix, window, perSecond
}

func summarize(run fleetRun) (ok, throttled, failed, venue429 int, span time.Duration) {
	for _, r := range run.results {
		ok += r.OK
		throttled += r.Throttled
		failed += r.Failed
	}
	for _, r := range run.requests {
		if r.Status == 429 {
			venue429++
		}
	}
	if n := len(run.requests); n > 1 {
		span = run.requests[n-1].Time.Sub(run.requests[0].Time)
	}
	return
}

// TestFleetSharesOneBudget runs four OS processes hammering one simulated
// venue account on the real clock, first through one PostgreSQL budget at
// the venue's own rate and burst, then each with a private bucket at the
// full budget, and checks from the venue's own ledger that only the first
// keeps to the budget.
func TestFleetSharesOneBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("runs OS processes for several seconds")
	}
	url := pgtest.URL(t)
	total := fleetProcs * procRequests

	shared := runFleet(t, url, pgtest.Account(t))
	ok, throttled, failed, v429, span := summarize(shared)
	prefix, window, perSec := conformance(shared.requests, fleetPerMinute, fleetBurst)
	_, venueWindow, _ := conformance(shared.requests, venuePerMinute, venueBurst)
	t.Logf("shared PostgreSQL budget (%d/min, burst %d; venue %d/min, burst %d): %d processes, %d requests in %v: %d ok, %d throttled, %d failed; venue 429s %d; max in any 1 s %d; worst excess over the fleet budget: every prefix %.3f, every window %.3f; over the venue's budget, every window %.3f",
		fleetPerMinute, fleetBurst, venuePerMinute, venueBurst, fleetProcs, len(shared.requests), span.Round(time.Millisecond), ok, throttled, failed, v429, perSec, prefix, window, venueWindow)
	if len(shared.requests) != total || ok != total || failed != 0 {
		t.Errorf("shared: %d requests at the venue, %d ok, %d failed; want %d ok", len(shared.requests), ok, failed, total)
	}
	if v429 != 0 || throttled != 0 {
		t.Errorf("shared: the venue answered 429 %d times", v429)
	}
	// A token is taken at t on the server's clock and the request arrives a
	// little later, so arrivals can bunch by the jitter between processes:
	// half a request of slack for prefixes, one for arbitrary windows.
	if prefix > 0.5 || window > 1 {
		t.Errorf("shared: the venue saw more than the fleet budget: prefix excess %.3f, window excess %.3f", prefix, window)
	}
	if venueWindow > 0 {
		t.Errorf("shared: a window exceeds the venue's budget by %.3f requests", venueWindow)
	}

	private := runFleet(t, "", "")
	ok, throttled, failed, v429, span = summarize(private)
	prefix, worstVenue, perSec := conformance(private.requests, venuePerMinute, venueBurst)
	t.Logf("private buckets (each %d/min, burst %d): %d requests in %v: %d ok, %d throttled, %d failed; venue 429s %d; max in any 1 s %d; worst excess over the venue's budget: every prefix %.3f, every window %.3f",
		venuePerMinute, venueBurst, len(private.requests), span.Round(time.Millisecond), ok, throttled, failed, v429, perSec, prefix, worstVenue)
	if v429 == 0 && worstVenue <= 0 {
		t.Errorf("private buckets stayed within the venue's budget: the comparison shows nothing")
	}
}
