package transport

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/go-retryablehttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/tradewire/tradewire/signing"
)

// The signed-GET benchmark puts transport.Client's cost in proportion to
// two baselines, all against one loopback httptest server:
//
//   - floor: plain net/http plus one Ed25519 signature, what any signed
//     GET must cost;
//   - retryablehttp: github.com/hashicorp/go-retryablehttp signing in its
//     RequestLogHook (which runs before every attempt), the common way to
//     get retries with a fresh signature on each;
//   - client: a Client with its throttle off (RatePerMinute -1): the
//     benchmark measures the client, not the budget.
//
// BenchmarkSignedGET/paired is the figure: each iteration is one round in
// which every client sends one GET, in an order that rotates through all
// six permutations (so that none is always first after the others, or
// always on a warm cache), and each GET is timed alone. It reports the
// median over rounds of each round's client/floor, client/retryablehttp
// and retryablehttp/floor ratios (pairing within a round cancels drift a
// loaded machine adds to all three alike; the median drops the rounds a
// GC or a descheduling hit), each client's median time, and each client's
// allocations a GET (testing.AllocsPerRun, server side included, as
// -benchmem counts them). The per-client sub-benchmarks run one client
// alone, for a profile:
//
//	go test -run '^$' -bench 'SignedGET/paired' -benchtime 20000x -count 5 ./transport/
//	go test -run '^$' -bench 'SignedGET/client' -benchtime 20000x -cpuprofile cpu.out -memprofile mem.out ./transport/
//	go tool pprof -top -sample_index=alloc_objects transport.test mem.out
const benchTarget = "/api/v2/crypto/trading/accounts/"

func benchServer(b *testing.B) *httptest.Server {
	body := []byte(`{"next":null,"previous":null,"results":[{"account_number":"AB1234567890","status":"active","buying_power":"1042.55"}]}`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	}))
	b.Cleanup(srv.Close)
	return srv
}

// benchClients holds the three clients of the signed-GET benchmark, each
// with a connection pool of its own to the same server.
type benchClients struct {
	url    string
	key    ed25519.PrivateKey
	hc     *http.Client
	rc     *retryablehttp.Client
	client *Client
	// rt is client's connection pool.
	rt *http.Transport
}

func newBenchClients(b *testing.B) *benchClients {
	srv := benchServer(b)
	seed, _ := base64.StdEncoding.DecodeString(testSeed)
	pk, _ := signing.ParsePrivateKey(testSeed)
	s, _ := signing.New(testAPIKey, pk)
	newTransport := func() *http.Transport { return http.DefaultTransport.(*http.Transport).Clone() }

	rc := retryablehttp.NewClient()
	rc.HTTPClient = &http.Client{Transport: newTransport()}
	rc.Logger = nil
	rc.RequestLogHook = func(_ retryablehttp.Logger, r *http.Request, _ int) {
		s.SetHeaders(r.Header, time.Now(), r.Method, benchTarget, nil)
	}

	rt := newTransport()
	c, err := New(srv.URL, s, Config{RatePerMinute: -1, RoundTripper: rt})
	if err != nil {
		b.Fatal(err)
	}
	bc := &benchClients{url: srv.URL, key: ed25519.NewKeyFromSeed(seed), hc: &http.Client{Transport: newTransport()}, rc: rc, client: c, rt: rt}
	// Warm every connection pool.
	for _, get := range bc.gets() {
		get(b)
	}
	return bc
}

// gets returns the three clients' GETs, in the order of benchNames.
func (bc *benchClients) gets() [3]func(*testing.B) {
	return [3]func(*testing.B){bc.floorGET, bc.retryableGET, bc.clientGET}
}

var benchNames = [3]string{"floor", "retryablehttp", "client"}

// floorGET is what any signed GET must cost: plain net/http plus one
// Ed25519 signature.
func (bc *benchClients) floorGET(b *testing.B) {
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	sig := ed25519.Sign(bc.key, []byte(testAPIKey+ts+benchTarget+"GET"))
	req, _ := http.NewRequest("GET", bc.url+benchTarget, nil)
	req.Header.Set("x-api-key", testAPIKey)
	req.Header.Set("x-timestamp", ts)
	req.Header.Set("x-signature", base64.StdEncoding.EncodeToString(sig))
	resp, err := bc.hc.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.ReadAll(resp.Body); err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
}

// retryableGET is a GET through go-retryablehttp, signed in its hook.
func (bc *benchClients) retryableGET(b *testing.B) {
	req, err := retryablehttp.NewRequestWithContext(context.Background(), "GET", bc.url+benchTarget, nil)
	if err != nil {
		b.Fatal(err)
	}
	resp, err := bc.rc.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.ReadAll(resp.Body); err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
}

func (bc *benchClients) clientGET(b *testing.B) {
	if _, err := bc.client.Get(context.Background(), benchTarget); err != nil {
		b.Fatal(err)
	}
}

