package venue_test

import (
	"math"
	"net/http"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tradewire/tradewire/venue"
)

var rlStart = time.Date(2026, 8, 20, 12, 0, 0, 0, time.UTC)

// Paths of each class, v2 and v1.
const (
	rlBBA       = "/api/v2/crypto/marketdata/best_bid_ask/"
	rlBBAv1     = "/api/v1/crypto/marketdata/best_bid_ask/"
	rlAccounts  = "/api/v2/crypto/trading/accounts/"
	rlOrders    = "/api/v2/crypto/trading/orders/?account_number=TW0000000001"
	rlCancel    = "/api/v2/crypto/trading/orders/no-such-order/cancel/"
	rlCancelV1  = "/api/v1/crypto/trading/orders/no-such-order/cancel/"
	rlHoldingV1 = "/api/v1/crypto/trading/holdings/"
)

// rlVenue is an in-memory venue on a NewClock at rlStart.
type rlVenue struct {
	t   *testing.T
	srv *testServer
	clk venue.Clock
	hc  *http.Client
}

func newRLVenue(t *testing.T, cfg venue.Config) *rlVenue {
	t.Helper()
	clk := venue.NewClock(rlStart)
	cfg.Clock = clk
	srv, err := newServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &rlVenue{t: t, srv: srv, clk: clk, hc: &http.Client{Transport: srv.Transport()}}
}

