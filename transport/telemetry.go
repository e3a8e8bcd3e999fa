package transport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"weak"

	"github.com/jonboulle/clockwork"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/tradewire/tradewire/internal/wire"
)

// scope is the instrumentation scope of the client's meter and tracer.
const scope = "github.com/tradewire/tradewire/transport"

// The attribute keys the client records, written as the semantic
// conventions spell them.
const (
	keyMethod        = attribute.Key("http.request.method")
	keyStatus        = attribute.Key("http.response.status_code")
	keyErrorType     = attribute.Key("error.type")
	keyURLTemplate   = attribute.Key("url.template")
	keyServerAddress = attribute.Key("server.address")
	keyResendCount   = attribute.Key("http.request.resend_count")
	keyEndpointClass = attribute.Key("tradewire.endpoint_class")
)

// telemetry is what a Client records its metrics and spans with; a
// Client whose Config has neither provider has none (nil), and pays one
// nil check a request for it. Each instrument is nil when its provider is.
type telemetry struct {
	duration   metric.Float64Histogram
	resends    metric.Int64Counter
	retries    metric.Int64Counter
	throttled  metric.Int64Counter
	budgetWait metric.Float64Counter
	tracer     trace.Tracer
	// server is the server.address attribute, the venue's host.
	server attribute.KeyValue
	// classes holds each endpoint class's attributes.
	classes [wire.NumClasses]metric.MeasurementOption
	// attempts holds the attributes of http.client.request.duration made
	// so far, by attemptKey: making a set costs more than finding it.
	attempts sync.Map
	// routes holds, by path, the routeOf of paths made of the venue's
	// fixed words only (a path with an id in it is templated each time),
	// at most maxRoutes of them.
	routes  sync.Map
	nroutes atomic.Int32
}

// maxRoutes bounds telemetry.routes.
const maxRoutes = 64

// routeOf is a request's route template and endpoint class, and the
// attributes of its last attempt's duration.
type routeOf struct {
	route string
	class wire.Class
	// cached is set on the routeOf of a path without an id, kept in
	// telemetry.routes: only its last and lastSpan are kept for the next
	// request.
	cached   bool
	last     atomic.Pointer[lastAttempt]
	lastSpan atomic.Pointer[lastSpan]
}

// lastSpan is the attributes of the span of a request that succeeded at
// its first try with status.
type lastSpan struct {
	status int
	kvs    []attribute.KeyValue
}

// lastAttempt is an attempt's status and error.type, and the attributes
// of its duration.
type lastAttempt struct {
	status  int
	errType string
	opts    []metric.RecordOption
}

// route returns the routeOf method's request to path: cached, when the
// path holds no id.
func (t *telemetry) route(method, path string) *routeOf {
	type key struct{ method, path string }
	k := key{method, path}
	if r, ok := t.routes.Load(k); ok {
		return r.(*routeOf)
	}
	r := &routeOf{route: wire.Route(path), class: wire.ClassOf(method, path)}
	if r.route == path && t.nroutes.Load() < maxRoutes && t.nroutes.Add(1) <= maxRoutes {
		r.cached = true
		t.routes.Store(k, r)
	}
	return r
}

// durationAttrs returns the options of the duration of r's attempt that
// ended with status and errType.
func (t *telemetry) durationAttrs(r *request, status int, errType string) []metric.RecordOption {
	if l := r.ro.last.Load(); l != nil && l.status == status && l.errType == errType {
		return l.opts
	}
	opts := t.attemptAttrs(attemptKey{method: r.method, route: r.ro.route, errType: errType, status: status})
	if r.ro.cached {
		r.ro.last.Store(&lastAttempt{status, errType, opts})
	}
	return opts
}

// attemptKey is what an attempt's http.client.request.duration
// attributes are made of, besides the server.
type attemptKey struct {
	method, route, errType string
	status                 int
}

