package transport

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/tradewire/tradewire/internal/adaptive"
	"github.com/tradewire/tradewire/internal/wire"
	simvenue "github.com/tradewire/tradewire/venue"
)

// recorder is an SDK meter and tracer provider whose metrics and spans a
// test reads.
type recorder struct {
	reader *sdkmetric.ManualReader
	mp     *sdkmetric.MeterProvider
	spans  *tracetest.SpanRecorder
	tp     *sdktrace.TracerProvider
}

func newRecorder(t testing.TB) *recorder {
	t.Helper()
	r := &recorder{reader: sdkmetric.NewManualReader(), spans: tracetest.NewSpanRecorder()}
	r.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(r.reader))
	r.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(r.spans))
	t.Cleanup(func() {
		r.mp.Shutdown(context.Background())
		r.tp.Shutdown(context.Background())
	})
	return r
}

// with returns cfg recording to r.
func (r *recorder) with(cfg Config) Config {
	cfg.MeterProvider, cfg.TracerProvider = r.mp, r.tp
	return cfg
}

// point is one data point of a metric: a histogram's count and sum, or
// a counter's or gauge's value.
type point struct {
	attrs attribute.Set
	count uint64
	sum   float64
	value float64
}

// collect returns every metric recorded so far, by name.
func (r *recorder) collect(t testing.TB) map[string][]point {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := make(map[string][]point)
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != scope {
			t.Errorf("metric scope %q, want %q", sm.Scope.Name, scope)
		}
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					got[m.Name] = append(got[m.Name], point{attrs: p.Attributes, count: p.Count, sum: p.Sum})
				}
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					got[m.Name] = append(got[m.Name], point{attrs: p.Attributes, value: float64(p.Value)})
				}
			case metricdata.Sum[float64]:
				for _, p := range d.DataPoints {
					got[m.Name] = append(got[m.Name], point{attrs: p.Attributes, value: p.Value})
				}
			case metricdata.Gauge[float64]:
				for _, p := range d.DataPoints {
					got[m.Name] = append(got[m.Name], point{attrs: p.Attributes, value: p.Value})
				}
			default:
				t.Errorf("metric %s: unexpected data %T", m.Name, m.Data)
			}
		}
	}
	return got
}

// values returns every attribute value, span name and span status
// description recorded so far.
func (r *recorder) values(t testing.TB) []string {
	t.Helper()
	var vs []string
	for _, ps := range r.collect(t) {
		for _, p := range ps {
			for _, kv := range p.attrs.ToSlice() {
				vs = append(vs, kv.Value.Emit())
			}
		}
	}
	for _, s := range r.spans.Ended() {
		vs = append(vs, s.Name(), s.Status().Description)
		for _, kv := range s.Attributes() {
			vs = append(vs, kv.Value.Emit())
		}
		for _, ev := range s.Events() {
			vs = append(vs, ev.Name)
			for _, kv := range ev.Attributes {
				vs = append(vs, kv.Value.Emit())
			}
		}
	}
	return vs
}

func set(kvs ...attribute.KeyValue) attribute.Set { return attribute.NewSet(kvs...) }

