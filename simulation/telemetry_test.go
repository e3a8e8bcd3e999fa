package simulation

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/tradewire/tradewire/transport"
	"github.com/tradewire/tradewire/venue"
)

// sums returns, for the counter name in rm, its sum by the value of the
// attribute key ("" for the total).
func sums(rm metricdata.ResourceMetrics, name, key string) map[string]int64 {
	out := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			if s, ok := m.Data.(metricdata.Sum[int64]); ok {
				for _, dp := range s.DataPoints {
					v, _ := dp.Attributes.Value(attribute.Key(key))
					out[v.Emit()] += dp.Value
				}
			}
		}
	}
	return out
}

// TestPlacementMetricsMatchTheLedger runs a placement scenario of the
// matrix (429s and 503s before the commit, answers lost after it,
// restarts, on the venue that creates a second order for a reused id) with
// metrics on, and checks the counts against the run's record: creates by
// outcome against what each Place answered (which the invariants check
// against the venue's ledger), and the 429s the client counted against
// the venue's ledger.
func TestPlacementMetricsMatchTheLedger(t *testing.T) {
	t.Parallel()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	sc := placementScenario(1, placementMixes()[0], venue.CreateSecond, 3*time.Minute, 90*time.Second)
	sc.newCaller = func(e env) (Caller, error) {
		return transport.New(e.baseURL, e.signer, transport.Config{Clock: e.clock, RoundTripper: e.transport,
			AttemptTimeout: e.attemptTimeout, MeterProvider: mp})
	}
	r := run(t, sc)
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}

	// Creates by outcome, against the Places' answers. A Place cut off by
	// a restart answered as its error says; the record calls it
	// interrupted.
	got := sums(rm, "tradewire.orders.creates", "tradewire.outcome")
	want := map[string]int64{}
	interrupted := int64(0)
	for _, op := range r.Placement.Ops {
		switch op.Op {
		case "place":
			switch op.Outcome {
			case "acknowledged":
				want["placed"]++
			case "invalid":
				want["not_placed"]++
			case "interrupted":
				interrupted++
			default:
				want[op.Outcome]++
			}
		}
	}
	for _, outcome := range []string{"placed", "rejected", "in_progress"} {
		if got[outcome] != want[outcome] {
			t.Errorf("tradewire.orders.creates{outcome=%s} = %d; the Places answered %d", outcome, got[outcome], want[outcome])
		}
	}
	if rest, wantRest := got["not_placed"]+got["unknown"], want["not_placed"]+want["unknown"]+interrupted; rest != wantRest {
		t.Errorf("not placed + unknown = %d (%d + %d); the Places answered %d (%d not placed, %d unknown, %d cut off by a restart)",
			rest, got["not_placed"], got["unknown"], wantRest, want["not_placed"], want["unknown"], interrupted)
	}
	// Every order the venue created for a key was answered placed at
	// least once (the other bots' orders are not Places).
	keyed := int64(0)
	for _, o := range r.Orders {
		if derived(o.ClientOrderID) {
			keyed++
		}
	}
	if got["placed"] < keyed || keyed == 0 {
		t.Errorf("%d placed; the venue created %d orders for keys", got["placed"], keyed)
	}

	// 429s: the client's count against the venue's ledger.
	venue429 := int64(0)
	for _, e := range r.Events {
		if e.Status == 429 {
			venue429++
		}
	}
	throttled := sums(rm, "tradewire.http.throttled", "")[""]
	if throttled != venue429 || venue429 == 0 {
		t.Errorf("tradewire.http.throttled = %d; the venue's ledger has %d answers 429 (want equal, and some)", throttled, venue429)
	}
	t.Logf("creates by outcome %v (Places: %v, %d cut off); 429s: %d counted, %d in the ledger; %d orders at the venue for keys",
		got, want, interrupted, throttled, venue429, keyed)
}