// attemptAttrs returns k's attributes, made once, as the options of a
// Record (a slice made once too: the variadic slice of a call through an
// interface is made on the heap each call).
func (t *telemetry) attemptAttrs(k attemptKey) []metric.RecordOption {
	if o, ok := t.attempts.Load(k); ok {
		return o.([]metric.RecordOption)
	}
	kvs := [5]attribute.KeyValue{keyMethod.String(k.method), keyURLTemplate.String(k.route), t.server}
	n := 3
	if k.status != 0 {
		kvs[n] = keyStatus.Int(k.status)
		n++
	}
	if k.errType != "" {
		kvs[n] = keyErrorType.String(k.errType)
		n++
	}
	o, _ := t.attempts.LoadOrStore(k, []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(kvs[:n]...))})
	return o.([]metric.RecordOption)
}

// instrument sets c's telemetry up from cfg's providers, when either is
// set.
func (c *Client) instrument(cfg Config) error {
	if cfg.MeterProvider == nil && cfg.TracerProvider == nil {
		return nil
	}
	t := &telemetry{server: keyServerAddress.String(c.base.Hostname())}
	if cfg.TracerProvider != nil {
		t.tracer = cfg.TracerProvider.Tracer(scope)
	}
	if cfg.MeterProvider != nil {
		if err := t.meters(c, cfg.MeterProvider.Meter(scope)); err != nil {
			return fmt.Errorf("transport: MeterProvider: %w", err)
		}
	}
	c.tel = t
	return nil
}

// meters creates t's instruments on m, and the gauges that read c.
func (t *telemetry) meters(c *Client, m metric.Meter) error {
	var errs [8]error
	t.duration, errs[0] = m.Float64Histogram("http.client.request.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of each attempt of an HTTP request, from its signature to the end of its answer."),
		metric.WithExplicitBucketBoundaries(0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10))
	t.resends, errs[1] = m.Int64Counter("tradewire.http.resends", metric.WithUnit("{request}"),
		metric.WithDescription("Sends of a GET that net/http made again by itself (after a refused stream, a GOAWAY or a dead connection)."))
	t.retries, errs[2] = m.Int64Counter("tradewire.http.retries", metric.WithUnit("{request}"),
		metric.WithDescription("Attempts of a request after its first."))
	t.throttled, errs[3] = m.Int64Counter("tradewire.http.throttled", metric.WithUnit("{response}"),
		metric.WithDescription("Answers 429 Too Many Requests."))
	t.budgetWait, errs[4] = m.Float64Counter("tradewire.budget.wait.time", metric.WithUnit("s"),
		metric.WithDescription("Time sends spent waiting for a token of the rate budget, summed: a send granted a token at once adds nothing; with a shared budget its round trip to the budget's server counts."))
	offset, err := m.Float64ObservableGauge("tradewire.venue.clock_offset", metric.WithUnit("s"),
		metric.WithDescription("The venue's clock minus this process's, as measured from its answers' Date headers."))
	errs[5] = err
	instruments := []metric.Observable{offset}
	var tokens metric.Float64ObservableGauge
	counter, _ := c.limiter.(tokenCounter)
	if counter != nil {
		tokens, errs[6] = m.Float64ObservableGauge("tradewire.budget.tokens", metric.WithUnit("{token}"),
			metric.WithDescription("Tokens left in the client's rate budget (negative: owed to callers waiting for one); a shared budget's, read from its server."))
		instruments = append(instruments, tokens)
	}
	if err := errors.Join(errs[:]...); err != nil {
		return err
	}
	// The callback holds the client weakly: a provider that outlives the
	// client does not keep it alive.
	wc := weak.Make(c)
	_, errs[7] = m.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		c := wc.Value()
		if c == nil {
			return nil
		}
		if d, ok := c.ClockOffset(); ok {
			o.ObserveFloat64(offset, d.Seconds())
		}
		if counter != nil {
			// A shared budget that cannot be read now reports nothing:
			// its errors reach the callers that wait on it.
			if n, ok, err := counter.Tokens(ctx); err == nil && ok {
				o.ObserveFloat64(tokens, n)
			}
		}
		return nil
	}, instruments...)
	if errs[7] != nil {
		return errs[7]
	}
	// The client's own budget reports the waits it imposed, so that a
	// token granted at once costs nothing; a budget given in Config is
	// timed from outside, wrapped. Either way the client's loop, with
	// telemetry off, is as it was without it.
	switch l := c.limiter.(type) {
	case *tokenBucket:
		if c.cfg.Limiter == nil {
			l.waited = t.waited
		}
	case *adaptiveLimiter:
		if c.cfg.Limiter == nil {
			l.waited = t.waited
		}
	}
	if c.cfg.Limiter != nil {
		w := waitTimer{c.clock, t.budgetWait}
		if c.adaptive != nil {
			l := &timedClassLimiter{classLimiter: c.adaptive, waitTimer: w}
			c.limiter, c.adaptive = l, l
		} else {
			c.limiter = &timedLimiter{Limiter: c.limiter, waitTimer: w}
		}
	}
	for cl := range t.classes {
		t.classes[cl] = metric.WithAttributeSet(attribute.NewSet(keyEndpointClass.String(strings.ReplaceAll(wire.Class(cl).String(), " ", "_"))))
	}
	return nil
}

