package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tradewire/tradewire/signing"
	"github.com/tradewire/tradewire/transport"
)

// unquoteShell reads what shellQuote wrote: single-quoted runs and
// backslash-escaped single quotes.
func unquoteShell(t *testing.T, s string) string {
	t.Helper()
	var b strings.Builder
	for len(s) > 0 {
		switch {
		case strings.HasPrefix(s, `\'`):
			b.WriteByte('\'')
			s = s[2:]
		case s[0] == '\'':
			end := strings.IndexByte(s[1:], '\'')
			if end < 0 {
				t.Fatalf("unterminated quote in %q", s)
			}
			b.WriteString(s[1 : 1+end])
			s = s[2+end:]
		default:
			t.Fatalf("unquoted text in %q", s)
		}
	}
	return b.String()
}

func TestShellQuote(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "plain", "a b", "it's", "'", "$HOME `x` \"y\"", "ab+/c=="} {
		q := shellQuote(s)
		if !strings.HasPrefix(q, "'") || !strings.HasSuffix(q, "'") {
			t.Errorf("shellQuote(%q) = %s: not single-quoted", s, q)
		}
		if got := unquoteShell(t, q); got != s {
			t.Errorf("shellQuote(%q) = %s, which a shell reads as %q", s, q, got)
		}
	}
}

// serveResult is what a "sim serve" run returned.
type serveResult struct {
	code   int
	stderr string
}

// startSimServe runs "sim serve" with args until the returned cancel is
// called, and returns the variables it exported.
func startSimServe(t *testing.T, args ...string) (env map[string]string, header string, cancel func() serveResult) {
	t.Helper()
	return startSimServeWith(t, Options{}, args...)
}

// startSimServeWith is startSimServe with opts, whose Stdout and Stderr
// it sets.
func startSimServeWith(t *testing.T, opts Options, args ...string) (env map[string]string, header string, cancel func() serveResult) {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		opts.Stdout, opts.Stderr = pw, &stderr
		done <- Run(ctx, append([]string{"sim", "serve"}, args...), opts)
		pw.Close()
	}()
	finish := func() serveResult {
		stop()
		code := <-done
		return serveResult{code: code, stderr: stderr.String()}
	}
	t.Cleanup(func() {
		pr.Close()
		stop()
	})

	want := 3
	if slices.Contains(args, "--tls") {
		want = 4 // and SSL_CERT_FILE
	}
	env = map[string]string{}
	sc := bufio.NewScanner(pr)
	for len(env) < want && sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			header = line
			continue
		}
		name, value, ok := strings.Cut(strings.TrimPrefix(line, "export "), "=")
		if !ok || !strings.HasPrefix(line, "export ") {
			t.Fatalf("line %q is not export NAME=VALUE", line)
		}
		env[name] = unquoteShell(t, value)
	}
	if len(env) < want {
		r := finish()
		t.Fatalf("sim serve exported %v, then exit %d, stderr %q", env, r.code, r.stderr)
	}
	return env, header, finish
}

