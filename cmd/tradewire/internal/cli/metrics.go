package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/otlptranslator"
	"github.com/spf13/cobra"
	"go.opentelemetry.io/otel/attribute"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
)

// flagMetricsAddr is the flag of the commands that run until stopped
// (watch, sim serve): where to serve Prometheus text at /metrics.
const flagMetricsAddr = "metrics-addr"

// metricsShutdownTimeout bounds how long a stopping command waits for
// scrapes in flight.
const metricsShutdownTimeout = 5 * time.Second

// addMetricsFlag adds --metrics-addr to cmd, parsed into addr.
func addMetricsFlag(cmd *cobra.Command, addr *string) {
	cmd.Flags().StringVar(addr, flagMetricsAddr, "",
		"serve the metrics (docs/metrics.md) as Prometheus text at http://HOST:PORT/metrics until the command stops; port 0 picks a free one")
}

// checkMetricsAddr refuses a --metrics-addr that is not HOST:PORT. An
// empty host listens on every interface, as Prometheus exporters do.
func checkMetricsAddr(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err == nil {
		_, err = strconv.ParseUint(port, 10, 16)
	}
	if err != nil {
		return usagef("--%s %q: want HOST:PORT, such as 127.0.0.1:9464 (port 0 picks a free one)", flagMetricsAddr, addr)
	}
	return nil
}

// metricsServer is an OpenTelemetry MeterProvider whose metrics are
// served as Prometheus text at /metrics, from a registry of its own.
type metricsServer struct {
	provider *sdkmetric.MeterProvider
	srv      *http.Server
	served   chan error
}

// startMetrics checks addr, listens on it and serves /metrics. Every
// error is a *usageError: nothing has been sent yet. The caller stops it.
func (a *app) startMetrics(ctx context.Context, command, addr string) (*metricsServer, error) {
	if err := checkMetricsAddr(addr); err != nil {
		return nil, err
	}
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg),
		// Prometheus names: units in names, _total on counters.
		otelprom.WithTranslationStrategy(otlptranslator.UnderscoreEscapingWithSuffixes))
	if err != nil {
		return nil, fmt.Errorf("%s: metrics: %w", command, err)
	}
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp),
		sdkmetric.WithResource(resource.NewSchemaless(attribute.String("service.name", "tradewire"))))
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		_ = provider.Shutdown(context.Background())
		var op *net.OpError
		if errors.As(err, &op) {
			err = op.Err
		}
		return nil, usagef("--%s %s: cannot listen: %v", flagMetricsAddr, addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	m := &metricsServer{provider: provider, served: make(chan error, 1),
		srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}}
	go func() { m.served <- m.srv.Serve(ln) }()
	fmt.Fprintf(a.opts.Stderr, "%s: metrics at http://%s/metrics\n", command, ln.Addr())
	return m, nil
}

// stop ends the server, letting scrapes in flight finish, and shuts the
// provider down.
func (m *metricsServer) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), metricsShutdownTimeout)
	defer cancel()
	if err := m.srv.Shutdown(ctx); err != nil {
		_ = m.srv.Close()
	}
	<-m.served
	_ = m.provider.Shutdown(ctx)
}
