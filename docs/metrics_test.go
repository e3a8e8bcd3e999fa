package docs

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/otlptranslator"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// documentedMetric is one row of a metrics table in docs/metrics.md.
type documentedMetric struct {
	name, instrument, kind, unit string
	line                         int
}

// backticked is a table cell that is one `code span`.
var backticked = regexp.MustCompile("^`([^`]+)`$")

// documentedMetrics returns the rows of docs/metrics.md's metric tables
// (| metric | OTel instrument | type | unit | labels | what it counts |)
// and the file's text.
func documentedMetrics(t *testing.T) ([]documentedMetric, string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	var out []documentedMetric
	for i, l := range strings.Split(string(data), "\n") {
		cells := strings.Split(strings.Trim(strings.TrimSpace(l), "|"), "|")
		if len(cells) != 6 {
			continue
		}
		for j := range cells {
			cells[j] = strings.TrimSpace(cells[j])
		}
		name, inst := backticked.FindStringSubmatch(cells[0]), backticked.FindStringSubmatch(cells[1])
		if name == nil || inst == nil {
			continue
		}
		out = append(out, documentedMetric{name: name[1], instrument: inst[1], kind: cells[2], unit: cells[3], line: i + 1})
	}
	if len(out) < 17 {
		t.Fatalf("docs/metrics.md: %d metrics found in its tables; the contract has 17", len(out))
	}
	return out, string(data)
}