// benchOrders are the six orders the paired rounds rotate through.
var benchOrders = [6][3]int{{0, 1, 2}, {1, 2, 0}, {2, 0, 1}, {0, 2, 1}, {2, 1, 0}, {1, 0, 2}}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// BenchmarkSignedGET compares a signed GET through the Client with the
// floor and with go-retryablehttp; see the comment on benchTarget.
// paired reports client/floor (goal: at most 1.03) and
// client/retryablehttp (goal: at most 1.02).
func BenchmarkSignedGET(b *testing.B) {
	bc := newBenchClients(b)
	gets := bc.gets()
	for i, name := range benchNames {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				gets[i](b)
			}
		})
	}
	b.Run("paired", func(b *testing.B) {
		ratio, took, allocs := paired(b, gets)
		b.ReportMetric(ratio(2, 0), "client/floor")
		b.ReportMetric(ratio(2, 1), "client/retryablehttp")
		b.ReportMetric(ratio(1, 0), "retryablehttp/floor")
		for i, name := range benchNames {
			b.ReportMetric(median(took[i]), name+"-ns")
			b.ReportMetric(allocs[i], name+"-allocs")
		}
	})
}

// paired runs b.N rounds in which each of gets runs once, timed alone, in
// an order that rotates through benchOrders. It returns the median over
// rounds of the ratio of two gets' times, each get's times, and each
// get's allocations (testing.AllocsPerRun, measured first).
func paired(b *testing.B, gets [3]func(*testing.B)) (ratio func(num, den int) float64, took [3][]float64, allocs [3]float64) {
	for i, get := range gets {
		allocs[i] = testing.AllocsPerRun(200, func() { get(b) })
	}
	for i := range took {
		took[i] = make([]float64, 0, b.N)
	}
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		for _, i := range benchOrders[n%len(benchOrders)] {
			start := time.Now()
			gets[i](b)
			took[i] = append(took[i], float64(time.Since(start)))
		}
	}
	b.StopTimer()
	ratio = func(num, den int) float64 {
		r := make([]float64, b.N)
		for n := range r {
			r[n] = took[num][n] / took[den][n]
		}
		return median(r)
	}
	return ratio, took, allocs
}

// BenchmarkSignedGETTelemetry puts the cost of the client's telemetry in
// proportion, in paired rounds as BenchmarkSignedGET's, of three GETs:
// the client with telemetry off (no provider); the client with it on
// (the SDK's MeterProvider with a ManualReader never collected and its
// TracerProvider with no span processor: every instrument records, every
// span is made, nothing is exported); and "sdk", the floor any
// instrumentation on this SDK pays: the client with it off, plus the
// bare SDK calls a request's telemetry cannot do without, one record of
// the duration histogram with the same four attributes and, traced, one
// child span with them. It reports on/off (goal: at most 1.02), sdk/off
// (what the SDK itself costs) and on/sdk (what tradewire adds to it).
// "untraced" sends outside any trace, as a watch's polls do: the client
// makes no span; "traced" sends inside the caller's span, each GET a
// child span of it. BenchmarkSignedGET's client/floor is the client off
// against plain net/http.
//
//	go test -run '^$' -bench SignedGETTelemetry -benchtime 30000x -count 3 ./transport/
func BenchmarkSignedGETTelemetry(b *testing.B) {
	bc := newBenchClients(b)
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	tp := sdktrace.NewTracerProvider()
	// The client with telemetry on shares the one without's connection
	// pool: the rounds' GETs, one at a time, go over the same connection,
	// so that the two differ in their telemetry alone.
	on, err := New(bc.url, testSigner(b), Config{RatePerMinute: -1, RoundTripper: bc.rt, MeterProvider: mp, TracerProvider: tp})
	if err != nil {
		b.Fatal(err)
	}
	// The floor's instruments: the SDK's, without tradewire's code.
	hist, err := mp.Meter("bench").Float64Histogram("bench.duration", metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10))
	if err != nil {
		b.Fatal(err)
	}
	kvs := []attribute.KeyValue{keyMethod.String("GET"), keyURLTemplate.String(benchTarget), keyServerAddress.String("127.0.0.1"), keyStatus.Int(200)}
	record := []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(kvs...))}
	tracer, kind := tp.Tracer("bench"), []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient)}

	traced, caller := tp.Tracer("bench").Start(context.Background(), "caller")
	defer caller.End()
	for _, run := range []struct {
		name string
		ctx  context.Context
	}{{"untraced", context.Background()}, {"traced", traced}} {
		b.Run(run.name, func(b *testing.B) {
			onGET := func(b *testing.B) {
				if _, err := on.Get(run.ctx, benchTarget); err != nil {
					b.Fatal(err)
				}
			}
			sdkGET := func(b *testing.B) {
				ctx, span := run.ctx, trace.Span(nil)
				if run.ctx != context.Background() {
					ctx, span = tracer.Start(ctx, "HTTP GET", kind...)
				}
				start := time.Now()
				if _, err := bc.client.Get(ctx, benchTarget); err != nil {
					b.Fatal(err)
				}
				hist.Record(ctx, time.Since(start).Seconds(), record...)
				if span != nil {
					span.SetAttributes(kvs...)
					span.End()
				}
			}
			onGET(b) // warm its connection pool
			gets := [3]func(*testing.B){bc.clientGET, onGET, sdkGET}
			names := [3]string{"off", "on", "sdk"}
			ratio, took, allocs := paired(b, gets)
			b.ReportMetric(ratio(1, 0), "on/off")
			b.ReportMetric(ratio(2, 0), "sdk/off")
			b.ReportMetric(ratio(1, 2), "on/sdk")
			for i, name := range names {
				b.ReportMetric(median(took[i]), name+"-ns")
				b.ReportMetric(allocs[i], name+"-allocs")
			}
		})
	}
}
