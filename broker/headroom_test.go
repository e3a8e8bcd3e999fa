package broker_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/tradewire/tradewire/broker"
	"github.com/tradewire/tradewire/broker/brokertest"
	"github.com/tradewire/tradewire/internal/adaptive"
	"github.com/tradewire/tradewire/signing"
	"github.com/tradewire/tradewire/transport"
	"github.com/tradewire/tradewire/venue"
)

// burstThenLate is the worst case of a delay between a token's grant and
// the request's arrival: the client spends its whole burst at once and
// every request of it reaches the venue adaptive.MaxGrantDelay late,
// after the venue's bucket, full, could regain nothing; the requests that
// follow arrive at once. It returns how many of reads the venue answered
// 429, on a venue allowing 100 a minute in bursts of 300.
func burstThenLate(t *testing.T, reads int, tcfg transport.Config) int {
	t.Helper()
	var throttled int
	synctest.Test(t, func(t *testing.T) {
		srv, err := brokertest.New(venue.Config{Faults: venue.FaultPlan{Faults: []venue.Fault{{
			Kind: "latency", Path: "/api/v2/crypto/marketdata/best_bid_ask/", Times: adaptive.Burst,
			Delay: adaptive.MaxGrantDelay}}}})
		if err != nil {
			t.Fatal(err)
		}
		key, err := signing.ParsePrivateKey(srv.PrivateKeyBase64)
		if err != nil {
			t.Fatal(err)
		}
		tcfg.RoundTripper = srv.Client().Transport
		c, err := broker.New(broker.Config{APIKey: srv.APIKey, PrivateKey: key, BaseURL: srv.URL, Transport: tcfg})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var wg sync.WaitGroup
		for range reads {
			wg.Go(func() {
				if _, err := c.BestBidAsk(context.Background(), "BTC-USD"); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		throttled = srv.Ledger().Counts().Throttled
	})
	return throttled
}

// TestBurstSurvivesGrantDelay: a client spending its whole burst at once
// draws no 429 though every request of the burst arrives
// adaptive.MaxGrantDelay late: its bucket holds back the tokens the
// venue regains in that time (adaptive.Headroom). The negative control,
// a bucket as large as the venue's, draws 429s on the same run.
func TestBurstSurvivesGrantDelay(t *testing.T) {
	t.Parallel()
	const reads = adaptive.Burst + 20
	if n := burstThenLate(t, reads, transport.Config{}); n != 0 {
		t.Errorf("%d of %d reads answered 429 with the default bucket, want 0", n, reads)
	}
	// adaptive.Headroom(100, 301) keeps 300: the venue's own burst.
	full := transport.NewTokenBucket(nil, adaptive.PerMinute, adaptive.Burst+1)
	if n := burstThenLate(t, reads, transport.Config{Limiter: full}); n == 0 {
		t.Errorf("a bucket as large as the venue's drew no 429: the run does not delay the burst")
	}
}
