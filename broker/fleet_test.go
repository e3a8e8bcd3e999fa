package broker_test

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/tradewire/tradewire/broker"
	"github.com/tradewire/tradewire/broker/brokertest"
	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/internal/redistest"
	"github.com/tradewire/tradewire/orders"
	"github.com/tradewire/tradewire/signing"
	"github.com/tradewire/tradewire/transport"
	"github.com/tradewire/tradewire/venue"
)

func fleetClient(t *testing.T, srv *brokertest.Server, redisURL string, extra ...broker.Config) (*broker.Client, error) {
	t.Helper()
	key, err := signing.ParsePrivateKey(srv.PrivateKeyBase64)
	if err != nil {
		t.Fatal(err)
	}
	cfg := config(extra)
	cfg.APIKey, cfg.PrivateKey, cfg.BaseURL, cfg.RedisURL = srv.APIKey, key, srv.URL, redisURL
	if cfg.Transport.RoundTripper == nil {
		cfg.Transport.RoundTripper = srv.Client().Transport
	}
	return broker.New(cfg)
}

// config returns the first of extra, or the zero Config.
func config(extra []broker.Config) broker.Config {
	if len(extra) > 0 {
		return extra[0]
	}
	return broker.Config{}
}

func accountReads(srv *brokertest.Server) int {
	n := 0
	for _, r := range srv.Ledger().Requests() {
		if strings.HasPrefix(r.Target, "/api/v2/crypto/trading/accounts/") {
			n++
		}
	}
	return n
}

// A Redis that cannot be reached is an error at start-up, never a silent
// fallback to a private budget; nothing is sent to the venue.
func TestRedisUnreachableRefusesToStart(t *testing.T) {
	srv, err := brokertest.New(venue.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	_, err = fleetClient(t, srv, "redis://:s3cret@127.0.0.1:1/0")
	if err == nil || !strings.Contains(err.Error(), "cannot be reached") {
		t.Fatalf("err = %v, want a clear refusal", err)
	}
	// An outage, to retry later (the CLI's exit 4), not a usage error.
	if !errors.Is(err, transport.ErrUnavailable) || errors.Is(err, transport.ErrInvalidRequest) {
		t.Fatalf("err = %v, want it to match transport.ErrUnavailable only", err)
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("error %q shows the Redis password", err)
	}
	if n := len(srv.Ledger().Requests()); n != 0 {
		t.Fatalf("%d requests sent with no budget", n)
	}
	var ae *broker.ArgumentError
	if _, err := fleetClient(t, srv, "http://not-redis"); !errors.As(err, &ae) {
		t.Fatalf("a bad URL: err = %v", err)
	}
}

// The first process resolves the account that keys the shared budget and
// leaves it in Redis; the next one does not read it again.
func TestFleetSharesTheAccountAndBudget(t *testing.T) {
	url := redistest.URL(t)
	// A key of its own, so that no earlier run left its account in Redis.
	_, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := brokertest.New(venue.Config{APIKey: "rh-api-fleet-" + hex.EncodeToString(priv[:8]), PrivateKey: priv})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx := context.Background()
	first, err := fleetClient(t, srv, url)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	second, err := fleetClient(t, srv, url)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	if n := accountReads(srv); n != 1 {
		t.Fatalf("two processes read the accounts list %d times to key their budget, want once", n)
	}
	for _, c := range []*broker.Client{first, second} {
		if _, err := c.BestBidAsk(ctx, "BTC-USD"); err != nil {
			t.Fatal(err)
		}
	}
	if c := srv.Ledger().Counts(); c.Throttled != 0 || c.Unauthorized != 0 {
		t.Fatalf("ledger %+v", c)
	}
}

const helperEnv = "TRADEWIRE_BROKER_HELPER"

// TestHelperProcess is not a test: it is one bot process of a fleet,
// started by TestFleetDiscoveryStaysInBudget (on Redis) or
// TestPostgresFleet.
func TestHelperProcess(t *testing.T) {
	if os.Getenv(helperEnv) == "pgfleet" {
		redistest.ServeHelper(t, helperEnv, "pgfleet", func() (any, error) { return pgFleetBot() })
	}
	redistest.ServeHelper(t, helperEnv, "fleet", func() (any, error) { return fleetBot() })
}

func fleetBot() (redistest.Tally, error) {
	var res redistest.Tally
	key, err := signing.ParsePrivateKey(os.Getenv("VENUE_KEY"))
	if err != nil {
		return res, err
	}
	perMinute, _ := strconv.ParseFloat(os.Getenv("FLEET_PER_MINUTE"), 64)
	burst, _ := strconv.Atoi(os.Getenv("FLEET_BURST"))
	requests, _ := strconv.Atoi(os.Getenv("FLEET_REQUESTS"))
	if err := redistest.AwaitRelease(); err != nil {
		return res, err
	}
	// Released before New: every process resolves the account at once.
	c, err := broker.New(broker.Config{
		APIKey:     os.Getenv("VENUE_API_KEY"),
		PrivateKey: key,
		BaseURL:    os.Getenv("VENUE_URL"),
		RedisURL:   os.Getenv("REDIS_URL"),
		Transport:  transport.Config{RatePerMinute: perMinute, Burst: burst, Retry: &transport.RetryPolicy{}},
	}) // one attempt: every 429 shows
	if err != nil {
		return res, err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := 0; i < requests; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := c.BestBidAsk(ctx, "BTC-USD")
			mu.Lock()
			defer mu.Unlock()
			res.Add(err, errors.Is(err, transport.ErrRateLimited))
		}()
	}
	wg.Wait()
	return res, nil
}

