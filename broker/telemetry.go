package broker

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/tradewire/tradewire/idempotency"
)

// telemetry is the Client's instruments and tracer, on the transport's
// MeterProvider and TracerProvider (transport.Config); nil when it has
// neither, so that a Client without them spends nothing on telemetry.
type telemetry struct {
	tracer  trace.Tracer // nil without a TracerProvider
	creates metric.Int64Counter
	denials metric.Int64Counter
	halts   metric.Int64Counter
	events  metric.Int64Counter
	lag     metric.Float64Gauge
	meter   metric.Meter // nil without a MeterProvider
}

const instrumentation = "github.com/tradewire/tradewire/broker"

// The outcomes of tradewire.orders.creates, as a bot reads Place's
// answer.
var (
	outcomePlaced     = outcome("placed")
	outcomeRejected   = outcome("rejected")
	outcomeNotPlaced  = outcome("not_placed")
	outcomeUnknown    = outcome("unknown")
	outcomeInProgress = outcome("in_progress")
)

// outcome is the options of an Add of outcome s: a slice made once, as
// the variadic slice of a call through an interface is made on the heap
// each call.
func outcome(s string) []metric.AddOption {
	return []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(attribute.String("tradewire.outcome", s)))}
}

func newTelemetry(mp metric.MeterProvider, tp trace.TracerProvider) *telemetry {
	if mp == nil && tp == nil {
		return nil
	}
	t := &telemetry{}
	if tp != nil {
		t.tracer = tp.Tracer(instrumentation)
	}
	if mp == nil {
		return t
	}
	m := mp.Meter(instrumentation)
	t.meter = m
	t.creates, _ = m.Int64Counter("tradewire.orders.creates", metric.WithUnit("{call}"),
		metric.WithDescription("Place calls by what they answered: placed, rejected, not_placed (nothing of this call at the venue), unknown, in_progress (another holder has the key)."))
	t.denials, _ = m.Int64Counter("tradewire.limits.denials", metric.WithUnit("{order}"),
		metric.WithDescription("Orders refused by a risk limit, by the limit; nothing was sent for them."))
	t.halts, _ = m.Int64Counter("tradewire.halts", metric.WithUnit("{call}"),
		metric.WithDescription("Kill-switch actions on the intent store: halt or resume."))
	t.events, _ = m.Int64Counter("tradewire.watch.events", metric.WithUnit("{event}"),
		metric.WithDescription("Order events a watch yielded, by kind."))
	t.lag, _ = m.Float64Gauge("tradewire.watch.lag", metric.WithUnit("s"),
		metric.WithDescription("How far behind the venue's clock a watch's view is: the time since the start of its last complete poll."))
	return t
}

// startPlace starts Place's span; its lookups and sends are its
// children.
func (t *telemetry) startPlace(ctx context.Context) (context.Context, trace.Span) {
	if t == nil || t.tracer == nil {
		return ctx, nil
	}
	return t.tracer.Start(ctx, "tradewire.Place", spanKindInternal)
}

var spanKindInternal = trace.WithSpanKind(trace.SpanKindInternal)

// placed counts one Place by its answer, and ends its span with the
// key's client_order_id, cid() (known once the Place has read the
// account; not a secret).
func (t *telemetry) placed(ctx context.Context, span trace.Span, cid func() string, err error) {
	if t == nil {
		return
	}
	opt := outcomeNotPlaced
	switch {
	case err == nil:
		opt = outcomePlaced
	case errors.Is(err, ErrInProgress):
		opt = outcomeInProgress
	case errors.Is(err, ErrUnknownOutcome):
		opt = outcomeUnknown
	case errors.Is(err, ErrRejected):
		opt = outcomeRejected
	}
	if t.creates != nil {
		t.creates.Add(ctx, 1, opt...)
	}
	if span != nil {
		span.SetAttributes(attribute.String("tradewire.client_order_id", cid()))
		if err != nil {
			span.SetStatus(codes.Error, "")
		}
		span.End()
	}
}

func (t *telemetry) denied(limit string) {
	if t == nil || t.denials == nil {
		return
	}
	t.denials.Add(context.Background(), 1, metric.WithAttributes(attribute.String("tradewire.limit", limit)))
}

func (t *telemetry) halted(ctx context.Context, action string) {
	if t == nil || t.halts == nil {
		return
	}
	t.halts.Add(ctx, 1, metric.WithAttributes(attribute.String("tradewire.action", action)))
}

func (t *telemetry) watched(ctx context.Context, kind EventKind) {
	if t == nil || t.events == nil {
		return
	}
	t.events.Add(ctx, 1, metric.WithAttributes(attribute.String("tradewire.event", string(kind))))
}

func (t *telemetry) watchLag(ctx context.Context, seconds float64) {
	if t == nil || t.lag == nil {
		return
	}
	t.lag.Record(ctx, seconds)
}

// observeOpen reports the store's open intents of account (pending or
// unknown) as tradewire.intents.open, read at each collection (nothing
// when the store cannot be read), until the returned registration is
// unregistered.
func (t *telemetry) observeOpen(store idempotency.Store, account string) metric.Registration {
	if t == nil || t.meter == nil {
		return nil
	}
	open, err := t.meter.Int64ObservableGauge("tradewire.intents.open", metric.WithUnit("{intent}"),
		metric.WithDescription("Intents in the store whose create's outcome is not settled yet (pending or unknown)."))
	if err != nil {
		return nil
	}
	reg, err := t.meter.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		recs, err := store.List(ctx, idempotency.Pending, idempotency.Unknown)
		if err != nil {
			return nil // nothing to report now: the store's own errors say why
		}
		n := 0
		for _, r := range recs {
			if r.AccountNumber == account {
				n++
			}
		}
		o.ObserveInt64(open, int64(n))
		return nil
	}, open)
	if err != nil {
		return nil
	}
	return reg
}
