// Command telemetry shows what an operator sees of a bot: it gives the
// broker an OpenTelemetry MeterProvider, exported as Prometheus text at
// /metrics, and a TracerProvider, places one order, and prints the Place's
// spans and the metrics scraped. It runs on the simulated venue in memory
// (package brokertest): no credentials, no network. The SDK and the
// exporter are this program's choice; the broker package itself only
// depends on the OpenTelemetry API, and records nothing without a
// provider. docs/metrics.md lists every metric.
package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/otlptranslator"
	"github.com/shopspring/decimal"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/tradewire/tradewire/broker"
	"github.com/tradewire/tradewire/broker/brokertest"
	"github.com/tradewire/tradewire/transport"
	"github.com/tradewire/tradewire/venue"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "telemetry:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out io.Writer) error {
	srv, err := brokertest.New(venue.Config{})
	if err != nil {
		return err
	}
	defer srv.Close()

	// Metrics: the SDK with a Prometheus exporter, served at /metrics.
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg),
		otelprom.WithTranslationStrategy(otlptranslator.UnderscoreEscapingWithSuffixes)) // units in names, _total
	if err != nil {
		return err
	}
	meters := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
	defer meters.Shutdown(context.Background())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	metrics := &http.Server{Handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), ReadHeaderTimeout: 10 * time.Second}
	go metrics.Serve(ln)
	defer metrics.Close()

	// Traces: spans kept in memory here; an OTLP exporter in production.
	spans := tracetest.NewSpanRecorder()
	tracer := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	defer tracer.Shutdown(context.Background())

	dir, err := os.MkdirTemp("", "tradewire-telemetry")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	env := map[string]string{"TRADEWIRE_BASE_URL": srv.URL, "TRADEWIRE_API_KEY": srv.APIKey,
		"TRADEWIRE_PRIVATE_KEY": srv.PrivateKeyBase64}
	c, err := broker.New(broker.Config{
		Getenv:          func(k string) string { return env[k] }, // os.Getenv for real
		IntentStoreFile: filepath.Join(dir, "intents.db"),
		Transport: transport.Config{
			RoundTripper:   srv.Client().Transport, // the in-memory venue; leave out for the real one
			MeterProvider:  meters,
			TracerProvider: tracer,
		},
	})
	if err != nil {
		return err
	}
	defer c.Close()

	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	// A read outside any trace is measured, but makes no span.
	if _, err := c.BestBidAsk(ctx, "BTC-USD"); err != nil {
		return err
	}
	o, err := c.Place(ctx, "telemetry-1", broker.OrderRequest{Symbol: "BTC-USD", Side: broker.SideBuy,
		Type: broker.TypeMarket, AssetQuantity: decimal.RequireFromString("0.0001")})
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "placed", o.ID)

	// Each Place is a trace: its span, and a child span per request.
	for _, s := range spans.Ended() {
		if s.Parent().IsValid() {
			fmt.Fprintf(out, "span %s, child of %s\n", s.Name(), s.Parent().SpanID())
		} else {
			fmt.Fprintf(out, "span %s %s\n", s.Name(), s.SpanContext().SpanID())
		}
	}

	// What Prometheus scrapes.
	resp, err := http.Get("http://" + ln.Addr().String() + "/metrics")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "tradewire_orders_creates_total") ||
			strings.HasPrefix(line, "http_client_request_duration_seconds_count") {
			fmt.Fprintln(out, line)
		}
	}
	return sc.Err()
}