// send sends one signed request and returns its status and Retry-After.
func (v *rlVenue) send(method, target string) (int, string) {
	v.t.Helper()
	resp, err := v.hc.Do(signedRequest(v.t, v.srv, method, target, ""))
	if err != nil {
		v.t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Retry-After")
}

// served sends n requests and returns how many were not answered 429.
func (v *rlVenue) served(n int, method, target string) int {
	v.t.Helper()
	ok := 0
	for range n {
		if st, _ := v.send(method, target); st != http.StatusTooManyRequests {
			ok++
		}
	}
	return ok
}

// tally is what the ledger says of one class in one phase.
type tally struct{ served, throttled int }

// phases counts the ledger's requests of class by phase: phase i holds
// those that arrived in [bounds[i-1], bounds[i]) after rlStart.
func phases(l *venue.Ledger, class string, bounds ...time.Duration) []tally {
	out := make([]tally, len(bounds)+1)
	for _, r := range l.Requests() {
		if r.Class != class {
			continue
		}
		i := 0
		for i < len(bounds) && r.Time.Sub(rlStart) >= bounds[i] {
			i++
		}
		if r.Status == http.StatusTooManyRequests {
			out[i].throttled++
		} else {
			out[i].served++
		}
	}
	return out
}

// TestRateLimitsClassesAreIndependent: a class with its own bucket
// drains alone, v1 and v2 paths alike; the classes without one share the
// account-wide bucket.
func TestRateLimitsClassesAreIndependent(t *testing.T) {
	t.Parallel()
	v := newRLVenue(t, venue.Config{RateLimits: venue.RateLimits{Account: venue.RateLimit{PerMinute: 60, Burst: 4},
		Classes: map[string]venue.RateLimit{
			"market_data":  {PerMinute: 60, Burst: 3},
			"order_writes": {PerMinute: 60, Burst: 2},
		},
	}})
	if n := v.served(5, "GET", rlBBA); n != 3 {
		t.Errorf("market data served %d of 5, want its burst 3", n)
	}
	if st, _ := v.send("GET", rlBBAv1); st != http.StatusTooManyRequests {
		t.Errorf("v1 best_bid_ask after v2's drained its class: %d, want 429", st)
	}
	// Order reads and account reads share the account-wide 4; market data
	// took none of it.
	if n := v.served(3, "GET", rlOrders); n != 3 {
		t.Errorf("order reads served %d of 3", n)
	}
	if n := v.served(2, "GET", rlHoldingV1); n != 1 {
		t.Errorf("v1 holdings served %d of 2, want the shared bucket's last token", n)
	}
	if st, _ := v.send("GET", rlAccounts); st != http.StatusTooManyRequests {
		t.Errorf("accounts after the shared bucket drained: %d", st)
	}
	// Creates and cancels have their own 2: a cancel of an unknown order
	// costs a token and answers 404.
	if st, _ := v.send("POST", rlCancel); st != http.StatusNotFound {
		t.Errorf("cancel: %d, want 404", st)
	}
	if n := v.served(2, "POST", rlCancelV1); n != 1 {
		t.Errorf("v1 cancels served %d of 2", n)
	}
	v.clk.Advance(time.Second) // one token into each bucket
	for _, tc := range []struct{ method, target string }{{"GET", rlBBA}, {"GET", rlAccounts}, {"POST", rlCancel}} {
		if st, _ := v.send(tc.method, tc.target); st == http.StatusTooManyRequests {
			t.Errorf("%s %s a second later: 429", tc.method, tc.target)
		}
	}
	want := map[string]tally{
		"market_data":   {served: 4, throttled: 3},
		"account_reads": {served: 2, throttled: 2},
		"order_reads":   {served: 3},
		"order_writes":  {served: 3, throttled: 1},
	}
	for class, w := range want {
		if got := phases(v.srv.Ledger(), class)[0]; got != w {
			t.Errorf("ledger %s: %+v, want %+v", class, got, w)
		}
	}
}

// TestRateLimitsDefaultIsOneSharedBucket: with no RateLimits every class
// draws on the one account-wide bucket of 300.
func TestRateLimitsDefaultIsOneSharedBucket(t *testing.T) {
	t.Parallel()
	v := newRLVenue(t, venue.Config{})
	if n := v.served(100, "GET", rlBBA) + v.served(100, "GET", rlOrders) + v.served(100, "POST", rlCancel); n != 300 {
		t.Fatalf("served %d of the burst 300", n)
	}
	for _, target := range []string{rlBBA, rlAccounts, rlOrders} {
		if st, ra := v.send("GET", target); st != http.StatusTooManyRequests || ra != "" {
			t.Errorf("GET %s after 300: %d Retry-After %q, want 429 without one", target, st, ra)
		}
	}
}

// TestRateLimitsScheduleLowersAndRestores: the schedule lowers a class's
// capacity at its time on the venue's clock, drops the tokens above the
// new burst, refills at the lower rate, and restores the rate later
// without adding tokens at once. Another class is untouched.
func TestRateLimitsScheduleLowersAndRestores(t *testing.T) {
	t.Parallel()
	limits := venue.RateLimits{
		Classes: map[string]venue.RateLimit{"order_reads": {PerMinute: 60, Burst: 10}},
		Schedule: []venue.RateLimit{
			{At: time.Minute, Class: "order_reads", PerMinute: 6, Burst: 2},
			{At: 3 * time.Minute, Class: "order_reads", PerMinute: 60, Burst: 10},
		},
	}
	run := func(t *testing.T, cfg venue.Config) []tally {
		v := newRLVenue(t, cfg)
		at := func(d time.Duration) { v.clk.Advance(rlStart.Add(d).Sub(v.clk.Now())) }
		v.served(5, "GET", rlOrders) // 5 of 10 left
		at(59 * time.Second)         // full again
		v.served(0, "GET", rlOrders)
		at(time.Minute) // capacity 2: tokens 10 → 2
		v.served(3, "GET", rlOrders)
		if st, _ := v.send("GET", rlBBA); st == http.StatusTooManyRequests {
			t.Error("market data throttled by the order reads' schedule")
		}
		at(time.Minute + 10*time.Second) // 0.1 a second: one token
		v.served(2, "GET", rlOrders)
		at(3*time.Minute - time.Second) // 109 s at 0.1/s, capped at 2
		v.served(3, "GET", rlOrders)
		at(3 * time.Minute) // restored, but 0.1 token earned, none added
		v.served(1, "GET", rlOrders)
		at(3*time.Minute + 5*time.Second) // 1 a second again: 5.1 tokens
		v.served(6, "GET", rlOrders)
		return phases(v.srv.Ledger(), "order_reads", time.Minute, 3*time.Minute)
	}
	got := run(t, venue.Config{RateLimits: limits})
	want := []tally{{served: 5}, {served: 2 + 1 + 2, throttled: 1 + 1 + 1}, {served: 0 + 5, throttled: 1 + 1}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("order reads by phase (before, lowered, restored) = %+v, want %+v", got, want)
	}
	// Negative control: the same requests without the schedule are all served.
	limits.Schedule = nil
	got = run(t, venue.Config{RateLimits: limits})
	if want := []tally{{served: 5}, {served: 8}, {served: 7}}; !reflect.DeepEqual(got, want) {
		t.Errorf("without the schedule: %+v, want %+v", got, want)
	}
}

// TestRateLimitsScheduleAccountWide: a step with no class changes the
// account-wide bucket, for every class that shares it.
func TestRateLimitsScheduleAccountWide(t *testing.T) {
	t.Parallel()
	v := newRLVenue(t, venue.Config{RateLimits: venue.RateLimits{Account: venue.RateLimit{PerMinute: 60, Burst: 5},
		Schedule: []venue.RateLimit{{At: 30 * time.Second, PerMinute: 60, Burst: 1}},
	}})
	if n := v.served(6, "GET", rlBBA); n != 5 {
		t.Errorf("before the step: served %d of 6", n)
	}
	v.clk.Advance(30 * time.Second)
	if n := v.served(3, "GET", rlAccounts) + v.served(3, "GET", rlOrders); n != 1 {
		t.Errorf("after the step to burst 1: served %d of 6", n)
	}
}

// TestRateLimitsRetryAfter: off (the default) sends none; bucket the whole
// seconds until a token; a fixed value that value, whatever the bucket.
func TestRateLimitsRetryAfter(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ mode, want string }{
		{"", ""}, {"off", ""}, {"bucket", "2"}, {"7s", "7"}, {"0s", "0"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			t.Parallel()
			v := newRLVenue(t, venue.Config{RateLimits: venue.RateLimits{
				Account: venue.RateLimit{PerMinute: 30, Burst: 1}, RetryAfter: tc.mode,
			}})
			v.send("GET", rlAccounts)
			st, ra := v.send("GET", rlAccounts)
			if st != http.StatusTooManyRequests || ra != tc.want {
				t.Errorf("429: %d Retry-After %q, want 429 %q", st, ra, tc.want)
			}
			v.clk.Advance(1500 * time.Millisecond) // 0.75 of a token: one second to go
			st, ra = v.send("GET", rlAccounts)
			if tc.mode == "bucket" {
				tc.want = "1"
			}
			if st != http.StatusTooManyRequests || ra != tc.want {
				t.Errorf("429 later: %d Retry-After %q, want 429 %q", st, ra, tc.want)
			}
		})
	}
}