func TestSimServe_ExportsWorkingCredentialsAndStopsOnCancel(t *testing.T) {
	t.Parallel()
	env, header, stop := startSimServe(t, "--addr", "127.0.0.1:0", "--seed", "3")

	if !strings.Contains(header, "simulated venue demo credentials") {
		t.Errorf("first line %q does not say the credentials are the simulator's", header)
	}
	for _, name := range []string{envBaseURL, envAPIKey, envPrivateKey} {
		if env[name] == "" {
			t.Errorf("%s not exported", name)
		}
	}
	if !strings.HasPrefix(env[envBaseURL], "http://127.0.0.1:") || strings.HasSuffix(env[envBaseURL], ":0") {
		t.Errorf("%s = %q, want the loopback address actually listened on", envBaseURL, env[envBaseURL])
	}

	// A real client, built from nothing but the exported lines.
	key, err := signing.ParsePrivateKey(env[envPrivateKey])
	if err != nil {
		t.Fatal(err)
	}
	signer, err := signing.New(env[envAPIKey], key)
	if err != nil {
		t.Fatal(err)
	}
	client, err := transport.New(env[envBaseURL], signer, transport.Config{})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Get(context.Background(), "/api/v2/crypto/trading/accounts/")
	if err != nil {
		t.Fatalf("GET accounts: %v", err)
	}
	if !bytes.Contains(resp.Body, []byte(`"TW0000000001"`)) {
		t.Errorf("accounts = %s, want the demo account", resp.Body)
	}

	// The CLI itself, configured the way "eval" would configure it.
	r := runCLI(t, env, "", "api", "GET", "/api/v2/crypto/trading/orders/?account_number=TW0000000001")
	if r.code != 0 || !strings.Contains(r.stdout, `"results"`) {
		t.Errorf("tradewire api with the exported env: exit %d, stdout %.200q, stderr %q", r.code, r.stdout, r.stderr)
	}

	res := stop()
	if res.code != 0 {
		t.Errorf("after cancel: exit %d, stderr %q; want 0", res.code, res.stderr)
	}
	if !strings.Contains(res.stderr, "stopped") {
		t.Errorf("stderr %q does not say it stopped", res.stderr)
	}
}