// wantPoints checks that name has exactly the points want, in any order,
// comparing attributes and counts (histograms) or values.
func wantPoints(t *testing.T, got map[string][]point, name string, want ...point) {
	t.Helper()
	ps := got[name]
	if len(ps) != len(want) {
		t.Errorf("%s: %d points %v, want %d", name, len(ps), describe(ps), len(want))
		return
	}
	for _, w := range want {
		found := false
		for _, p := range ps {
			if p.attrs.Equals(&w.attrs) && p.count == w.count && p.value == w.value {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: no point %v in %v", name, describe([]point{w}), describe(ps))
		}
	}
}

func describe(ps []point) []string {
	var s []string
	for _, p := range ps {
		s = append(s, p.attrs.Encoded(attribute.DefaultEncoder())+" count="+itoa(int64(p.count))+" value="+itoa(int64(p.value)))
	}
	return s
}

// checkNoIDs checks that no recorded value holds any of ids, and that no
// url.template holds a query string.
func checkNoIDs(t *testing.T, r *recorder, ids ...string) {
	t.Helper()
	for _, v := range r.values(t) {
		for _, id := range ids {
			if strings.Contains(v, id) {
				t.Errorf("recorded value %q holds %q", v, id)
			}
		}
	}
	for _, ps := range r.collect(t) {
		for _, p := range ps {
			if v, ok := p.attrs.Value(keyURLTemplate); ok && strings.ContainsAny(v.AsString(), "?&=") {
				t.Errorf("url.template %q holds a query string", v.AsString())
			}
		}
	}
}

const (
	telOrderID = "0b5a7d9e-1c3f-4a2b-8d6e-9f0a1b2c3d4e"
	telAccount = "AB1234567890"
	// telTarget reads one order on one account.
	telTarget = "/api/v2/crypto/trading/orders/" + telOrderID + "/?account_number=" + telAccount
	telRoute  = "/api/v2/crypto/trading/orders/{id}/"
)

// TestTelemetryThrottledThenOK: a GET answered 429 and then 200 records
// two attempts' durations (429 with error.type, 200 without), one retry
// and one 429 for the order reads class, the venue's clock offset, and
// one span, a child of the caller's, that says 200 after one resend;
// nothing recorded holds the order id, the account number or the query.
func TestTelemetryThrottledThenOK(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	clock := clockwork.NewFakeClockAt(t0)
	ahead := reply{status: http.StatusOK, body: `{}`, venueClock: 10 * time.Second}
	throttled := reply{status: http.StatusTooManyRequests, body: `{}`, venueClock: 10 * time.Second}
	v := newVenue(t, clock, throttled, ahead)
	log := newEventLog()
	rec := newRecorder(t)
	var observed []int
	c := newTestClient(t, v, log, rec.with(Config{Observer: func(a Attempt) { observed = append(observed, a.Status) }}))

	ctx, parent := rec.tp.Tracer("test").Start(ctx, "parent")
	done := make(chan result, 1)
	go func() {
		resp, err := c.Get(ctx, telTarget)
		done <- result{resp, err}
	}()
	drive(t, ctx, clock, log, 0)
	if res := <-done; res.err != nil || res.resp.Attempts != 2 {
		t.Fatalf("Get = %+v, %v; want 2 attempts and no error", res.resp, res.err)
	}
	parent.End()
	if len(observed) != 2 || observed[0] != 429 || observed[1] != 200 {
		t.Errorf("Observer saw %v, want [429 200]: the telemetry passes every attempt on", observed)
	}

	got := rec.collect(t)
	host := keyServerAddress.String("127.0.0.1")
	get, route := keyMethod.String("GET"), keyURLTemplate.String(telRoute)
	orderReads := set(keyEndpointClass.String("order_reads"))
	wantPoints(t, got, "http.client.request.duration",
		point{attrs: set(get, route, host, keyStatus.Int(429), keyErrorType.String("429")), count: 1},
		point{attrs: set(get, route, host, keyStatus.Int(200)), count: 1})
	wantPoints(t, got, "tradewire.http.retries", point{attrs: orderReads, value: 1})
	wantPoints(t, got, "tradewire.http.throttled", point{attrs: orderReads, value: 1})
	wantPoints(t, got, "tradewire.http.resends")
	wantPoints(t, got, "tradewire.budget.wait.time") // both tokens granted at once
	// Samples of 9.75 s and 10.25 s: Date + 0.5 s minus the arrival.
	wantPoints(t, got, "tradewire.venue.clock_offset", point{value: 10})
	wantPoints(t, got, "tradewire.budget.tokens") // the bucket is unlimited

	spans := rec.spans.Ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want the request's and its parent", len(spans))
	}
	s := spans[0]
	if s.Name() != "HTTP GET" || s.SpanKind() != trace.SpanKindClient || s.Parent().SpanID() != parent.SpanContext().SpanID() {
		t.Errorf("span %q kind %v parent %v, want HTTP GET, client, %v", s.Name(), s.SpanKind(), s.Parent().SpanID(), parent.SpanContext().SpanID())
	}
	want, attrs := set(get, route, host, keyStatus.Int(200), keyResendCount.Int(1)), set(s.Attributes()...)
	if !attrs.Equals(&want) {
		t.Errorf("span attributes %v, want %v", s.Attributes(), want.ToSlice())
	}
	if s.Status().Code != codes.Unset {
		t.Errorf("span status %v, want unset", s.Status())
	}
	checkNoIDs(t, rec, telOrderID, telAccount, "account_number")
}

