package venue

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// meterName is the instrumentation scope of the venue's metrics.
const meterName = "github.com/tradewire/tradewire/venue"

// venueMetrics counts what the venue answered, as its Ledger records it,
// on a Config.MeterProvider's instruments.
type venueMetrics struct {
	requests  metric.Int64Counter
	throttled metric.Int64Counter
}

// newVenueMetrics makes the venue's instruments on mp and registers the
// orders gauge, read from e's book at each collection.
func newVenueMetrics(mp metric.MeterProvider, e *engine) (*venueMetrics, error) {
	m := mp.Meter(meterName)
	requests, err := m.Int64Counter("tradewire.venue.requests", metric.WithUnit("{request}"),
		metric.WithDescription("Requests the simulated venue received, by endpoint class and the status it answered (none when it dropped the connection)."))
	if err != nil {
		return nil, fmt.Errorf("venue: metrics: %w", err)
	}
	throttled, err := m.Int64Counter("tradewire.venue.throttled", metric.WithUnit("{response}"),
		metric.WithDescription("429 answers the simulated venue sent, by endpoint class."))
	if err != nil {
		return nil, fmt.Errorf("venue: metrics: %w", err)
	}
	orders, err := m.Int64ObservableGauge("tradewire.venue.orders", metric.WithUnit("{order}"),
		metric.WithDescription("Orders the simulated venue holds, by state."))
	if err != nil {
		return nil, fmt.Errorf("venue: metrics: %w", err)
	}
	if _, err := m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		for state, n := range e.ordersByState() {
			o.ObserveInt64(orders, n, metric.WithAttributes(attribute.String("tradewire.order_state", state)))
		}
		return nil
	}, orders); err != nil {
		return nil, fmt.Errorf("venue: metrics: %w", err)
	}
	return &venueMetrics{requests: requests, throttled: throttled}, nil
}

// record counts one request the Ledger recorded.
func (m *venueMetrics) record(r Request) {
	class := r.Class
	if class == "" {
		class = "other"
	}
	ctx := context.Background()
	classAttr := attribute.String("tradewire.endpoint_class", class)
	if r.Dropped {
		m.requests.Add(ctx, 1, metric.WithAttributes(classAttr))
		return
	}
	m.requests.Add(ctx, 1, metric.WithAttributes(classAttr, attribute.Int("http.response.status_code", r.Status)))
	if r.Status == 429 {
		m.throttled.Add(ctx, 1, metric.WithAttributes(classAttr))
	}
}

// ordersByState counts the orders of every account by their state now,
// brought up to now first as a read of the orders list would.
func (v *engine) ordersByState() map[string]int64 {
	now := v.now()
	v.mu.Lock()
	defer v.mu.Unlock()
	v.advance(now)
	out := map[string]int64{}
	for _, o := range v.orders {
		out[o.state]++
	}
	return out
}
