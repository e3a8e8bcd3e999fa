package cli

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tradewire/tradewire/broker/brokertest"
	"github.com/tradewire/tradewire/signing"
	"github.com/tradewire/tradewire/transport"
	"github.com/tradewire/tradewire/venue"
)

// sample is one line of Prometheus text: a metric, its labels, its value.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

var labelRE = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)

// scrape GETs url and returns the body, the metric families its # TYPE
// lines name, and its samples.
func scrape(t *testing.T, url string) (body string, families map[string]bool, samples []sample) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	body, families = string(b), map[string]bool{}
	for _, line := range strings.Split(body, "\n") {
		if f := strings.Fields(line); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			families[f[2]] = true
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("scrape line %q: %v", line, err)
		}
		s := sample{name: line[:i], labels: map[string]string{}, value: v}
		if j := strings.IndexByte(s.name, '{'); j >= 0 {
			for _, m := range labelRE.FindAllStringSubmatch(s.name[j:], -1) {
				s.labels[m[1]] = m[2]
			}
			s.name = s.name[:j]
		}
		samples = append(samples, s)
	}
	return body, families, samples
}

var metricsLineRE = regexp.MustCompile(`metrics at (http://\S+/metrics)`)

// awaitMetricsURL waits for the command writing to stderr to print where
// it serves its metrics, or to end (done).
func awaitMetricsURL(t *testing.T, stderr *lineWriter, done <-chan int) string {
	t.Helper()
	for {
		if m := metricsLineRE.FindStringSubmatch(stderr.String()); m != nil {
			return m[1]
		}
		select {
		case <-stderr.wrote:
		case code := <-done:
			t.Fatalf("ended with exit %d before serving metrics: %s", code, stderr.String())
		}
	}
}

// signatureRecorder passes requests on to net/http's default transport
// and keeps every x-signature sent.
type signatureRecorder struct {
	mu   sync.Mutex
	sigs []string
}

func (s *signatureRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	s.mu.Lock()
	if sig := r.Header.Get("x-signature"); sig != "" {
		s.sigs = append(s.sigs, sig)
	}
	s.mu.Unlock()
	return http.DefaultTransport.RoundTrip(r)
}

func (s *signatureRecorder) signatures() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.sigs...)
}

// watchMetricFamilies are the families a watch's /metrics must show: the
// exporter's target_info, and the client's instruments (docs/metrics.md)
// recorded by the end of the watch's first poll; a counter shows only
// once counted.
var watchMetricFamilies = []string{"target_info", "http_client_request_duration_seconds",
	"tradewire_budget_tokens", "tradewire_venue_clock_offset_seconds",
	"tradewire_watch_lag_seconds", "tradewire_intents_open"}