// TestTelemetryOutsideATrace: a request whose context carries no span
// records its metrics but makes no span (a read outside any trace, such
// as a watch's poll, would otherwise start a trace of its own); inside
// a trace it is a child span.
func TestTelemetryOutsideATrace(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	clock := clockwork.NewFakeClockAt(t0)
	v := newVenue(t, clock)
	rec := newRecorder(t)
	c := newTestClient(t, v, newEventLog(), rec.with(Config{}))
	if _, err := c.Get(ctx, telTarget); err != nil {
		t.Fatal(err)
	}
	if spans := rec.spans.Ended(); len(spans) != 0 {
		t.Fatalf("%d spans outside a trace, want none", len(spans))
	}
	ok := set(keyMethod.String("GET"), keyURLTemplate.String(telRoute), keyServerAddress.String("127.0.0.1"), keyStatus.Int(200))
	wantPoints(t, rec.collect(t), "http.client.request.duration", point{attrs: ok, count: 1})

	traced, parent := rec.tp.Tracer("test").Start(ctx, "caller")
	if _, err := c.Get(traced, telTarget); err != nil {
		t.Fatal(err)
	}
	spans := rec.spans.Ended()
	if len(spans) != 1 || spans[0].Parent().SpanID() != parent.SpanContext().SpanID() {
		t.Fatalf("spans %v inside a trace, want one child of the caller's", spans)
	}
	wantPoints(t, rec.collect(t), "http.client.request.duration", point{attrs: ok, count: 2})
}

// TestTelemetryFailures: a final 404, and a POST whose connection drops
// after it was written, record their error.type on the attempt and on the
// span (with an error status); the POST's has no status code.
func TestTelemetryFailures(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	clock := clockwork.NewFakeClockAt(t0)
	v := newVenue(t, clock, status(404), reply{drop: true})
	rec := newRecorder(t)
	c := newTestClient(t, v, newEventLog(), rec.with(Config{}))

	ctx, _ = rec.tp.Tracer("test").Start(ctx, "caller") // never ended: not among the spans checked
	if _, err := c.Get(ctx, telTarget); !errors.Is(err, ErrNotFound) {
		t.Fatalf("GET: %v, want ErrNotFound", err)
	}
	cancel := "/api/v2/crypto/trading/orders/" + telOrderID + "/cancel/"
	if _, err := c.Do(ctx, http.MethodPost, cancel, []byte{}); !errors.Is(err, ErrUnknownOutcome) {
		t.Fatalf("POST: %v, want ErrUnknownOutcome", err)
	}
	host := keyServerAddress.String("127.0.0.1")
	get := set(keyMethod.String("GET"), keyURLTemplate.String(telRoute), host, keyStatus.Int(404), keyErrorType.String("404"))
	post := set(keyMethod.String("POST"), keyURLTemplate.String(telRoute+"cancel/"), host, keyErrorType.String("connection"))
	got := rec.collect(t)
	wantPoints(t, got, "http.client.request.duration", point{attrs: get, count: 1}, point{attrs: post, count: 1})
	wantPoints(t, got, "tradewire.http.retries")
	wantPoints(t, got, "tradewire.http.throttled")

	spans := rec.spans.Ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want 2", len(spans))
	}
	for i, want := range []struct {
		name  string
		attrs attribute.Set
		typ   string
	}{{"HTTP GET", get, "404"}, {"HTTP POST", post, "connection"}} {
		s := spans[i]
		if attrs := set(s.Attributes()...); s.Name() != want.name || !attrs.Equals(&want.attrs) {
			t.Errorf("span %q %v, want %q %v", s.Name(), s.Attributes(), want.name, want.attrs.ToSlice())
		}
		if s.Status().Code != codes.Error || s.Status().Description != want.typ {
			t.Errorf("span %q status %v, want an error %q", s.Name(), s.Status(), want.typ)
		}
	}
	checkNoIDs(t, rec, telOrderID, telAccount)
}

