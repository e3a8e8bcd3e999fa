package broker_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/tradewire/tradewire/broker"
	"github.com/tradewire/tradewire/broker/brokertest"
	"github.com/tradewire/tradewire/signing"
	"github.com/tradewire/tradewire/transport"
	"github.com/tradewire/tradewire/venue"
)

// BenchmarkPlaceTelemetry times a Place of a new key with telemetry on
// (an SDK MeterProvider whose reader is never collected, and an SDK
// TracerProvider with no exporter) against one with it off, in the same
// loop, alternating which goes first, on the in-memory venue, each with
// a bolt store on /dev/shm when there is one (so that no disk's fsync
// hides the difference). Reported as on/off, the median of rounds of 20
// Places each way.
//
//	go test -run '^$' -bench PlaceTelemetry -benchtime 2000x -count 3 ./broker/
func BenchmarkPlaceTelemetry(b *testing.B) {
	srv, err := brokertest.New(venue.Config{RateLimits: venue.RateLimits{Account: venue.RateLimit{PerMinute: 1e9, Burst: 1e6}}})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	key, err := signing.ParsePrivateKey(srv.PrivateKeyBase64)
	if err != nil {
		b.Fatal(err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	tp := sdktrace.NewTracerProvider()
	ctx := context.Background()
	dir := b.TempDir()
	if shm, err := os.MkdirTemp("/dev/shm", "tradewire-bench"); err == nil {
		dir = shm
		defer os.RemoveAll(shm)
	}
	client := func(name string, tcfg transport.Config) *broker.Client {
		tcfg.RoundTripper, tcfg.RatePerMinute = srv.Client().Transport, -1
		c, err := broker.New(broker.Config{APIKey: srv.APIKey, PrivateKey: key, BaseURL: srv.URL, AccountNumber: srv.AccountNumber,
			IntentStoreFile: filepath.Join(dir, name+".db"), Transport: tcfg})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.Place(ctx, "warm", pgBuy); err != nil {
			b.Fatal(err)
		}
		return c
	}
	off := client("off", transport.Config{})
	on := client("on", transport.Config{MeterProvider: mp, TracerProvider: tp})
	defer off.Close()
	defer on.Close()
	place := func(c *broker.Client, k string) time.Duration {
		start := time.Now()
		if _, err := c.Place(ctx, k, pgBuy); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	// Rounds of 20 Places each way, interleaved; the median of the
	// rounds' ratios, so that a burst of noise moves one round only.
	const round = 20
	var ratios []float64
	var tOn, tOff, rOn, rOff time.Duration
	for i := 0; b.Loop(); i++ {
		kOn, kOff := fmt.Sprint("on-", i), fmt.Sprint("off-", i)
		if i%2 == 0 {
			rOff += place(off, kOff)
			rOn += place(on, kOn)
		} else {
			rOn += place(on, kOn)
			rOff += place(off, kOff)
		}
		if (i+1)%round == 0 {
			ratios = append(ratios, float64(rOn)/float64(rOff))
			tOn, tOff, rOn, rOff = tOn+rOn, tOff+rOff, 0, 0
		}
	}
	tOn, tOff = tOn+rOn, tOff+rOff
	if len(ratios) > 0 {
		slices.Sort(ratios)
		b.ReportMetric(ratios[len(ratios)/2], "on/off")
	}
	b.ReportMetric(float64(tOff.Microseconds())/float64(b.N), "off-µs/op")
}