// TestMetricsDocNamesAreTheExporters: each metric's Prometheus name in
// docs/metrics.md is the one the CLI's exporter (Prometheus conventions:
// units in names, _total on counters) makes of the OTel instrument, type
// and unit on its row.
func TestMetricsDocNamesAreTheExporters(t *testing.T) {
	docs, _ := documentedMetrics(t)
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithTranslationStrategy(otlptranslator.UnderscoreEscapingWithSuffixes))
	if err != nil {
		t.Fatal(err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
	defer mp.Shutdown(context.Background())
	m := mp.Meter("docs")
	ctx := context.Background()
	want := map[string]documentedMetric{}
	for _, d := range docs {
		unit := metric.WithUnit(d.unit)
		var err error
		switch d.kind {
		case "counter":
			var c metric.Int64Counter
			if c, err = m.Int64Counter(d.instrument, unit); err == nil {
				c.Add(ctx, 1)
			}
		case "histogram":
			var h metric.Float64Histogram
			if h, err = m.Float64Histogram(d.instrument, unit); err == nil {
				h.Record(ctx, 1)
			}
		case "gauge":
			var g metric.Float64Gauge
			if g, err = m.Float64Gauge(d.instrument, unit); err == nil {
				g.Record(ctx, 1)
			}
		default:
			t.Errorf("docs/metrics.md:%d: type %q: want counter, histogram or gauge", d.line, d.kind)
			continue
		}
		if err != nil {
			t.Fatalf("docs/metrics.md:%d: %s: %v", d.line, d.instrument, err)
		}
		want[d.name] = d
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, f := range families {
		got[f.GetName()] = true
	}
	for name, d := range want {
		if !got[name] {
			t.Errorf("docs/metrics.md:%d: %s (%s, %s) is exported under another name; the exporter's names: %v", d.line, name, d.instrument, d.unit, sortedKeys(got))
		}
	}
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// promQLNoise is what of a PromQL expression names no metric: label
// matchers, grouping clauses, strings and ranges.
var promQLNoise = regexp.MustCompile(`\{[^}]*\}|\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)|"[^"]*"|\[[^\]]*\]`)

var promQLName = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*(\s*\()?`)

// promQLMetrics returns the metric names an expression reads.
func promQLMetrics(expr string) []string {
	var out []string
	for _, tok := range promQLName.FindAllString(promQLNoise.ReplaceAllString(expr, " "), -1) {
		if strings.HasSuffix(tok, "(") { // a function
			continue
		}
		switch tok {
		case "and", "or", "unless", "bool", "offset":
			continue
		}
		out = append(out, tok)
	}
	return out
}

// TestDashboardMetricsAreDocumented: docs/dashboard.json parses as a
// Grafana dashboard with a Prometheus data source variable, every metric
// its panels' expressions read is listed in docs/metrics.md (a
// histogram's _bucket, _sum and _count series by its name), and every
// metric listed has a panel.
func TestDashboardMetricsAreDocumented(t *testing.T) {
	docs, text := documentedMetrics(t)
	series := map[string]string{} // a series name → its documented metric
	for _, d := range docs {
		series[d.name] = d.name
		if d.kind == "histogram" {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				series[d.name+s] = d.name
			}
		}
	}
	if strings.Contains(text, "`target_info") {
		series["target_info"] = "target_info"
	}

	data, err := os.ReadFile(filepath.Join(root, "docs", "dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	type target struct {
		Expr string `json:"expr"`
	}
	type panel struct {
		Title   string   `json:"title"`
		Type    string   `json:"type"`
		Targets []target `json:"targets"`
		Panels  []panel  `json:"panels"`
	}
	var dash struct {
		Title      string  `json:"title"`
		Panels     []panel `json:"panels"`
		Templating struct {
			List []struct {
				Name, Type string
				Query      any `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	if err := dec.Decode(&dash); err != nil {
		t.Fatalf("docs/dashboard.json: %v", err)
	}
	if dash.Title == "" || len(dash.Panels) == 0 {
		t.Fatalf("docs/dashboard.json: no title or no panels")
	}
	hasDS := slices.ContainsFunc(dash.Templating.List, func(v struct {
		Name, Type string
		Query      any `json:"query"`
	}) bool {
		return v.Type == "datasource" && v.Query == "prometheus"
	})
	if !hasDS {
		t.Errorf("docs/dashboard.json: no Prometheus data source variable")
	}

	used := map[string]bool{}
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			walk(p.Panels)
			if p.Type != "row" && len(p.Targets) == 0 {
				t.Errorf("docs/dashboard.json: panel %q has no query", p.Title)
			}
			for _, tg := range p.Targets {
				names := promQLMetrics(tg.Expr)
				if len(names) == 0 {
					t.Errorf("docs/dashboard.json: panel %q: %q reads no metric", p.Title, tg.Expr)
				}
				for _, n := range names {
					d, ok := series[n]
					if !ok {
						t.Errorf("docs/dashboard.json: panel %q reads %s, which docs/metrics.md does not list", p.Title, n)
					}
					used[d] = true
				}
			}
		}
	}
	walk(dash.Panels)
	for _, d := range docs {
		if !used[d.name] {
			t.Errorf("docs/metrics.md:%d: %s has no panel in docs/dashboard.json", d.line, d.name)
		}
	}
}

func TestPromQLMetrics(t *testing.T) {
	for expr, want := range map[string][]string{
		`histogram_quantile(0.99, sum by (le, url_template) (rate(http_client_request_duration_seconds_bucket{instance=~"$instance"}[$__rate_interval])))`: {"http_client_request_duration_seconds_bucket"},
		`sum(rate(a_sum[5m])) / sum(rate(a_count[5m]))`:  {"a_sum", "a_count"},
		`abs(tradewire_venue_clock_offset_seconds) > 2`:  {"tradewire_venue_clock_offset_seconds"},
		`tradewire_x_total{tradewire_outcome="unknown"}`: {"tradewire_x_total"},
	} {
		if got := promQLMetrics(expr); !slices.Equal(got, want) {
			t.Errorf("promQLMetrics(%s) = %v, want %v", expr, got, want)
		}
	}
}

// TestMetricsDocAlertsReadDocumentedMetrics: every PromQL expression of
// docs/metrics.md's alert table reads only metrics the page lists.
func TestMetricsDocAlertsReadDocumentedMetrics(t *testing.T) {
	docs, text := documentedMetrics(t)
	series := map[string]bool{}
	for _, d := range docs {
		series[d.name] = true
		if d.kind == "histogram" {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				series[d.name+s] = true
			}
		}
	}
	n := 0
	for i, l := range strings.Split(text, "\n") {
		cells := strings.Split(strings.Trim(strings.TrimSpace(l), "|"), "|")
		if len(cells) != 3 {
			continue
		}
		m := regexp.MustCompile("^`([^`]+)`").FindStringSubmatch(strings.TrimSpace(cells[1]))
		if m == nil {
			continue
		}
		n++
		for _, name := range promQLMetrics(m[1]) {
			if !series[name] {
				t.Errorf("docs/metrics.md:%d: %q reads %s, which the page does not list", i+1, m[1], name)
			}
		}
	}
	if n < 5 {
		t.Fatalf("docs/metrics.md: %d alert expressions found", n)
	}
}