// TestTelemetryResend: net/http's replay of a GET after a refused stream
// counts one resend for the route, on an attempt answered 200, and the
// span's resend count says so.
func TestTelemetryResend(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	v := newH2Venue(t, simvenue.Config{})
	v.fault(t, "refused_stream", http.MethodGet, 1)
	rec := newRecorder(t)
	c, err := New(v.srv.URL, testSigner(t), rec.with(Config{Clock: v.clock, RoundTripper: v.transport(t), Limiter: &countingLimiter{}}))
	if err != nil {
		t.Fatal(err)
	}
	account := v.Config().AccountNumber
	ctx, _ = rec.tp.Tracer("test").Start(ctx, "caller") // never ended: not among the spans checked
	if _, err := c.Get(ctx, "/api/v2/crypto/trading/holdings/?account_number="+account); err != nil {
		t.Fatal(err)
	}
	route := keyURLTemplate.String("/api/v2/crypto/trading/holdings/")
	got := rec.collect(t)
	wantPoints(t, got, "tradewire.http.resends", point{attrs: set(route), value: 1})
	wantPoints(t, got, "http.client.request.duration",
		point{attrs: set(keyMethod.String("GET"), route, keyServerAddress.String("127.0.0.1"), keyStatus.Int(200)), count: 1})
	wantPoints(t, got, "tradewire.http.retries")
	wantPoints(t, got, "tradewire.budget.tokens") // not the in-process bucket
	spans := rec.spans.Ended()
	if len(spans) != 1 {
		t.Fatalf("%d spans, want 1", len(spans))
	}
	attrs := set(spans[0].Attributes()...)
	if n, _ := attrs.Value(keyResendCount); n.AsInt64() != 1 {
		t.Errorf("span resend count %v, want 1", n)
	}
	checkNoIDs(t, rec, account)
}

// TestTelemetryBudget: the in-process bucket's tokens are observed, and
// the time an attempt waits for a token adds to the wait time, whether
// the bucket is the client's own (which reports its waits itself, and
// nothing for a token granted at once) or one given in Config (timed
// from outside).
func TestTelemetryBudget(t *testing.T) {
	t.Parallel()
	for _, shared := range []bool{false, true} {
		t.Run(fmt.Sprintf("shared=%v", shared), func(t *testing.T) {
			t.Parallel()
			ctx := testContext(t)
			clock := clockwork.NewFakeClockAt(t0)
			v := newVenue(t, clock)
			rec := newRecorder(t)
			cfg := Config{RatePerMinute: 60, Burst: 1}
			if shared {
				cfg.Limiter = NewTokenBucket(clock, 60, 1)
			}
			c := newTestClient(t, v, newEventLog(), rec.with(cfg))
			_, burst := adaptive.Headroom(60, 1)
			if burst != 1 {
				t.Fatalf("burst %d, want 1", burst)
			}
			wantPoints(t, rec.collect(t), "tradewire.budget.tokens", point{value: 1})
			wantPoints(t, rec.collect(t), "tradewire.venue.clock_offset") // not measured yet

			if _, err := c.Get(ctx, accountsPath); err != nil {
				t.Fatal(err)
			}
			wantPoints(t, rec.collect(t), "tradewire.budget.tokens", point{value: 0})
			done := make(chan error, 1)
			go func() {
				_, err := c.Get(ctx, accountsPath)
				done <- err
			}()
			if err := clock.BlockUntilContext(ctx, 1); err != nil {
				t.Fatal(err)
			}
			clock.Advance(2 * time.Second)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			got := rec.collect(t)
			wantPoints(t, got, "tradewire.budget.wait.time", point{value: 2})
			// 2 s at 0.99 a second refilled the token the wait owed and 0.98 more.
			if ps := got["tradewire.budget.tokens"]; len(ps) != 1 || ps[0].value < 0.979 || ps[0].value > 0.981 {
				t.Errorf("tokens %v, want 0.98", describe(ps))
			}
			if b := cfg.Limiter; b != nil && b.(*tokenBucket).waited != nil {
				t.Error("the client set its telemetry on a bucket given in Config, which other clients may share")
			}
		})
	}
}

