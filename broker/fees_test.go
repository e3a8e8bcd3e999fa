package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/tradewire/tradewire/internal/adaptive"
	"github.com/tradewire/tradewire/transport"
)

// feeOrders returns the five orders of orders.json followed by two more:
// an ETH buy filled in two executions (one price sent bare) and a SOL sell
// partly filled.
func feeOrders(t testing.TB) []string {
	t.Helper()
	var p struct{ Results []json.RawMessage }
	if err := json.Unmarshal(readFixture(t, "orders.json"), &p); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range p.Results {
		out = append(out, string(r))
	}
	return append(out,
		`{"id":"0e0b2c8e-8e55-4a57-9a51-8cdb0b8d1c01","symbol":"ETH-USD","side":"buy","type":"market","state":"filled",
		  "executions":[{"effective_price":"2500.10","quantity":"0.4","timestamp":"2026-08-20T12:00:00Z"},
		                {"effective_price":2500.2,"quantity":"0.6","timestamp":"2026-08-20T12:00:01Z"}],
		  "fee_charged":"23.75152","estimated_fee_remaining":0,"updated_at":"2026-08-20T12:00:01Z"}`,
		`{"id":"0e0b2c8e-8e55-4a57-9a51-8cdb0b8d1c02","symbol":"SOL-USD","side":"sell","type":"limit","state":"partially_filled",
		  "executions":[{"effective_price":"10.5","quantity":"1","timestamp":"2026-08-20T13:00:00Z"}],
		  "fee_charged":0.09975,"updated_at":"2026-08-20T13:00:00Z"}`)
}

// quiet serves items as the orders of an account where nothing happens:
// the sweep's first read (the one bounded by created_at_end) pages
// through them, per to a page, and its catch-up reads find nothing
// updated since.
func quiet(v *fakeVenue, items []string, per int) {
	paged(v, pathOrders, items, per)
	v.mu.Lock()
	pages := v.routes[http.MethodGet+" "+pathOrders]
	v.mu.Unlock()
	v.handle(http.MethodGet, pathOrders, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Has("created_at_end") {
			pages(w, r)
			return
		}
		fmt.Fprint(w, `{"next":null,"previous":null,"results":[]}`)
	})
}

func TestFeeSummary(t *testing.T) {
	t.Parallel()
	c, v, _ := setup(t)
	ctx := context.Background()
	v.fixture(http.MethodGet, pathAccounts, "accounts.json")
	v.fixture(http.MethodGet, pathHoldings, "holdings.json")
	paged(v, pathOrders, feeOrders(t), 5)

	// The account number is cached by an earlier call; the summary still
	// reads the account afresh, once.
	if _, err := Collect(c.Holdings(ctx, nil)); err != nil {
		t.Fatal(err)
	}
	var progress []Progress
	r, err := c.FeeSummary(ctx, 24*time.Hour, Paging{OnProgress: func(p Progress) { progress = append(progress, p) }})
	if err != nil {
		t.Fatal(err)
	}
	// The first read: orders that existed at the sweep's instant (5 s
	// before now, the clock margin), updated within the day. The catch-up
	// read: orders updated since that instant. This venue ignores the
	// filters and sends every order again; none was updated since, so none
	// counts twice.
	first := "account_number=AB1234567890&created_at_end=2026-08-20T17%3A59%3A55Z&updated_at_start=2026-08-19T18%3A00%3A00Z"
	catchUp := "account_number=AB1234567890&updated_at_start=2026-08-20T17%3A59%3A55Z"
	wantRequests(t, v,
		"GET "+pathAccounts,
		"GET "+pathHoldings+"?account_number=AB1234567890",
		"GET "+pathAccounts,
		"GET "+pathOrders+"?"+first,
		"GET "+pathOrders+"?account_number=AB1234567890&created_at_end=2026-08-20T17%3A59%3A55Z&cursor=1&updated_at_start=2026-08-19T18%3A00%3A00Z",
		"GET "+pathOrders+"?"+catchUp,
		"GET "+pathOrders+"?"+strings.Replace(catchUp, "&", "&cursor=1&", 1))

	var sym []string
	for _, s := range r.BySymbol {
		sym = append(sym, fmt.Sprintf("%s:%d:%s:%s", s.Symbol, s.Orders, s.TotalFees, s.FilledNotional))
	}
	runChecks(t, []check{
		{"start", r.Start.Format(time.RFC3339), "2026-08-19T18:00:00Z"},
		{"end", r.End.Format(time.RFC3339), "2026-08-20T18:00:00Z"},
		{"fee ratio", exact(r.FeeRatio), "0.0095"},
		{"30-day volume", exact(r.ThirtyDayVolume), "12480.55"},
		{"total fees", r.TotalFees.String(), "25.90677"},
		{"orders", fmt.Sprint(r.Orders), "7"},
		{"notional", r.FilledNotional.String(), "10729.535"},
		{"effective rate", r.EffectiveFeeRate.String(), "0.002414528682"},
		{"effective rate defined", boolStr(r.EffectiveFeeRateDefined), "true"},
		{"by symbol", strings.Join(sym, " "), "BTC-USD:4:2.0555:8218.875 ETH-USD:2:23.75152:2500.16 SOL-USD:1:0.09975:10.5"},
		{"pages", fmt.Sprint(r.Pages), "4"},
		{"partial", boolStr(r.Partial), "false"},
		{"progress", fmt.Sprint(progress), "[{1 5} {2 7} {3 12} {4 14}]"},
	})
}

