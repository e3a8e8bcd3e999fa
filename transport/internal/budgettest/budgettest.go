// Package budgettest holds the checks every shared rate budget
// (transport/redisbudget, transport/pgbudget) passes, written once.
package budgettest

import (
	"context"
	"errors"
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/tradewire/tradewire/internal/adaptive"
	"github.com/tradewire/tradewire/signing"
	"github.com/tradewire/tradewire/transport"
)

// Budget is what the checks use of a shared budget.
type Budget interface {
	transport.Limiter
	Tokens(ctx context.Context) (n float64, ok bool, err error)
}

// Tokens checks b, a fresh budget of an account of its own at perMinute
// requests a minute in bursts of burst: it holds the whole burst (less
// adaptive.Headroom's), one token less after each of three Waits (within
// what the rate refills while the check runs), and a transport.Client
// on it reports the same as the tradewire.budget.tokens gauge.
func Tokens(t *testing.T, b Budget, perMinute float64, burst int) {
	t.Helper()
	ctx := context.Background()
	_, n := adaptive.Headroom(perMinute, burst)
	tokens := func() float64 {
		t.Helper()
		got, ok, err := b.Tokens(ctx)
		if err != nil || !ok {
			t.Fatalf("Tokens = %v, %v, %v; want a count", got, ok, err)
		}
		return got
	}
	// The rate refills perMinute/60 a second: a check that takes under
	// two seconds sees at most twice that much more.
	slack := 2 * perMinute / 60
	if got := tokens(); math.Abs(got-float64(n)) > 1e-6 {
		t.Fatalf("a fresh budget holds %v tokens, want the burst, %d", got, n)
	}
	for i := 1; i <= 3; i++ {
		if err := b.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		if got, want := tokens(), float64(n-i); got < want-1e-6 || got > want+slack {
			t.Fatalf("after %d Waits: %v tokens, want %v (up to %v more refilled)", i, got, want, slack)
		}
	}

	reader := sdkmetric.NewManualReader()
	pk, err := signing.ParsePrivateKey("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=")
	if err != nil {
		t.Fatal(err)
	}
	signer, err := signing.New("rh-api-budgettest", pk)
	if err != nil {
		t.Fatal(err)
	}
	c, err := transport.New("https://venue.invalid", signer, transport.Config{Limiter: b,
		MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
	if err != nil {
		t.Fatal(err)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	runtime.KeepAlive(c) // the gauge holds the client weakly
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if g, ok := m.Data.(metricdata.Gauge[float64]); ok && m.Name == "tradewire.budget.tokens" && len(g.DataPoints) == 1 {
				if got, want := g.DataPoints[0].Value, float64(n-3); got < want-1e-6 || got > want+slack {
					t.Fatalf("the gauge reports %v tokens, want %v", got, want)
				}
				return
			}
		}
	}
	t.Fatalf("no tradewire.budget.tokens point among %+v", rm.ScopeMetrics)
}

// BurstThenRate checks b, a fresh budget of an account of its own at 60
// requests a minute in bursts of 4 (3 here, less the token the venue
// regains in 250 ms: adaptive.Headroom), waiting on clock: three Waits
// are granted at once, a fourth with a deadline 500 ms out is refused at
// once (its token is about a second away), and without one it is granted
// about a second after the first. The rate is slow so that the margins
// are wide on a loaded machine: the budget runs on its server's clock, so
// clock is the real one.
func BurstThenRate(t *testing.T, b Budget, clock clockwork.Clock) {
	t.Helper()
	ctx := context.Background()
	start := clock.Now()
	for i := 0; i < 3; i++ {
		if err := b.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if d := clock.Since(start); d > 500*time.Millisecond {
		t.Fatalf("the burst of 3 took %v: it waited for the rate", d)
	}
	dctx, cancel := clockwork.WithTimeout(ctx, clock, 500*time.Millisecond)
	defer cancel()
	before := clock.Now()
	if err := b.Wait(dctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want an immediate deadline error", err)
	}
	if d := clock.Since(before); d > 400*time.Millisecond {
		t.Fatalf("a refused wait took %v", d)
	}
	if err := b.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if d := clock.Since(start); d < 900*time.Millisecond {
		t.Fatalf("the fourth token came after %v, want about 1s", d)
	}
}