// TestTelemetryOff: with no provider the client sets no telemetry up (a
// request pays one nil check) and keeps its own budget; with a tracer
// provider alone, there are no instruments.
func TestTelemetryOff(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClockAt(t0)
	v := newVenue(t, clock)
	c := newTestClient(t, v, newEventLog())
	if _, own := c.limiter.(*tokenBucket); c.tel != nil || !own {
		t.Fatalf("telemetry %+v, limiter %T: want none, and the client's own bucket", c.tel, c.limiter)
	}
	on := newTestClient(t, v, newEventLog(), Config{TracerProvider: newRecorder(t).tp})
	if on.tel == nil || on.tel.tracer == nil || on.tel.duration != nil {
		t.Fatalf("telemetry %+v, want a tracer and no instruments", on.tel)
	}
}

func TestAttemptErrorType(t *testing.T) {
	for _, tc := range []struct {
		status int
		err    error
		want   string
	}{
		{200, nil, ""},
		{302, nil, ""},
		{429, nil, "429"},
		{503, nil, "503"},
		{200, errResponseTooLarge, "response_too_large"},
		{0, &replayRefusedError{Err: context.Canceled}, "replay_refused"},
		{0, errAttemptTimeout, "timeout"},
		{0, context.DeadlineExceeded, "timeout"},
		{0, context.Canceled, "canceled"},
		{0, errors.New("connection reset by peer"), "connection"},
	} {
		if got := attemptErrorType(tc.status, tc.err); got != tc.want {
			t.Errorf("attemptErrorType(%d, %v) = %q, want %q", tc.status, tc.err, got, tc.want)
		}
	}
}

// TestTelemetryRoutes: a route is templated the same whether it comes
// from the cache or not; paths holding an id are never kept, and the
// cache of fixed paths stays bounded however many a caller sends.
func TestTelemetryRoutes(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t)
	c, err := New("https://venue.example", testSigner(t), rec.with(Config{}))
	if err != nil {
		t.Fatal(err)
	}
	kept := func() int {
		n := 0
		c.tel.routes.Range(func(any, any) bool { n++; return true })
		return n
	}
	for i := range 200 {
		r := c.tel.route("GET", fmt.Sprintf("/api/v2/crypto/trading/orders/%d-id/", i))
		if r.route != telRoute || r.class != wire.ClassOrderReads {
			t.Fatalf("route %q class %v, want %q, order reads", r.route, r.class, telRoute)
		}
	}
	if n := kept(); n != 0 {
		t.Fatalf("%d routes kept after paths with ids, want 0", n)
	}
	for range 2 { // the second time from the cache
		for _, tc := range []struct {
			method, path string
			class        wire.Class
		}{{"GET", wire.PathAccounts, wire.ClassAccountReads}, {"POST", wire.PathOrders, wire.ClassOrderWrites}, {"GET", wire.PathOrders, wire.ClassOrderReads}} {
			if r := c.tel.route(tc.method, tc.path); r.route != tc.path || r.class != tc.class {
				t.Errorf("%s %s: route %q class %v, want itself, %v", tc.method, tc.path, r.route, r.class, tc.class)
			}
		}
	}
	if n := kept(); n != 3 {
		t.Fatalf("%d routes kept, want 3", n)
	}
	path := "/api/v2/crypto/trading/"
	for range 2 * maxRoutes {
		path += "orders/"
		if r := c.tel.route("GET", path); r.route != path {
			t.Fatalf("route %q, want %q", r.route, path)
		}
	}
	if n := kept(); n != maxRoutes {
		t.Errorf("%d routes kept, want at most %d", n, maxRoutes)
	}
}
