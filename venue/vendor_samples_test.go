package venue_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tradewire/tradewire/venue"
)

// The vendor's official Python samples, extracted verbatim from the spec
// into testdata/vendor_samples (see the README there), run unchanged but
// for their API key, private key and base URL against the venue served
// over HTTP, with the stand-ins for PyNaCl and requests in
// testdata/python.

const samplesDir = "testdata/vendor_samples"

// pythonBlocks returns the ```python blocks of a Markdown text, in order.
func pythonBlocks(md string) []string {
	parts := strings.Split(md, "```python\n")
	var out []string
	for _, p := range parts[1:] {
		if i := strings.Index(p, "```"); i >= 0 {
			out = append(out, p[:i])
		}
	}
	return out
}

// TestVendorSamplesVerbatim checks that the samples in testdata are the
// spec's, byte for byte.
func TestVendorSamplesVerbatim(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "openapi", "crypto-trading.openapi.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Info struct {
			Description string `json:"description"`
		} `json:"info"`
		Components struct {
			SecuritySchemes map[string]struct {
				Description string `json:"description"`
			} `json:"securitySchemes"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	intro := pythonBlocks(doc.Info.Description)
	sig := pythonBlocks(doc.Components.SecuritySchemes["API Signature"].Description)
	if len(intro) != 3 || len(sig) != 1 {
		t.Fatalf("the spec has %d python blocks in info.description (want 3) and %d in API Signature (want 1)", len(intro), len(sig))
	}
	for file, want := range map[string]string{
		"robinhood_api_trading.py":    intro[1],
		"robinhood_api_trading_v2.py": intro[2],
		"signature_example.py":        sig[0],
	} {
		got, err := os.ReadFile(filepath.Join(samplesDir, file))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want {
			t.Errorf("%s is not the spec's sample", file)
		}
	}
}

// python3 returns the interpreter, or skips: but under CI=true a missing
// python3 fails the test (.ci/run installs it).
func python3(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("python3")
	if err == nil {
		err = exec.Command(p, "-c", "import sys; sys.exit(sys.version_info < (3, 8))").Run()
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("python3 (3.8 or later) is needed under CI: %v", err)
		}
		t.Skipf("no python3 (3.8 or later): %v", err)
	}
	return p
}

// runPython runs a script with the stand-ins first on PYTHONPATH, in dir.
func runPython(t *testing.T, py, dir string, args ...string) []byte {
	t.Helper()
	shims, err := filepath.Abs("testdata/python")
	if err != nil {
		t.Fatal(err)
	}
	// A bound on a hung interpreter, not a wait: the run takes about a second.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, append([]string{"-B", "-s"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PYTHONPATH="+shims, "PYTHONDONTWRITEBYTECODE=1", "PYTHONNOUSERSITE=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python3 %v: %v\nstdout %s\nstderr %s", args, err, out, stderr.Bytes())
	}
	return out
}

// fillIn writes the sample with its key, private key and base URL set,
// checking that nothing else of it changes.
func fillIn(t *testing.T, file, dir string, srv *testServer) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(samplesDir, file))
	if err != nil {
		t.Fatal(err)
	}
	text := string(src)
	for _, r := range [][2]string{
		{`API_KEY = "ADD YOUR API KEY HERE"`, `API_KEY = "` + srv.APIKey + `"`},
		{`BASE64_PRIVATE_KEY = "ADD YOUR PRIVATE KEY HERE"`, `BASE64_PRIVATE_KEY = "` + srv.PrivateKeyBase64 + `"`},
		{`self.base_url = "https://trading.robinhood.com"`, `self.base_url = "` + srv.URL + `"`},
	} {
		if strings.Count(text, r[0]) != 1 {
			t.Fatalf("%s: %q is not there exactly once", file, r[0])
		}
		text = strings.Replace(text, r[0], r[1], 1)
	}
	a, b := strings.Split(string(src), "\n"), strings.Split(text, "\n")
	changed := 0
	for i := range a {
		if a[i] != b[i] {
			changed++
		}
	}
	if len(a) != len(b) || changed != 3 {
		t.Fatalf("%s: %d lines changed, want 3", file, changed)
	}
	out := filepath.Join(dir, file)
	if err := os.WriteFile(out, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return out
}

type sampleCall struct {
	Call   string `json:"call"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
	Done   *int   `json:"done"`
	Module string `json:"requests_module"`
}