// TestWatch_MetricsAddrServesAndHoldsNoSecret runs watch with
// credentials set and --metrics-addr, scrapes /metrics while it polls,
// finds the expected families and none of the API key, the private key
// or a signature sent, and finds the endpoint gone once watch stops.
func TestWatch_MetricsAddrServesAndHoldsNoSecret(t *testing.T) {
	t.Parallel()
	clk := venue.NewClock(time.Date(2026, 8, 20, 18, 0, 0, 0, time.UTC))
	srv := brokertest.NewServer(venue.Config{Seed: simSeed, Clock: clk})
	t.Cleanup(srv.Close)
	env := map[string]string{envBaseURL: srv.URL, envAPIKey: srv.APIKey, envPrivateKey: srv.PrivateKeyBase64,
		envStore: filepath.Join(t.TempDir(), "intents.db")}
	rec := &signatureRecorder{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr := &lineWriter{wrote: make(chan struct{}, 1)}
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, []string{"watch", "--metrics-addr", "127.0.0.1:0", "-o", "json"}, Options{
			Getenv: func(k string) string { return env[k] }, Clock: clk, Stderr: stderr,
			TransportConfig: transport.Config{RoundTripper: rec}})
	}()
	url := awaitMetricsURL(t, stderr, done)
	// Scrape once the watch has read the orders list (signed requests
	// sent) and waits on the clock for its next poll: its first poll is
	// complete and recorded.
	if _, err := srv.Ledger().AwaitRequests(ctx, 0, func(r venue.Request) bool {
		return r.Method == http.MethodGet && strings.HasPrefix(r.Target, "/api/v2/crypto/trading/orders/") && r.Status == http.StatusOK
	}); err != nil {
		t.Fatal(err)
	}
	if err := clk.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal(err)
	}
	body, families, samples := scrape(t, url)

	for _, f := range watchMetricFamilies {
		if !families[f] {
			t.Errorf("/metrics has no family %s; it has %v", f, families)
		}
	}
	for _, s := range samples {
		if s.name == "target_info" && s.labels["service_name"] != "tradewire" {
			t.Errorf("target_info %v: want service_name tradewire", s.labels)
		}
		if strings.HasPrefix(s.name, "tradewire_") || strings.HasPrefix(s.name, "http_client_") {
			if s.labels["otel_scope_name"] == "" {
				t.Errorf("%s %v: no otel_scope_name", s.name, s.labels)
			}
		}
	}
	sigs := rec.signatures()
	if len(sigs) == 0 {
		t.Fatal("no signed request went through the recorder: the check below would prove nothing")
	}
	secrets := append([]string{srv.APIKey, srv.PrivateKeyBase64, strings.TrimRight(srv.PrivateKeyBase64, "=")}, sigs...)
	for _, s := range secrets {
		if strings.Contains(body, s) {
			t.Errorf("/metrics holds a secret %.12s…", s)
		}
	}

	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("watch stopped with exit %d, want 0; stderr %s", code, stderr.String())
	}
	if resp, err := http.Get(url); err == nil {
		resp.Body.Close()
		t.Errorf("GET %s after the watch stopped: %s; want the server gone", url, resp.Status)
	}
}

// TestMetricsAddr_UsageErrors: a --metrics-addr that is not HOST:PORT,
// or that cannot be listened on, is a usage error (exit 2) before
// anything is sent.
func TestMetricsAddr_UsageErrors(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	for _, addr := range []string{"nope", "127.0.0.1", "127.0.0.1:", "127.0.0.1:99999", "127.0.0.1:http-alt", busy.Addr().String()} {
		for _, cmd := range [][]string{{"watch"}, {"sim", "serve", "--addr", "127.0.0.1:0"}} {
			rt := &countingRoundTripper{}
			args := append(append([]string{}, cmd...), "--metrics-addr", addr)
			r := runWith(t, Options{Getenv: func(k string) string {
				return map[string]string{envAPIKey: testAPIKey, envPrivateKey: testSeedB64}[k]
			}, TransportConfig: transport.Config{RoundTripper: rt}}, args...)
			if r.code != 2 || rt.count() != 0 || !strings.Contains(r.stderr, "--metrics-addr") || r.stdout != "" {
				t.Errorf("%v: exit %d after %d requests, stdout %q, stderr %q; want 2 naming --metrics-addr, nothing sent or printed",
					args, r.code, rt.count(), r.stdout, r.stderr)
			}
		}
	}
}

var summaryRE = regexp.MustCompile(`stopped; (\d+) requests \(([^)]*)\), \d+ answered 401, (\d+) answered 429`)