func TestSimServe_PaginationLinksPointAtTheListener(t *testing.T) {
	t.Parallel()
	env, _, stop := startSimServe(t, "--addr", "127.0.0.1:0", "--page-size", "5")
	defer stop()
	r := runCLI(t, env, "", "api", "GET", "/api/v2/crypto/trading/orders/?account_number=TW0000000001")
	if r.code != 0 {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	var page struct {
		Next    string            `json:"next"`
		Results []json.RawMessage `json:"results"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &page); err != nil {
		t.Fatal(err)
	}
	if len(page.Results) != 5 || !strings.HasPrefix(page.Next, env[envBaseURL]+"/") {
		t.Fatalf("%d results, next %q: want 5 and a link on %s", len(page.Results), page.Next, env[envBaseURL])
	}
	// The CLI follows it: it is on the base URL's scheme and host.
	if r := runCLI(t, env, "", "api", "GET", page.Next); r.code != 0 {
		t.Errorf("following next: exit %d, stderr %q", r.code, r.stderr)
	}
}

func TestSimServe_FaultPlanIsInstalled(t *testing.T) {
	t.Parallel()
	plan := filepath.Join(t.TempDir(), "faults.json")
	const body = `{"faults":[{"kind":"respond","method":"GET","path":"/api/v2/crypto/trading/accounts/","times":2,"status":503}]}`
	if err := os.WriteFile(plan, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	env, _, stop := startSimServe(t, "--addr", "127.0.0.1:0", "--faults", plan)
	r := runCLI(t, env, "", "api", "GET", "/api/v2/crypto/trading/accounts/")
	if r.code != 0 {
		t.Errorf("exit %d, stderr %q: want the 503s ridden out", r.code, r.stderr)
	}
	res := stop()
	// Two injected 503s, then the answer.
	if res.code != 0 || !strings.Contains(res.stderr, "3 requests (200 ×1, 503 ×2)") {
		t.Errorf("exit %d, stderr %q: want 3 requests, two of them 503", res.code, res.stderr)
	}
}

// TestSimServe_RateLimitsAreInstalled: --rate-limits gives a class its own
// bucket, the others keep the account-wide one, and --retry-after
// overrides the file's retry_after.
func TestSimServe_RateLimitsAreInstalled(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "limits.json")
	const body = `{"classes":{"market_data":{"per_minute":1,"burst":2}},"retry_after":"bucket"}`
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		args       []string
		retryAfter time.Duration
	}{
		{"file's retry_after", nil, 60 * time.Second}, // 1 a minute, the bucket empty
		{"--retry-after over it", []string{"--retry-after", "5s"}, 5 * time.Second},
		{"--retry-after off", []string{"--retry-after", "off"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env, _, stop := startSimServe(t, append([]string{"--addr", "127.0.0.1:0", "--rate-limits", file}, tc.args...)...)
			defer stop()
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
			ctx := context.Background()
			const bba = "/api/v2/crypto/marketdata/best_bid_ask/?symbol=BTC-USD"
			for i := range 2 {
				if _, err := c.Get(ctx, bba); err != nil {
					t.Fatalf("market data %d of its burst 2: %v", i+1, err)
				}
			}
			_, err = c.Get(ctx, bba)
			var se *transport.StatusError
			if !errors.As(err, &se) || se.StatusCode != http.StatusTooManyRequests || se.RetryAfter != tc.retryAfter {
				t.Fatalf("third market data request: %v (%+v), want 429 with Retry-After %v", err, se, tc.retryAfter)
			}
			// Account reads share the account-wide 300, untouched.
			if _, err := c.Get(ctx, "/api/v2/crypto/trading/accounts/"); err != nil {
				t.Errorf("accounts after market data drained: %v", err)
			}
		})
	}
}

// TestSimServe_AccountState: --account-status and --read-only-key refuse
// the writes they name and leave reads working; a control venue takes them.
func TestSimServe_AccountState(t *testing.T) {
	t.Parallel()
	const buy = `{"client_order_id":"%s","side":"buy","type":"market","symbol":"BTC-USD","market_order_config":{"asset_quantity":"0.0001"}}`
	for _, tc := range []struct {
		name string
		args []string
		want string // in the create's stderr; "" for a create that is placed
	}{
		{"active", nil, ""},
		{"sell only", []string{"--account-status", "sell_only"}, "Account is sell only."},
		{"deactivated", []string{"--account-status", "deactivated"}, "Account is deactivated."},
		{"read-only key", []string{"--read-only-key"}, "You do not have permission"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env, _, stop := startSimServe(t, append([]string{"--addr", "127.0.0.1:0"}, tc.args...)...)
			defer stop()
			if r := runCLI(t, env, "", "api", "GET", "/api/v2/crypto/trading/accounts/"); r.code != 0 {
				t.Fatalf("reading accounts: exit %d, stderr %q", r.code, r.stderr)
			}
			body := fmt.Sprintf(buy, "6c3c1c8e-1f0a-4e0b-9a51-"+fmt.Sprintf("%012d", len(tc.name)))
			r := runCLI(t, env, body, "api", "POST", "/api/v2/crypto/trading/orders/?account_number=TW0000000001", "--data", "@-")
			switch {
			case tc.want == "" && r.code != 0:
				t.Errorf("create on an active account: exit %d, stderr %q", r.code, r.stderr)
			case tc.want != "" && (r.code == 0 || !strings.Contains(r.stdout+r.stderr, tc.want)):
				t.Errorf("create: exit %d, stdout %q, stderr %q; want it refused with %q", r.code, r.stdout, r.stderr, tc.want)
			}
		})
	}
}

func TestSimServe_UsageErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	badJSON := filepath.Join(dir, "bad.json")
	unknownKind := filepath.Join(dir, "unknown.json")
	if err := os.WriteFile(badJSON, []byte(`{"faults": [`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(unknownKind, []byte(`{"faults":[{"kind":"explode"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	unknownClass := filepath.Join(dir, "class.json")
	if err := os.WriteFile(unknownClass, []byte(`{"classes":{"reads":{"per_minute":1,"burst":1}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string // in the error line
	}{
		{"every interface", []string{"--addr", "0.0.0.0:8787"}, "loopback only"},
		{"empty host", []string{"--addr", ":8787"}, "loopback only"},
		{"another host", []string{"--addr", "192.0.2.1:8787"}, "loopback only"},
		{"host name", []string{"--addr", "example.com:8787"}, "loopback only"},
		{"no port", []string{"--addr", "127.0.0.1"}, "want host:port"},
		{"missing faults file", []string{"--addr", "127.0.0.1:0", "--faults", filepath.Join(dir, "nope.json")}, "--faults"},
		{"faults not JSON", []string{"--addr", "127.0.0.1:0", "--faults", badJSON}, "--faults"},
		{"unknown fault kind", []string{"--addr", "127.0.0.1:0", "--faults", unknownKind}, "explode"},
		{"page size", []string{"--addr", "127.0.0.1:0", "--page-size", "0"}, "--page-size"},
		{"missing rate limits file", []string{"--addr", "127.0.0.1:0", "--rate-limits", filepath.Join(dir, "nope.json")}, "--rate-limits"},
		{"unknown rate limit class", []string{"--addr", "127.0.0.1:0", "--rate-limits", unknownClass}, `unknown class "reads"`},
		{"retry after", []string{"--addr", "127.0.0.1:0", "--retry-after", "soon"}, "--retry-after"},
		{"fractional retry after", []string{"--addr", "127.0.0.1:0", "--retry-after", "1.5s"}, "--retry-after"},
		{"ca file without tls", []string{"--addr", "127.0.0.1:0", "--ca-file", filepath.Join(dir, "ca.pem")}, "--ca-file without --tls"},
		{"account status", []string{"--addr", "127.0.0.1:0", "--account-status", "frozen"}, `status "frozen"`},
		{"argument", []string{"now"}, "unexpected argument"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := runCLI(t, nil, "", append([]string{"sim", "serve"}, tt.args...)...)
			if r.code != 2 {
				t.Errorf("exit %d, want 2; stderr %q", r.code, r.stderr)
			}
			if r.stdout != "" {
				t.Errorf("stdout %q, want nothing (no credentials printed)", r.stdout)
			}
			if strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("stderr %q, want one line mentioning %q", r.stderr, tt.want)
			}
		})
	}
}

// TestSimServe_StateSurvivesARestart places an order on "sim serve
// --state", stops it, starts it again on the same file, and reads the
// order back from the new process's venue, where it can still be canceled.
func TestSimServe_StateSurvivesARestart(t *testing.T) {
	t.Parallel()
	state := filepath.Join(t.TempDir(), "venue.json")
	env, _, stop := startSimServe(t, "--addr", "127.0.0.1:0", "--seed", "5", "--state", state)
	r := runCLI(t, env, "", "api", "POST", "/api/v2/crypto/trading/orders/?account_number=TW0000000001", "--data",
		`{"client_order_id":"6b8e1f0e-2b61-4a52-9a56-1b2b3c4d5e6f","side":"buy","type":"limit","symbol":"BTC-USD","limit_order_config":{"asset_quantity":"0.0001","limit_price":"1000.00"}}`)
	var placed struct{ ID, State string }
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &placed) != nil || placed.State != "open" {
		t.Fatalf("place: exit %d, stdout %.300q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if res := stop(); res.code != 0 || !strings.Contains(res.stderr, "book saved to "+state) {
		t.Fatalf("stop: exit %d, stderr %q", res.code, res.stderr)
	}

	env, _, stop = startSimServe(t, "--addr", "127.0.0.1:0", "--seed", "5", "--state", state)
	defer stop()
	r = runCLI(t, env, "", "api", "GET", "/api/v2/crypto/trading/orders/"+placed.ID+"/")
	if r.code != 0 || !strings.Contains(r.stdout, `"state":"open"`) {
		t.Fatalf("read back after the restart: exit %d, stdout %.300q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if r := runCLI(t, env, "", "api", "POST", "/api/v2/crypto/trading/orders/"+placed.ID+"/cancel/", "--data", "{}"); r.code != 0 {
		t.Errorf("cancel after the restart: exit %d, stderr %q", r.code, r.stderr)
	}
	// Negative control: without --state the new venue does not know it.
	env2, _, stop2 := startSimServe(t, "--addr", "127.0.0.1:0", "--seed", "5")
	defer stop2()
	if r := runCLI(t, env2, "", "api", "GET", "/api/v2/crypto/trading/orders/"+placed.ID+"/"); r.code == 0 {
		t.Errorf("a venue without --state read the order: %.300q", r.stdout)
	}
}
