package broker_test

import (
	"context"
	"errors"
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
)

var optionsStart = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func credentials(t *testing.T, srv *brokertest.Server) broker.Option {
	t.Helper()
	key, err := signing.ParsePrivateKey(srv.PrivateKeyBase64)
	if err != nil {
		t.Fatal(err)
	}
	return broker.WithCredentials(srv.APIKey, key)
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

// refusingRT fails every request: a transport nothing may go through.
type refusingRT struct{}

func (refusingRT) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, errors.New("sent through the wrong round tripper")
}

// TestOptionsComposeInOneOrder: this package's own options set the
// transport first and WithTransportConfig's after them, whatever the order
// they are given in, so a setting passed through wins; and the Client runs
// on its transport's clock (the fee window ends at that clock's now), so
// the two never disagree.
func TestOptionsComposeInOneOrder(t *testing.T) {
	t.Parallel()
	for _, passFirst := range []bool{false, true} {
		name := map[bool]string{false: "own options first", true: "pass-through first"}[passFirst]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			own, passed := brokertest.NewClock(optionsStart), brokertest.NewClock(optionsStart)
			srv := brokertest.NewServer(brokertest.WithClock(passed))
			t.Cleanup(srv.Close)
			rt := &countingRT{rt: srv.Transport()}
			ownOpts := []broker.Option{broker.WithClock(own), broker.WithRoundTripper(refusingRT{})}
			pass := broker.WithTransportConfig(transport.Config{Clock: passed, RoundTripper: rt})
			opts := append([]broker.Option{credentials(t, srv), broker.WithBaseURL(srv.URL)}, ownOpts...)
			opts = append(opts, pass)
			if passFirst {
				opts = append([]broker.Option{credentials(t, srv), broker.WithBaseURL(srv.URL), pass}, ownOpts...)
			}
			c, err := broker.New(opts...)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			if c.Transport().Config().Clock != passed {
				t.Error("the transport runs on WithClock's clock; want the one passed through")
			}
			own.Advance(time.Hour) // a Client on own would end the window an hour later
			r, err := c.FeeSummary(context.Background(), 24*time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			if !r.End.Equal(passed.Now()) {
				t.Errorf("fee window ends %v; want the transport's clock's now %v (WithClock's is %v)", r.End, passed.Now(), own.Now())
			}
			if rt.n.Load() == 0 {
				t.Error("nothing went through the round tripper passed through")
			}
		})
	}
}

// TestPlacerOptionsReachTheClient: the namespace given with
// WithPlacerOptions is the one ClientOrderID derives ids with before
// anything is placed, and an option the placement engine refuses is
// refused by New, before anything is sent.
func TestPlacerOptionsReachTheClient(t *testing.T) {
	t.Parallel()
	srv := brokertest.NewServer()
	t.Cleanup(srv.Close)
	const account = "AB1234567890"
	c, err := broker.New(credentials(t, srv), broker.WithBaseURL(srv.URL), broker.WithRoundTripper(srv.Transport()),
		broker.WithAccountNumber(account), broker.WithPlacerOptions(orders.WithNamespace("momentum")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if got, want := c.ClientOrderID("k"), idempotency.ClientOrderID(account, "momentum", "k"); got != want || got == idempotency.ClientOrderID(account, "", "k") {
		t.Errorf("ClientOrderID(k) = %s, want %s (namespace momentum)", got, want)
	}
	_, err = broker.New(credentials(t, srv), broker.WithBaseURL(srv.URL), broker.WithPlacerOptions(orders.WithMaxSends(0)))
	if !errors.Is(err, broker.ErrInvalidRequest) || !strings.Contains(err.Error(), "WithPlacerOptions") {
		t.Errorf("New with orders.WithMaxSends(0) = %v; want an *ArgumentError naming WithPlacerOptions", err)
	}
}

// TestRateLimitZeroIsOffOnBothSides: off for the client's bucket
// (a negative transport.Config.RatePerMinute, passed through) and for
// the simulated venue's (brokertest.WithRateLimit(0, 0)) alike: more reads than
// either's default burst go out at once, on a clock that never moves.
func TestRateLimitZeroIsOffOnBothSides(t *testing.T) {
	t.Parallel()
	clk := brokertest.NewClock(optionsStart)
	srv := brokertest.NewServer(brokertest.WithClock(clk), brokertest.WithRateLimit(0, 0))
	t.Cleanup(srv.Close)
	c, err := broker.New(credentials(t, srv), broker.WithBaseURL(srv.URL), broker.WithRoundTripper(srv.Transport()),
		broker.WithClock(clk), broker.WithTransportConfig(transport.Config{RatePerMinute: -1, Retry: &transport.RetryPolicy{}}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	// A throttled read would wait for a token past this deadline and be
	// refused at once; a 429 would be final (no retries).
	ctx, cancel := brokertest.WithTimeout(context.Background(), clk, time.Millisecond)
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
