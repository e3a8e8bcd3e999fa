package budgettest

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/tradewire/tradewire/broker/brokertest"
	"github.com/tradewire/tradewire/internal/redistest"
	"github.com/tradewire/tradewire/signing"
	"github.com/tradewire/tradewire/transport"
	"github.com/tradewire/tradewire/venue"
)

// The fleet test's venue: 600 requests a minute (10 a second) in bursts
// of 20; four processes of three workers send 15 GETs each.
const (
	venuePerMinute = 600
	venueBurst     = 20
	fleetProcs     = 4
	procWorkers    = 3
	procRequests   = 15 // per process
)

// Fleet is the fleet test of one kind of shared budget: several OS
// processes sharing it keep, together, to the venue's budget, where
// private buckets at the venue's budget each do not.
type Fleet struct {
	// Name names the budget's server in the log: "Redis", "PostgreSQL".
	Name string
	// PerMinute and Burst are the shared budget's settings (the budget
	// keeps its own headroom under them).
	PerMinute float64
	Burst     int
	// HelperEnv is the environment variable under which the package's
	// TestHelperProcess runs Bot.
	HelperEnv string
	// Open opens the shared budget of account on the server at url, and
	// returns what closes it.
	Open func(ctx context.Context, url, account string) (transport.Limiter, func(), error)
}

// Bot is one bot process of the fleet, run by the package's
// TestHelperProcess: it sends its GETs through the shared budget named
// by its environment (a private bucket at the venue's budget when there
// is none), and tallies what they got.
func (f Fleet) Bot() (redistest.Tally, error) {
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
	if url := os.Getenv("BUDGET_URL"); url != "" {
		b, closeBudget, err := f.Open(ctx, url, os.Getenv("BUDGET_ACCOUNT"))
		if err != nil {
			return res, err
		}
		defer closeBudget()
		cfg.Limiter = b
	} else {
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

// run starts the fleet's processes against one venue account, sharing
// the budget of account on the server at url (private buckets when url
// is empty), releases them together and returns what they and the venue
// saw.
func (f Fleet) run(t *testing.T, url, account string) fleetRun {
	t.Helper()
	srv := brokertest.NewServer(venue.Config{RateLimits: venue.RateLimits{Account: venue.RateLimit{PerMinute: venuePerMinute, Burst: venueBurst}}, Seed: 1})
	defer srv.Close()
	ps := redistest.StartProcesses(t, fleetProcs, f.HelperEnv+"=fleet",
		"VENUE_URL="+srv.URL, "VENUE_API_KEY="+srv.APIKey, "VENUE_KEY="+srv.PrivateKeyBase64,
		"BUDGET_URL="+url, "BUDGET_ACCOUNT="+account)
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

// SharesOneBudget runs the fleet's processes hammering one simulated
// venue account on the real clock, first through the shared budget of
// account on the server at url, then each with a private bucket at the
// venue's full budget, and checks from the venue's own ledger that only
// the first keeps to the budget.
func (f Fleet) SharesOneBudget(t *testing.T, url, account string) {
	t.Helper()
	total := fleetProcs * procRequests

	shared := f.run(t, url, account)
	ok, throttled, failed, v429, span := summarize(shared)
	prefix, window, perSec := conformance(shared.requests, f.PerMinute, f.Burst)
	_, venueWindow, _ := conformance(shared.requests, venuePerMinute, venueBurst)
	t.Logf("shared %s budget (%v/min, burst %d; venue %d/min, burst %d): %d processes, %d requests in %v: %d ok, %d throttled, %d failed; venue 429s %d; max in any 1 s %d; worst excess over the fleet budget: every prefix %.3f, every window %.3f; over the venue's budget, every window %.3f",
		f.Name, f.PerMinute, f.Burst, venuePerMinute, venueBurst, fleetProcs, len(shared.requests), span.Round(time.Millisecond), ok, throttled, failed, v429, perSec, prefix, window, venueWindow)
	if len(shared.requests) != total || ok != total || failed != 0 {
		t.Errorf("shared: %d requests at the venue, %d ok, %d failed; want %d ok", len(shared.requests), ok, failed, total)
	}
	if v429 != 0 || throttled != 0 {
		t.Errorf("shared: the venue answered 429 %d times", v429)
	}
	// A token is taken at t on the server's clock and the request arrives
	// a little later, so arrivals can bunch by the jitter between
	// processes: half a request of slack for prefixes, one for arbitrary
	// windows.
	if prefix > 0.5 || window > 1 {
		t.Errorf("shared: the venue saw more than the fleet budget: prefix excess %.3f, window excess %.3f", prefix, window)
	}
	if venueWindow > 0 {
		t.Errorf("shared: a window exceeds the venue's budget by %.3f requests", venueWindow)
	}

	private := f.run(t, "", "")
	ok, throttled, failed, v429, span = summarize(private)
	prefix, worstVenue, perSec := conformance(private.requests, venuePerMinute, venueBurst)
	t.Logf("private buckets (each %d/min, burst %d): %d requests in %v: %d ok, %d throttled, %d failed; venue 429s %d; max in any 1 s %d; worst excess over the venue's budget: every prefix %.3f, every window %.3f",
		venuePerMinute, venueBurst, len(private.requests), span.Round(time.Millisecond), ok, throttled, failed, v429, perSec, prefix, worstVenue)
	if v429 == 0 && worstVenue <= 0 {
		t.Errorf("private buckets stayed within the venue's budget: the comparison shows nothing")
	}
}