// TestSimServe_MetricsMatchLedger: sim serve --metrics-addr counts its
// requests and 429s on /metrics as its ledger does (the summary it prints
// at stop) and as the client saw them, and shows its orders by state.
func TestSimServe_MetricsMatchLedger(t *testing.T) {
	t.Parallel()
	limits := filepath.Join(t.TempDir(), "limits.json")
	if err := os.WriteFile(limits, []byte(`{"account": {"per_minute": 1, "burst": 3}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	t.Cleanup(func() { pr.Close() })
	stderr := &lineWriter{wrote: make(chan struct{}, 1)}
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, []string{"sim", "serve", "--addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0", "--rate-limits", limits},
			Options{Stdout: pw, Stderr: stderr})
		pw.Close()
	}()
	env := map[string]string{}
	sc := bufio.NewScanner(pr)
	for len(env) < 3 && sc.Scan() {
		if name, value, ok := strings.Cut(strings.TrimPrefix(sc.Text(), "export "), "="); ok {
			env[name] = unquoteShell(t, value)
		}
	}
	if len(env) < 3 {
		t.Fatalf("sim serve exported %v; stderr %s", env, stderr.String())
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	url := awaitMetricsURL(t, stderr, done)

	key, err := signing.ParsePrivateKey(env[envPrivateKey])
	if err != nil {
		t.Fatal(err)
	}
	signer, err := signing.New(env[envAPIKey], key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := transport.New(env[envBaseURL], signer, transport.Config{RatePerMinute: -1, Retry: &transport.RetryPolicy{}})
	if err != nil {
		t.Fatal(err)
	}
	sent, throttled := 0, 0
	for _, target := range []string{"/api/v2/crypto/trading/accounts/", "/api/v2/crypto/marketdata/best_bid_ask/?symbol=BTC-USD",
		"/api/v2/crypto/trading/accounts/", "/api/v2/crypto/trading/accounts/", "/api/v2/crypto/marketdata/best_bid_ask/?symbol=BTC-USD"} {
		_, err := c.Get(ctx, target)
		sent++
		var se *transport.StatusError
		switch {
		case err == nil:
		case errors.As(err, &se) && se.StatusCode == http.StatusTooManyRequests:
			throttled++
		default:
			t.Fatalf("GET %s: %v", target, err)
		}
	}
	if throttled != 2 {
		t.Fatalf("%d of %d requests answered 429, want 2 (burst 3)", throttled, sent)
	}

	_, families, samples := scrape(t, url)
	for _, f := range []string{"tradewire_venue_requests_total", "tradewire_venue_throttled_total", "tradewire_venue_orders"} {
		if !families[f] {
			t.Errorf("/metrics has no family %s; it has %v", f, families)
		}
	}
	var requests, throttledMetric, orders float64
	byStatus := map[string]float64{}
	for _, s := range samples {
		switch s.name {
		case "tradewire_venue_requests_total":
			requests += s.value
			byStatus[s.labels["http_response_status_code"]] += s.value
			if s.labels["tradewire_endpoint_class"] == "" {
				t.Errorf("%s %v: no endpoint class", s.name, s.labels)
			}
		case "tradewire_venue_throttled_total":
			throttledMetric += s.value
		case "tradewire_venue_orders":
			orders += s.value
		}
	}
	if requests != float64(sent) || throttledMetric != float64(throttled) || byStatus["429"] != float64(throttled) || byStatus["200"] != float64(sent-throttled) {
		t.Errorf("/metrics counts %v requests (%v), %v throttled; the client sent %d, %d answered 429", requests, byStatus, throttledMetric, sent, throttled)
	}
	if orders == 0 {
		t.Errorf("tradewire_venue_orders sums to 0; the venue holds a seeded history")
	}

	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("sim serve stopped with exit %d; stderr %s", code, stderr.String())
	}
	m := summaryRE.FindStringSubmatch(stderr.String())
	if m == nil {
		t.Fatalf("no ledger summary in %s", stderr.String())
	}
	if total, _ := strconv.Atoi(m[1]); float64(total) != requests {
		t.Errorf("ledger: %s requests; /metrics: %v", m[1], requests)
	}
	if n, _ := strconv.Atoi(m[3]); float64(n) != throttledMetric {
		t.Errorf("ledger: %s answered 429; /metrics: %v", m[3], throttledMetric)
	}
	for _, part := range strings.Split(m[2], ", ") {
		code, n, _ := strings.Cut(part, " ×")
		if want, _ := strconv.Atoi(n); byStatus[code] != float64(want) {
			t.Errorf("ledger: status %s ×%d; /metrics: %v", code, want, byStatus[code])
		}
	}
	if resp, err := http.Get(url); err == nil {
		resp.Body.Close()
		t.Errorf("GET %s after sim serve stopped: %s; want the server gone", url, resp.Status)
	}
}