func TestRateLimitsValidate(t *testing.T) {
	t.Parallel()
	ok := venue.RateLimit{PerMinute: 10, Burst: 10}
	for _, tc := range []struct {
		name string
		cfg  venue.Config
		want string
	}{
		{"unknown class", venue.Config{RateLimits: venue.RateLimits{Classes: map[string]venue.RateLimit{"reads": ok}}}, `unknown class "reads"`},
		{"zero burst", venue.Config{RateLimits: venue.RateLimits{Classes: map[string]venue.RateLimit{"market_data": {PerMinute: 10}}}}, "classes[market_data]"},
		{"bad account", venue.Config{RateLimits: venue.RateLimits{Account: venue.RateLimit{PerMinute: -1, Burst: 3}}}, "account"},
		{"step without bucket", venue.Config{RateLimits: venue.RateLimits{Schedule: []venue.RateLimit{{Class: "order_writes", PerMinute: 10, Burst: 10}}}}, "no bucket of its own"},
		{"steps out of order", venue.Config{RateLimits: venue.RateLimits{Schedule: []venue.RateLimit{{At: time.Minute, PerMinute: 10, Burst: 10}, {At: time.Second, PerMinute: 10, Burst: 10}}}}, "schedule[1]"},
		{"step to nothing", venue.Config{RateLimits: venue.RateLimits{Schedule: []venue.RateLimit{{At: time.Minute}}}}, "schedule[0]"},
		{"step on an account-wide bucket that is off", venue.Config{RateLimits: venue.RateLimits{Account: venue.RateLimit{PerMinute: math.Inf(1)}, Schedule: []venue.RateLimit{ok}}}, "is off"},
		{"fractional retry after", venue.Config{RateLimits: venue.RateLimits{RetryAfter: "1.5s"}}, "retry_after"},
		{"unknown retry after", venue.Config{RateLimits: venue.RateLimits{RetryAfter: "soon"}}, "retry_after"},
	} {
		_, err := newServer(tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want one naming %q", tc.name, err, tc.want)
		}
	}
	// Negative control: a valid set of every part builds.
	if _, err := newServer(venue.Config{RateLimits: venue.RateLimits{
		Account: ok, Classes: map[string]venue.RateLimit{"order_writes": ok},
		Schedule:   []venue.RateLimit{{At: time.Minute, PerMinute: 10, Burst: 10}, {At: time.Minute, Class: "order_writes", PerMinute: 10, Burst: 10}},
		RetryAfter: "bucket",
	}}); err != nil {
		t.Errorf("valid limits refused: %v", err)
	}
}

// TestParseRateLimits reads testdata/ratelimits.json, the package doc's
// example, and refuses what New would.
func TestParseRateLimits(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("testdata/ratelimits.json")
	if err != nil {
		t.Fatal(err)
	}
	got, err := venue.ParseRateLimits(b)
	if err != nil {
		t.Fatal(err)
	}
	want := venue.RateLimits{
		Account: venue.RateLimit{PerMinute: 100, Burst: 300},
		Classes: map[string]venue.RateLimit{
			"market_data":  {PerMinute: 300, Burst: 300},
			"order_writes": {PerMinute: 100, Burst: 300},
		},
		Schedule: []venue.RateLimit{
			{At: 10 * time.Minute, Class: "order_writes", PerMinute: 20, Burst: 20},
			{At: 20 * time.Minute, Class: "order_writes", PerMinute: 100, Burst: 300},
		},
		RetryAfter: "bucket",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parsed %+v\nwant   %+v", got, want)
	}
	if _, err := newServer(venue.Config{RateLimits: got}); err != nil {
		t.Errorf("New refused the parsed limits: %v", err)
	}
	for _, bad := range []string{
		`{"clases": {}}`,
		`{"classes": {"market_data": {"per_minute": 10}}}`,
		`{"schedule": [{"at": "ten minutes", "per_minute": 1, "burst": 1}]}`,
		`{"schedule": [{"at": "1m", "class": "order_reads", "per_minute": 1, "burst": 1}]}`,
		`{"account": {"per_minute": 0, "burst": 0}}`,
		`{"retry_after": "true"}`,
	} {
		if _, err := venue.ParseRateLimits([]byte(bad)); err == nil {
			t.Errorf("ParseRateLimits(%s) accepted", bad)
		}
	}
}
