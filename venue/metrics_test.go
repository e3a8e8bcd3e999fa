package venue_test

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/tradewire/tradewire/venue"
)

// serveSigned serves one request signed with v's credentials in memory
// and returns the status answered.
func serveSigned(t *testing.T, v *venue.Venue, method, target, body string) int {
	t.Helper()
	cfg := v.Config()
	ts := strconv.FormatInt(cfg.Clock.Now().Unix(), 10)
	r := httptest.NewRequest(method, "https://venue.test"+target, strings.NewReader(body))
	r.RequestURI = target
	r.Header.Set("x-api-key", cfg.APIKey)
	r.Header.Set("x-timestamp", ts)
	r.Header.Set("x-signature", base64.StdEncoding.EncodeToString(ed25519.Sign(cfg.PrivateKey, []byte(cfg.APIKey+ts+target+method+body))))
	w := httptest.NewRecorder()
	v.ServeHTTP(w, r)
	return w.Code
}

// collected is one collection of the venue's metrics: each counter's
// points by their attributes, and the orders gauge by state.
type collected struct {
	requests  map[attribute.Distinct]int64
	reqAttrs  map[attribute.Distinct]attribute.Set
	throttled map[string]int64
	orders    map[string]int64
}

func collectVenue(t *testing.T, r *sdkmetric.ManualReader) collected {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	c := collected{requests: map[attribute.Distinct]int64{}, reqAttrs: map[attribute.Distinct]attribute.Set{},
		throttled: map[string]int64{}, orders: map[string]int64{}}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch data := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range data.DataPoints {
					switch m.Name {
					case "tradewire.venue.requests":
						c.requests[p.Attributes.Equivalent()] += p.Value
						c.reqAttrs[p.Attributes.Equivalent()] = p.Attributes
					case "tradewire.venue.throttled":
						class, _ := p.Attributes.Value("tradewire.endpoint_class")
						c.throttled[class.AsString()] += p.Value
					}
				}
			case metricdata.Gauge[int64]:
				for _, p := range data.DataPoints {
					state, _ := p.Attributes.Value("tradewire.order_state")
					c.orders[state.AsString()] += p.Value
				}
			}
		}
	}
	return c
}

// TestMetricsMatchLedger: the venue's request and 429 counts equal its
// Ledger's, by status and endpoint class, and its orders gauge counts the
// orders it created, by the state an order read shows.
func TestMetricsMatchLedger(t *testing.T) {
	t.Parallel()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	clk := clockwork.NewFakeClockAt(time.Date(2026, 8, 20, 12, 0, 0, 0, time.UTC))
	v, err := venue.New(venue.Config{Clock: clk, Seed: 3, MeterProvider: mp,
		RateLimits: venue.RateLimits{Account: venue.RateLimit{PerMinute: 1, Burst: 4}}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := v.Config()
	ordersPath := "/api/v2/crypto/trading/orders/?account_number=" + cfg.AccountNumber
	steps := []struct {
		method, target, body string
		want                 int
	}{
		{"POST", ordersPath, `{"client_order_id":"0f8c3a52-4c1e-4c6e-9d0a-3f1b2c3d4e5f","side":"buy","type":"market","symbol":"BTC-USD","market_order_config":{"asset_quantity":"0.001"}}`, 201},
		{"GET", "/api/v2/crypto/trading/accounts/", "", 200},
		{"GET", "/api/v2/crypto/marketdata/best_bid_ask/?symbol=BTC-USD", "", 200},
		{"GET", "/api/v2/crypto/trading/accounts/", "", 200},
		{"GET", "/api/v2/crypto/trading/accounts/", "", 429},
		{"GET", "/api/v2/crypto/marketdata/best_bid_ask/?symbol=BTC-USD", "", 429},
	}
	for _, s := range steps {
		if got := serveSigned(t, v, s.method, s.target, s.body); got != s.want {
			t.Fatalf("%s %s: status %d, want %d", s.method, s.target, got, s.want)
		}
	}
	c := collectVenue(t, reader)
	counts := v.Ledger().Counts()

	var total int64
	byStatus := map[int]int{}
	byClassStatus := map[[2]string]int64{}
	for k, n := range c.requests {
		set := c.reqAttrs[k]
		code, _ := set.Value("http.response.status_code")
		class, _ := set.Value("tradewire.endpoint_class")
		total += n
		byStatus[int(code.AsInt64())] += int(n)
		byClassStatus[[2]string{class.AsString(), strconv.Itoa(int(code.AsInt64()))}] += n
	}
	if total != int64(counts.Total) || total != int64(len(steps)) {
		t.Errorf("tradewire.venue.requests sums to %d; the ledger counts %d, %d sent", total, counts.Total, len(steps))
	}
	for code, n := range counts.ByStatus {
		if byStatus[code] != n {
			t.Errorf("status %d: metric %d, ledger %d", code, byStatus[code], n)
		}
	}
	for k, want := range map[[2]string]int64{
		{"order_writes", "201"}: 1, {"account_reads", "200"}: 2, {"account_reads", "429"}: 1,
		{"market_data", "200"}: 1, {"market_data", "429"}: 1,
	} {
		if byClassStatus[k] != want {
			t.Errorf("requests %v = %d, want %d (all: %v)", k, byClassStatus[k], want, byClassStatus)
		}
	}
	var throttled int64
	for _, n := range c.throttled {
		throttled += n
	}
	if throttled != int64(counts.Throttled) || c.throttled["account_reads"] != 1 || c.throttled["market_data"] != 1 {
		t.Errorf("tradewire.venue.throttled = %v; the ledger counts %d 429s", c.throttled, counts.Throttled)
	}

	created := v.Ledger().Orders()
	if len(created) != 1 {
		t.Fatalf("ledger holds %d orders, want 1", len(created))
	}
	state := orderState(t, v, clk, created[0].ID)
	c = collectVenue(t, reader)
	var held int64
	for _, n := range c.orders {
		held += n
	}
	if held != 1 || c.orders[state] != 1 {
		t.Errorf("tradewire.venue.orders = %v, want the one order in its state", c.orders)
	}
}

// orderState reads order id's state from v through its API, a minute on.
func orderState(t *testing.T, v *venue.Venue, clk *clockwork.FakeClock, id string) string {
	t.Helper()
	clk.Advance(time.Minute) // a token for the read
	cfg := v.Config()
	ts := strconv.FormatInt(cfg.Clock.Now().Unix(), 10)
	target := "/api/v2/crypto/trading/orders/" + id + "/?account_number=" + cfg.AccountNumber
	r := httptest.NewRequest("GET", "https://venue.test"+target, nil)
	r.RequestURI = target
	r.Header.Set("x-api-key", cfg.APIKey)
	r.Header.Set("x-timestamp", ts)
	r.Header.Set("x-signature", base64.StdEncoding.EncodeToString(ed25519.Sign(cfg.PrivateKey, []byte(cfg.APIKey+ts+target+"GET"))))
	w := httptest.NewRecorder()
	v.ServeHTTP(w, r)
	if w.Code != http.StatusOK {
		t.Fatalf("GET order: %d %s", w.Code, w.Body)
	}
	body := w.Body.String()
	i := strings.Index(body, `"state":"`)
	if i < 0 {
		t.Fatalf("GET order: no state in %s", body)
	}
	rest := body[i+len(`"state":"`):]
	return rest[:strings.IndexByte(rest, '"')]
}