// TestFleetDiscoveryStaysInBudget starts processes together on a fresh
// Redis (for their API key), none told its account number, and has them
// spend the venue's whole burst at once. The accounts read that tells
// them the account is made once for all and charged to the shared
// budget, so the venue answers no 429.
func TestFleetDiscoveryStaysInBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("runs OS processes")
	}
	url := redistest.URL(t)
	const (
		procs     = 4
		perMinute = 60 // 1 a second: a request past the burst is a 429 for a second
		burst     = 12
		requests  = burst / procs // the whole burst, plus the accounts read
	)
	_, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := brokertest.NewServer(venue.Config{APIKey: "rh-api-disc-" + hex.EncodeToString(priv[:8]), PrivateKey: priv, RateLimits: venue.RateLimits{Account: venue.RateLimit{PerMinute: perMinute, Burst: burst}}, Seed: 2})
	defer srv.Close()
	ps := redistest.StartProcesses(t, procs, helperEnv+"=fleet",
		"VENUE_URL="+srv.URL, "VENUE_API_KEY="+srv.APIKey, "VENUE_KEY="+srv.PrivateKeyBase64, "REDIS_URL="+url,
		"FLEET_PER_MINUTE="+strconv.Itoa(perMinute), "FLEET_BURST="+strconv.Itoa(burst), "FLEET_REQUESTS="+strconv.Itoa(requests))
	results := make([]redistest.Tally, procs)
	ps.Release(t, func(i int) any { return &results[i] })
	ok, throttled, failed := 0, 0, 0
	for _, r := range results {
		ok, throttled, failed = ok+r.OK, throttled+r.Throttled, failed+r.Failed
		for _, e := range r.Errors {
			t.Errorf("a process: %s", e)
		}
	}
	reqs := srv.Ledger().Requests()
	venue429 := 0
	for _, r := range reqs {
		if r.Status == 429 {
			venue429++
		}
	}
	t.Logf("%d processes, none told the account, %d requests each at the venue's burst of %d (%d/min): %d requests at the venue (%d accounts reads), %d ok, %d throttled, %d failed, venue 429s %d",
		procs, requests, burst, perMinute, len(reqs), accountReads(srv), ok, throttled, failed, venue429)
	if venue429 != 0 || throttled != 0 {
		t.Errorf("the venue answered 429 %d times", venue429)
	}
	if n := accountReads(srv); n != 1 {
		t.Errorf("%d accounts reads, want 1 for the fleet", n)
	}
	if ok != procs*requests {
		t.Errorf("%d requests ok, want %d", ok, procs*requests)
	}
}

// With Config.RedisURL the intent store is the fleet's: a second process
// placing the same key finds the first one's order and sends no create,
// and no intent file is opened.
func TestFleetSharesTheIntentStore(t *testing.T) {
	url := redistest.URL(t)
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	srv := brokertest.NewServer(venue.Config{})
	defer srv.Close()
	ns := "fleet-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	req := broker.OrderRequest{Symbol: "BTC-USD", Side: broker.SideBuy, Type: broker.TypeLimit,
		AssetQuantity: decimal.RequireFromString("0.001"), LimitPrice: decimal.RequireFromString("30000")}
	var ids []string
	for i := 0; i < 2; i++ {
		c, err := fleetClient(t, srv, url, broker.Config{Orders: orders.Config{Namespace: ns}})
		if err != nil {
			t.Fatal(err)
		}
		o, err := c.Place(context.Background(), "k", req)
		if err != nil {
			t.Fatalf("process %d: %v", i+1, err)
		}
		ids = append(ids, o.ID)
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if ids[0] != ids[1] {
		t.Errorf("orders %v: the second process placed again", ids)
	}
	if n := len(srv.Ledger().OrdersByClientID(idempotency.ClientOrderID(srv.AccountNumber, ns, "k"))); n != 1 {
		t.Errorf("%d orders for the key", n)
	}
	if _, err := os.Stat(filepath.Join(state, "tradewire")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a fleet client opened an intent file: %v", err)
	}
}
