package broker_test

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/tradewire/tradewire/broker"
	"github.com/tradewire/tradewire/transport"
	"github.com/tradewire/tradewire/venue"
)

// counted returns the sum of the int64 counter name in rm by the value
// of attribute key.
func counted(rm metricdata.ResourceMetrics, name, key string) map[string]int64 {
	out := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, dp := range d.DataPoints {
					v, _ := dp.Attributes.Value(attribute.Key(key))
					out[v.Emit()] += dp.Value
				}
			case metricdata.Gauge[int64]:
				for _, dp := range d.DataPoints {
					out[""] = dp.Value
				}
			}
		}
	}
	return out
}

// TestTelemetry: a Client given a MeterProvider and a TracerProvider
// counts each Place by its answer, a create whose answer was lost and
// later found, a limit's refusal, a halt and a resume, and reports the
// store's open intents; each Place is a span carrying its
// client_order_id, never a secret.
func TestTelemetry(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	c, srv, _, clk := placing(t, broker.Config{Transport: transport.Config{MeterProvider: mp, TracerProvider: tp},
		Limits: broker.Limits{Symbols: []string{"BTC-USD"}}})
	clk.SkipWaits(1) // one goroutine: every wait (a lost answer's reconcile) passes at once
	ctx := context.Background()

	if _, err := c.Place(ctx, "k1", limitBuy()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Place(ctx, "k1", limitBuy()); err != nil { // answered from the store
		t.Fatal(err)
	}
	// A create committed whose answer is lost: the Place finds it.
	if err := srv.Inject(venue.Fault{Kind: "lose_response", Method: "POST", Path: "/api/v2/crypto/trading/orders/", AfterCommit: true}); err != nil {
		t.Fatal(err)
	}
	c.Place(ctx, "k2", limitBuy())
	if _, err := c.Place(ctx, "k2", limitBuy()); err != nil {
		t.Fatalf("k2 again: %v", err)
	}
	eth := limitBuy()
	eth.Symbol = "ETH-USD"
	var le *broker.LimitError
	if _, err := c.Place(ctx, "k3", eth); !errors.As(err, &le) {
		t.Fatalf("a symbol off the list: %v", err)
	}
	if _, err := c.Halt(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Place(ctx, "k4", limitBuy()); !errors.Is(err, broker.ErrHalted) {
		t.Fatalf("a Place while halted: %v", err)
	}
	if err := c.Resume(ctx); err != nil {
		t.Fatal(err)
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	creates := counted(rm, "tradewire.orders.creates", "tradewire.outcome")
	if creates["placed"] < 3 || creates["not_placed"] != 2 || creates["placed"]+creates["unknown"] != 4 {
		t.Errorf("tradewire.orders.creates = %v; want 4 placed or unknown (k1, k1, k2, k2; at least 3 placed) and 2 not placed (the limit, the halt)", creates)
	}
	if got := counted(rm, "tradewire.orders.unknown_resolved", "tradewire.resolution"); got["found"] != 1 {
		t.Errorf("tradewire.orders.unknown_resolved = %v; want found 1 (k2)", got)
	}
	if got := counted(rm, "tradewire.limits.denials", "tradewire.limit"); got["symbols"] != 1 || len(got) != 1 {
		t.Errorf("tradewire.limits.denials = %v; want symbols 1", got)
	}
	if got := counted(rm, "tradewire.halts", "tradewire.action"); got["halt"] != 1 || got["resume"] != 1 {
		t.Errorf("tradewire.halts = %v; want one halt and one resume", got)
	}
	if got, ok := counted(rm, "tradewire.intents.open", "")[""]; !ok || got != 0 {
		t.Errorf("tradewire.intents.open = %d (reported %v); want 0", got, ok)
	}

	cids := map[string]bool{}
	for _, k := range []string{"k1", "k2", "k3", "k4"} {
		cids[c.ClientOrderID(k)] = true
	}
	places := 0
	for _, s := range spans.Ended() {
		for _, kv := range s.Attributes() {
			if v := kv.Value.Emit(); strings.Contains(v, srv.APIKey) || strings.Contains(v, srv.PrivateKeyBase64) {
				t.Fatalf("span %s attribute %s shows a credential", s.Name(), kv.Key)
			}
		}
		if s.Name() != "tradewire.Place" {
			continue
		}
		places++
		cid := ""
		for _, kv := range s.Attributes() {
			if kv.Key == "tradewire.client_order_id" {
				cid = kv.Value.AsString()
			}
		}
		if !cids[cid] {
			t.Errorf("a Place span's client_order_id %q; want one of the keys'", cid)
		}
	}
	if places != 6 {
		t.Errorf("%d Place spans; want 6", places)
	}
	// Each create a Place sent is a span of its own under the Place's.
	placeSpans := map[string]bool{}
	for _, s := range spans.Ended() {
		if s.Name() == "tradewire.Place" {
			placeSpans[s.SpanContext().SpanID().String()] = true
		}
	}
	posts := 0
	for _, s := range spans.Ended() {
		create := false
		for _, kv := range s.Attributes() {
			create = create || (kv.Key == "url.template" && kv.Value.AsString() == "/api/v2/crypto/trading/orders/")
		}
		if s.Name() == "HTTP POST" && create { // not Halt's cancels
			posts++
			if !placeSpans[s.Parent().SpanID().String()] {
				t.Errorf("a create's span is not a child of a Place's")
			}
		}
	}
	if posts < 2 {
		t.Errorf("%d create spans; want k1's and k2's at least", posts)
	}
}

// TestBrokerImportsOnlyTheOTelAPI: a plain broker user pulls in the
// OpenTelemetry API and no SDK or exporter.
func TestBrokerImportsOnlyTheOTelAPI(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "./").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	otel := 0
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, "go.opentelemetry.io/otel/sdk") || strings.HasPrefix(p, "go.opentelemetry.io/otel/exporters") ||
			strings.HasPrefix(p, "github.com/prometheus/") {
			t.Errorf("package broker depends on %s: the SDK and exporters belong to the program", p)
		}
		if strings.HasPrefix(p, "go.opentelemetry.io/") {
			otel++
		}
	}
	if otel == 0 {
		t.Error("package broker does not depend on the OpenTelemetry API: this test shows nothing")
	}
}