// TestVendorSamples runs the vendor's v1 and v2 Python samples against the
// venue over loopback HTTP: every call of each succeeds (bar one call of
// the v1 sample, which fails in the sample itself, see below), signed as
// the venue checks it, and the venue saw each request.
func TestVendorSamples(t *testing.T) {
	py := python3(t)
	dir := t.TempDir()

	// The stand-in signer reproduces the vendor's own example signature.
	out := runPython(t, py, dir, filepath.Join(mustAbs(t, samplesDir), "signature_example.py"))
	if got := strings.TrimSpace(string(out)); got != "q/nEtxp/P2Or3hph3KejBqnw5o9qeuQ+hYRnB56FaHbjDsNUY9KhB1asMxohDnzdVFSD7StaTqjSd9U9HvaRAw==" {
		t.Fatalf("the signature example prints %q, not the documented header", got)
	}

	// The samples read the real clock; so does this venue. Page size 2
	// makes the v2 sample follow next links.
	srv := newLoopbackServer(venue.Config{Seed: 3, History: 8, PageSize: 2})
	defer srv.Close()
	for _, tc := range []struct {
		version, file string
		calls         []string
		requests      int // requests the calls send
		failing       map[string]string
	}{
		{version: "v1", file: "robinhood_api_trading.py",
			calls: []string{"main", "get_account", "get_trading_pairs", "get_trading_pairs(BTC-USD, ETH-USD)",
				"get_holdings", "get_holdings(BTC, ETH)", "get_best_bid_ask", "get_best_bid_ask(BTC-USD)",
				"get_estimated_price", "place_order(market)", "place_order(limit)", "get_order", "get_orders",
				"cancel_order", "cancel_order(signed by the sample, no body)"},
			requests: 14, // one each, but cancel_order, which sends none
			// The v1 sample's make_api_request posts json=json.loads(body),
			// and cancel_order passes no body: json.loads("") raises before
			// anything is sent, against any venue. The call after it sends
			// the same cancel, signed by the sample's own code, unmodified.
			failing: map[string]string{"cancel_order": "JSONDecodeError: "}},
		{version: "v2", file: "robinhood_api_trading_v2.py",
			calls: []string{"main", "get_accounts", "get_trading_pairs", "get_trading_pairs(BTC-USD, ETH-USD)",
				"get_holdings", "get_holdings(BTC, ETH)", "get_best_bid_ask(BTC-USD)", "get_best_bid_ask(BTC-USD, ETH-USD)",
				"get_estimated_price", "place_order(market)", "place_order(limit)", "get_order", "get_orders", "cancel_order"},
			// One each, but 21 pages (the catalogue's 42 pairs at 2 a page)
			// for each full get_trading_pairs (main's too).
			requests: 12 + 2*21},
	} {
		t.Run(tc.version, func(t *testing.T) {
			before := len(srv.Ledger().Requests())
			script := fillIn(t, tc.file, dir, srv)
			out := runPython(t, py, dir, filepath.Join(mustAbs(t, samplesDir), "drive.py"), tc.version, script)
			var got []string
			done := false
			sc := bufio.NewScanner(bytes.NewReader(out))
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				var c sampleCall
				if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
					t.Fatalf("driver printed %q: %v", sc.Text(), err)
				}
				if c.Done != nil {
					done = true
					if *c.Done != len(got) || !strings.HasPrefix(c.Module, mustAbs(t, "testdata/python")) {
						t.Errorf("driver: %d calls, requests from %s", *c.Done, c.Module)
					}
					continue
				}
				got = append(got, c.Call)
				switch want, failing := tc.failing[c.Call]; {
				case failing && (c.OK || !strings.HasPrefix(c.Detail, want)):
					t.Errorf("%s: ok %v, %s; want the sample's own failure %q", c.Call, c.OK, c.Detail, want)
				case !failing && !c.OK:
					t.Errorf("%s failed: %s", c.Call, c.Detail)
				}
			}
			if !done || strings.Join(got, "|") != strings.Join(tc.calls, "|") {
				t.Fatalf("calls %q, want %q (done %v)", got, tc.calls, done)
			}
			reqs := srv.Ledger().Requests()[before:]
			if len(reqs) != tc.requests {
				t.Errorf("venue saw %d requests, want %d", len(reqs), tc.requests)
			}
			for _, r := range reqs {
				if !r.SignatureValid || r.Status/100 != 2 || !strings.HasPrefix(r.Target, "/api/"+tc.version+"/") {
					t.Errorf("venue: %s %s signature %v status %d", r.Method, r.Target, r.SignatureValid, r.Status)
				}
			}
			t.Logf("%s sample: %d calls, %d requests, all 2xx", tc.version, len(got), len(reqs))
		})
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
