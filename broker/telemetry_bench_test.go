package broker_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/tradewire/tradewire/broker"
	"github.com/tradewire/tradewire/broker/brokertest"
	"github.com/tradewire/tradewire/signing"
	"github.com/tradewire/tradewire/transport"
	"github.com/tradewire/tradewire/venue"
)

// BenchmarkPlaceTelemetry times a Place of a new key by three Clients in
// the same loop, on the in-memory venue: one with telemetry off; one with
// it on (an SDK MeterProvider whose reader is never collected, and an SDK
// TracerProvider with no exporter); and "sdk", the floor any
// instrumentation of a Place on this SDK pays: the Client with it off,
// plus the bare SDK calls it cannot do without (the Place's span, its
// send's child span, one record of the send's duration and one count of
// the outcome, with the same attributes). Each round runs the three in
// turn, in an order rotating through all six, 20 Places each; reported
// are the medians of the rounds' on/off (goal: at most 1.02), sdk/off
// (what the SDK itself costs) and on/sdk (what tradewire adds to it).
// Each Client's bolt store is on /dev/shm when there is one, so that no
// disk's fsync hides the difference.
//
//	go test -run '^$' -bench PlaceTelemetry -benchtime 4000x -count 3 ./broker/
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

	// The floor's instruments: the SDK's, without tradewire's code.
	meter, tracer := mp.Meter("bench"), tp.Tracer("bench")
	hist, err := meter.Float64Histogram("bench.duration", metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10))
	if err != nil {
		b.Fatal(err)
	}
	creates, err := meter.Int64Counter("bench.creates")
	if err != nil {
		b.Fatal(err)
	}
	host, _, _ := strings.Cut(strings.TrimPrefix(srv.URL, "https://"), ":")
	kvs := []attribute.KeyValue{attribute.String("http.request.method", "POST"), attribute.String("url.template", "/api/v1/crypto/trading/orders/"),
		attribute.String("server.address", host), attribute.Int("http.response.status_code", 201)}
	record := []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(kvs...))}
	placed := []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(attribute.String("tradewire.outcome", "placed")))}
	internalKind, clientKind := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindInternal)}, []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient)}

	dir := b.TempDir()
	if shm, err := os.MkdirTemp("/dev/shm", "tradewire-bench"); err == nil {
		dir = shm
		b.Cleanup(func() { os.RemoveAll(shm) })
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
		b.Cleanup(func() { c.Close() })
		return c
	}
	off, on, bare := client("off", transport.Config{}), client("on", transport.Config{MeterProvider: mp, TracerProvider: tp}), client("sdk", transport.Config{})
	place := func(c *broker.Client, k string) {
		if _, err := c.Place(ctx, k, pgBuy); err != nil {
			b.Fatal(err)
		}
	}
	sdkPlace := func(k string) {
		ctx, span := tracer.Start(ctx, "tradewire.Place", internalKind...)
		sctx, send := tracer.Start(ctx, "HTTP POST", clientKind...)
		start := time.Now()
		place(bare, k)
		hist.Record(sctx, time.Since(start).Seconds(), record...)
		send.SetAttributes(kvs...)
		send.End()
		creates.Add(ctx, 1, placed...)
		span.SetAttributes(attribute.String("tradewire.client_order_id", bare.ClientOrderID(k)))
		span.End()
	}
	const round = 20
	var sum [3]time.Duration // off, on, sdk, this round
	var onOff, sdkOff, onSDK []float64
	orders := [6][3]int{{0, 1, 2}, {1, 2, 0}, {2, 0, 1}, {0, 2, 1}, {2, 1, 0}, {1, 0, 2}}
	for i := 0; b.Loop(); i++ {
		for _, which := range orders[i%len(orders)] {
			k := fmt.Sprint(which, "-", i)
			start := time.Now()
			switch which {
			case 0:
				place(off, k)
			case 1:
				place(on, k)
			case 2:
				sdkPlace(k)
			}
			sum[which] += time.Since(start)
		}
		if (i+1)%round == 0 {
			onOff = append(onOff, float64(sum[1])/float64(sum[0]))
			sdkOff = append(sdkOff, float64(sum[2])/float64(sum[0]))
			onSDK = append(onSDK, float64(sum[1])/float64(sum[2]))
			sum = [3]time.Duration{}
		}
	}
	if len(onOff) == 0 {
		return
	}
	median := func(xs []float64) float64 { slices.Sort(xs); return xs[len(xs)/2] }
	b.ReportMetric(median(onOff), "on/off")
	b.ReportMetric(median(sdkOff), "sdk/off")
	b.ReportMetric(median(onSDK), "on/sdk")
}
