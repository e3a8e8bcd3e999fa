package broker_test

import (
	"context"
	"errors"
	"math"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tradewire/tradewire/broker"
	"github.com/tradewire/tradewire/broker/brokertest"
	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/internal/adaptive"
	"github.com/tradewire/tradewire/orders"
	"github.com/tradewire/tradewire/signing"
	"github.com/tradewire/tradewire/transport"
	"github.com/tradewire/tradewire/venue"
)

var optionsStart = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// credentials returns a Config with the venue's credentials and base URL.
func credentials(t *testing.T, srv *brokertest.Server) broker.Config {
	t.Helper()
	key, err := signing.ParsePrivateKey(srv.PrivateKeyBase64)
	if err != nil {
		t.Fatal(err)
	}
	return broker.Config{APIKey: srv.APIKey, PrivateKey: key, BaseURL: srv.URL}
}

// countingRT counts the requests it carries to rt.
type countingRT struct {
	rt http.RoundTripper
	n  atomic.Int64
}

func (c *countingRT) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.rt.RoundTrip(r)
}

// TestClientRunsOnItsTransportsClock: the clock and round tripper of
// Config.Transport are the transport's, and the Client runs on that clock
// (the fee window ends at its now), so the two never disagree.
func TestClientRunsOnItsTransportsClock(t *testing.T) {
	t.Parallel()
	clk := venue.NewClock(optionsStart)
	srv := brokertest.NewServer(venue.Config{Clock: clk})
	t.Cleanup(srv.Close)
	rt := &countingRT{rt: srv.Client().Transport}
	cfg := credentials(t, srv)
	cfg.Transport = transport.Config{Clock: clk, RoundTripper: rt}
	c, err := broker.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if c.Transport().Config().Clock != clk {
		t.Error("the transport does not run on the clock of Config.Transport")
	}
	clk.Advance(time.Hour)
	r, err := c.FeeSummary(context.Background(), 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if !r.End.Equal(clk.Now()) {
		t.Errorf("fee window ends %v; want the transport's clock's now %v", r.End, clk.Now())
	}
	if rt.n.Load() == 0 {
		t.Error("nothing went through the round tripper of Config.Transport")
	}
}

// TestPlacerOptionsReachTheClient: the namespace of Config.Orders is the
// one ClientOrderID derives ids with before
// anything is placed, and an option the placement engine refuses is
// refused by New, before anything is sent.
func TestPlacerOptionsReachTheClient(t *testing.T) {
	t.Parallel()
	srv := brokertest.NewServer(venue.Config{})
	t.Cleanup(srv.Close)
	const account = "AB1234567890"
	cfg := credentials(t, srv)
	cfg.Transport = transport.Config{RoundTripper: srv.Client().Transport}
	cfg.AccountNumber, cfg.Orders = account, orders.Config{Namespace: "momentum"}
	c, err := broker.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if got, want := c.ClientOrderID("k"), idempotency.ClientOrderID(account, "momentum", "k"); got != want || got == idempotency.ClientOrderID(account, "", "k") {
		t.Errorf("ClientOrderID(k) = %s, want %s (namespace momentum)", got, want)
	}
	cfg = credentials(t, srv)
	cfg.Orders.MaxSends = -1
	_, err = broker.New(cfg)
	if !errors.Is(err, broker.ErrInvalidRequest) || !strings.Contains(err.Error(), "Orders") {
		t.Errorf("New with Orders.MaxSends -1 = %v; want an *ArgumentError naming Orders", err)
	}
}

// TestRateLimitZeroIsOffOnBothSides: off for the client's bucket
// (a negative transport.Config.RatePerMinute) and for the simulated
// venue's (an infinite venue.RateLimit) alike: more reads than
// either's default burst go out at once, on a clock that never moves.
func TestRateLimitZeroIsOffOnBothSides(t *testing.T) {
	t.Parallel()
	clk := venue.NewClock(optionsStart)
	srv := brokertest.NewServer(venue.Config{Clock: clk, RateLimits: venue.RateLimits{Account: venue.RateLimit{PerMinute: math.Inf(1)}}})
	t.Cleanup(srv.Close)
	cfg := credentials(t, srv)
	cfg.Transport = transport.Config{RoundTripper: srv.Client().Transport, Clock: clk, RatePerMinute: -1, Retry: &transport.RetryPolicy{}}
	c, err := broker.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	// A throttled read would wait for a token past this deadline and be
	// refused at once; a 429 would be final (no retries).
	ctx, cancel := venue.WithTimeout(context.Background(), clk, time.Millisecond)
	defer cancel()
	for i := range adaptive.Burst + 50 {
		if _, err := c.BestBidAsk(ctx, "BTC-USD"); err != nil {
			t.Fatalf("read %d: %v", i+1, err)
		}
	}
	if !clk.Now().Equal(optionsStart) {
		t.Errorf("the clock moved to %v: something waited", clk.Now())
	}
}
