package broker_test

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tradewire/tradewire/broker"
	"github.com/tradewire/tradewire/broker/brokertest"
	"github.com/tradewire/tradewire/internal/redistest"
	"github.com/tradewire/tradewire/transport"
	"github.com/tradewire/tradewire/venue"
)

// TestWatchSharesTheFleetBudget: a watch polling far faster than the
// budget allows, in one process of a fleet, spends the fleet's budget
// (kept in Redis) with the other process's reads, not a budget of its
// own: together they send no more than the fleet's rate. Redis's clock is
// real, so the test runs for two seconds of it.
func TestWatchSharesTheFleetBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("runs on Redis's real clock")
	}
	url := redistest.URL(t)
	_, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := brokertest.New(venue.Config{APIKey: "rh-api-watch-" + hex.EncodeToString(priv[:8]), PrivateKey: priv})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	const perMinute, burst = 600, 1 // 10 a second, fleet-wide
	cfg := broker.Config{Transport: transport.Config{RatePerMinute: perMinute, Burst: burst}}
	watcher, err := fleetClient(t, srv, url, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer watcher.Close()
	reader, err := fleetClient(t, srv, url, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()

	const run = 2 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), run)
	defer cancel()
	from := len(srv.Ledger().Requests())
	start := time.Now()
	done := make(chan error, 1)
	go func() {
		for _, err := range watcher.Watch(ctx, broker.WatchConfig{PollInterval: time.Millisecond, Name: "fleet-" + hex.EncodeToString(priv[:4])}) {
			if errors.Is(err, broker.ErrNotSent) { // its token is past the deadline
				break
			}
			if err != nil && ctx.Err() == nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for ctx.Err() == nil {
		_, err := reader.BestBidAsk(ctx, "BTC-USD")
		if errors.Is(err, broker.ErrNotSent) { // its token is past the deadline
			break
		}
		if err != nil && ctx.Err() == nil {
			t.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	var watch, reads int
	for _, r := range srv.Ledger().Requests()[from:] {
		switch {
		case strings.HasPrefix(r.Target, "/api/v2/crypto/trading/orders/"):
			watch++
		case strings.HasPrefix(r.Target, "/api/v2/crypto/marketdata/best_bid_ask/"):
			reads++
		}
	}
	limit := int(elapsed.Seconds()*perMinute/60) + burst + 1
	if watch+reads > limit {
		t.Fatalf("%d watch polls and %d reads in %v; the fleet's budget allows %d", watch, reads, elapsed, limit)
	}
	if watch == 0 || reads == 0 {
		t.Fatalf("%d watch polls and %d reads: want both to have run", watch, reads)
	}
	if c := srv.Ledger().Counts(); c.Throttled != 0 {
		t.Fatalf("%d requests throttled by the venue", c.Throttled)
	}
	t.Logf("%d watch polls and %d reads in %v under a fleet budget of %d a minute", watch, reads, elapsed.Round(time.Millisecond), perMinute)
}