var spanKindClient = trace.WithSpanKind(trace.SpanKindClient)

// request is what the client's telemetry keeps of one request.
type request struct {
	t      *telemetry
	method string
	ro     *routeOf
	span   trace.Span
	// routeSet is the url.template attribute, made at the first resend.
	routeSet metric.MeasurementOption
	// attempts, replays, status and errType are of the attempts so far:
	// their number, net/http's resends, the last one's status and
	// error.type.
	attempts, replays int
	status            int
	errType           string
}

// start begins r, the telemetry of a request of method to path, and its
// span as a child of ctx's when ctx carries one: a request outside any
// trace (a watch's poll, a read the caller does not trace) makes no
// span, rather than a trace of its own. It returns the request's
// context, with its span.
func (t *telemetry) start(ctx context.Context, r *request, method, path string) context.Context {
	r.t, r.method = t, methodName(method)
	r.ro = t.route(r.method, path)
	if t.tracer != nil && trace.SpanContextFromContext(ctx).IsValid() {
		ctx, r.span = t.tracer.Start(ctx, spanName(r.method), spanKindClient)
	}
	return ctx
}

// attempt records attempt n as it ended: the status read (0 for none),
// net/http's resends, how long it took, and its failure below HTTP.
func (r *request) attempt(ctx context.Context, n, status, replays int, elapsed time.Duration, err error) {
	r.attempts, r.replays, r.status = n, r.replays+replays, status
	r.errType = attemptErrorType(status, err)
	t := r.t
	if t.duration == nil {
		return
	}
	t.duration.Record(ctx, elapsed.Seconds(), t.durationAttrs(r, status, r.errType)...)
	if replays > 0 {
		if r.routeSet == nil {
			r.routeSet = metric.WithAttributeSet(attribute.NewSet(keyURLTemplate.String(r.ro.route)))
		}
		t.resends.Add(ctx, int64(replays), r.routeSet)
	}
	if n > 1 {
		t.retries.Add(ctx, 1, t.classes[r.ro.class])
	}
	if status == http.StatusTooManyRequests {
		t.throttled.Add(ctx, 1, t.classes[r.ro.class])
	}
}

// end ends the request's span with its outcome.
func (r *request) end(err error) {
	if r.span == nil {
		return
	}
	// The attributes are set at once, at the end: one call costs less
	// than two. Those of a success at the first try, the common case,
	// are made once per route and status.
	resends := r.replays + max(0, r.attempts-1)
	if err == nil && resends == 0 && r.ro.cached {
		l := r.ro.lastSpan.Load()
		if l == nil || l.status != r.status {
			l = &lastSpan{status: r.status, kvs: []attribute.KeyValue{keyMethod.String(r.method), keyURLTemplate.String(r.ro.route), r.t.server}}
			if r.status != 0 {
				l.kvs = append(l.kvs, keyStatus.Int(r.status))
			}
			r.ro.lastSpan.Store(l)
		}
		r.span.SetAttributes(l.kvs...)
		r.span.End()
		return
	}
	kvs := [7]attribute.KeyValue{keyMethod.String(r.method), keyURLTemplate.String(r.ro.route), r.t.server}
	n := 3
	if r.status != 0 {
		kvs[n] = keyStatus.Int(r.status)
		n++
	}
	if resends > 0 {
		kvs[n] = keyResendCount.Int(resends)
		n++
	}
	if err != nil {
		typ := requestErrorType(r, err)
		kvs[n] = keyErrorType.String(typ)
		n++
		// The type, not the error's text: the text names the path.
		r.span.SetStatus(codes.Error, typ)
	}
	r.span.SetAttributes(kvs[:n]...)
	r.span.End()
}

