package orders

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/tradewire/tradewire/idempotency"
)

// telemetry is the Placer's instruments, on the transport's
// MeterProvider; nil when it has none.
type telemetry struct {
	resolved metric.Int64Counter
}

// Attribute sets of tradewire.orders.unknown_resolved, built once.
var (
	resolvedFound     = metric.WithAttributeSet(attribute.NewSet(attribute.String("tradewire.resolution", "found")))
	resolvedNotPlaced = metric.WithAttributeSet(attribute.NewSet(attribute.String("tradewire.resolution", "not_placed")))
)

func newTelemetry(mp metric.MeterProvider) *telemetry {
	if mp == nil {
		return nil
	}
	m := mp.Meter("github.com/tradewire/tradewire/orders")
	resolved, _ := m.Int64Counter("tradewire.orders.unknown_resolved", metric.WithUnit("{intent}"),
		metric.WithDescription("Intents whose create's outcome was unknown, later resolved: found at the venue (acknowledged or rejected), or ruled out (not placed)."))
	return &telemetry{resolved: resolved}
}

// settled counts an intent that went from prev to next, if it resolves
// an unknown outcome.
func (t *telemetry) settled(ctx context.Context, prev, next idempotency.State) {
	if t == nil || prev != idempotency.Unknown {
		return
	}
	switch next {
	case idempotency.Acknowledged, idempotency.Rejected:
		t.resolved.Add(ctx, 1, resolvedFound)
	case idempotency.NotPlaced:
		t.resolved.Add(ctx, 1, resolvedNotPlaced)
	}
}