func TestFeeSummaryPageCap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("refused without AllowPartial", func(t *testing.T) {
		t.Parallel()
		c, v, _ := setup(t, Config{PageCap: 1})
		v.fixture(http.MethodGet, pathAccounts, "accounts.json")
		paged(v, pathOrders, feeOrders(t), 5)
		r, err := c.FeeSummary(ctx, time.Hour)
		var capErr *PageCapError
		if r != nil || !errors.As(err, &capErr) || capErr.Pages != 1 {
			t.Fatalf("%+v, %v", r, err)
		}
	})
	t.Run("marked partial with AllowPartial", func(t *testing.T) {
		t.Parallel()
		c, v, _ := setup(t)
		v.fixture(http.MethodGet, pathAccounts, "accounts.json")
		paged(v, pathOrders, feeOrders(t), 5)
		r, err := c.FeeSummary(ctx, time.Hour, Paging{MaxPages: 1}, Paging{AllowPartial: true})
		if err != nil {
			t.Fatal(err)
		}
		if !r.Partial || r.Pages != 1 || r.Orders != 5 || r.TotalFees.String() != "2.0555" {
			t.Errorf("%+v", r)
		}
		if n := v.count(pathOrders); n != 1 {
			t.Errorf("%d order pages read", n)
		}
	})
	t.Run("other errors are not made partial", func(t *testing.T) {
		t.Parallel()
		c, v, _ := setup(t)
		v.fixture(http.MethodGet, pathAccounts, "accounts.json")
		v.reply(http.MethodGet, pathOrders, 404, `{"type":"client_error","errors":[{"detail":"Not found.","attr":null}]}`)
		if _, err := c.FeeSummary(ctx, time.Hour, Paging{AllowPartial: true}); !errors.Is(err, transport.ErrNotFound) {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestFeeSummaryNothingFilled(t *testing.T) {
	t.Parallel()
	c, v, _ := setup(t)
	v.fixture(http.MethodGet, pathAccounts, "accounts.json")
	v.reply(http.MethodGet, pathOrders, 200, `{"next":null,"results":[{"symbol":"BTC-USD","state":"open","fee_charged":"0"}]}`)
	r, err := c.FeeSummary(context.Background(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if r.EffectiveFeeRateDefined || !r.EffectiveFeeRate.IsZero() || r.Orders != 1 || len(r.BySymbol) != 1 {
		t.Errorf("%+v", r)
	}
	if _, err := c.FeeSummary(context.Background(), 0); !errors.Is(err, transport.ErrInvalidRequest) {
		t.Errorf("zero window: %v", err)
	}
}

// TestFeeSummaryWaitsOnTheRateBudget runs a sweep longer than the burst:
// every request draws from the token bucket, so the sweep advances only as
// the bucket's clock does. The bucket has its own fake clock so that the
// test waits for its timers alone, not the per-attempt timeouts.
func TestFeeSummaryWaitsOnTheRateBudget(t *testing.T) {
	t.Parallel()
	budget := clockwork.NewFakeClockAt(testStart)
	c, v, _ := setup(t, Config{
		Transport: transport.Config{Limiter: transport.NewTokenBucket(budget, 60, 3)},
		PageCap:   10,
	}) // holds 2: Headroom
	v.fixture(http.MethodGet, pathAccounts, "accounts.json")
	quiet(v, feeOrders(t), 1) // 7 pages and 1 catch-up: 9 requests, burst 2, then 1 a second
	done := make(chan *FeeReport, 1)
	go func() {
		r, err := c.FeeSummary(context.Background(), time.Hour)
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	// One token a second, refilled adaptive.RateMargin under.
	perToken := time.Duration(math.Ceil(float64(time.Second) / (1 - adaptive.RateMargin)))
	for i := 0; i < 7; i++ {
		if err := budget.BlockUntilContext(context.Background(), 1); err != nil {
			t.Fatal(err)
		}
		if n := len(v.requests()); n != 2+i {
			t.Fatalf("%d requests sent before %v of budget time, want %d", n, budget.Since(testStart), 2+i)
		}
		budget.Advance(perToken)
	}
	r := <-done
	if r == nil || r.Pages != 8 || r.Orders != 7 || r.TotalFees.String() != "25.90677" {
		t.Fatalf("%+v", r)
	}
	if got := budget.Since(testStart); got != 7*perToken {
		t.Errorf("sweep took %v of budget time, want %v", got, 7*perToken)
	}
}