// attemptErrorType is an attempt's error.type: the status for a 4xx or 5xx
// answer, a short class for a failure below HTTP, "" for a success.
func attemptErrorType(status int, err error) string {
	if err == nil {
		if status >= 400 {
			return strconv.Itoa(status)
		}
		return ""
	}
	var refused *replayRefusedError
	var ne net.Error
	switch {
	case errors.Is(err, errResponseTooLarge):
		return "response_too_large"
	case errors.As(err, &refused):
		return "replay_refused"
	case errors.Is(err, errAttemptTimeout), errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	}
	return "connection"
}

// requestErrorType is a failed request's error.type.
func requestErrorType(r *request, err error) string {
	switch {
	case errors.Is(err, ErrNotSent):
		return "not_sent"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case r.errType != "":
		return r.errType
	case r.status != 0:
		return strconv.Itoa(r.status)
	}
	return attemptErrorType(0, err)
}

// methodName is method as the http.request.method attribute holds it: a
// method that is not one of HTTP's is "_OTHER", so that callers' methods
// cannot grow the attributes' cardinality.
func methodName(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return method
	}
	return "_OTHER"
}

// spanName is a request's span's name, "HTTP GET".
func spanName(method string) string {
	switch method {
	case http.MethodGet:
		return "HTTP GET"
	case http.MethodPost:
		return "HTTP POST"
	}
	return "HTTP " + method
}

// tokenCounter is a Limiter that counts the tokens it has left: the
// in-process bucket, and the fleet's shared budgets (redisbudget,
// pgbudget), which read them from their server. ok is false when it has
// no single bucket to count (throttling off, or one bucket per endpoint
// class).
type tokenCounter interface {
	Tokens(ctx context.Context) (n float64, ok bool, err error)
}

// waited adds a granted token's wait, d, to the budget's wait time.
func (t *telemetry) waited(ctx context.Context, d time.Duration) {
	t.budgetWait.Add(ctx, d.Seconds())
}

// waitTimer adds the time of each wait for a token that was granted to
// waits.
type waitTimer struct {
	clock clockwork.Clock
	waits metric.Float64Counter
}

// timed runs wait and adds its time if it granted a token.
func (w waitTimer) timed(ctx context.Context, wait func() error) error {
	from := w.clock.Now()
	err := wait()
	if err == nil {
		w.waits.Add(ctx, w.clock.Now().Sub(from).Seconds())
	}
	return err
}

// timedLimiter is a Limiter whose granted Waits are timed.
type timedLimiter struct {
	Limiter
	waitTimer
}

// Wait implements Limiter.
func (l *timedLimiter) Wait(ctx context.Context) error {
	return l.timed(ctx, func() error { return l.Limiter.Wait(ctx) })
}

// timedClassLimiter is timedLimiter for a classLimiter.
type timedClassLimiter struct {
	classLimiter
	waitTimer
}

// Wait implements Limiter.
func (l *timedClassLimiter) Wait(ctx context.Context) error {
	return l.timed(ctx, func() error { return l.classLimiter.Wait(ctx) })
}

// WaitFor implements classLimiter.
func (l *timedClassLimiter) WaitFor(ctx context.Context, method, path string) error {
	return l.timed(ctx, func() error { return l.classLimiter.WaitFor(ctx, method, path) })
}
