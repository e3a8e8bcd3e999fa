package cli

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tradewire/tradewire/transport"
)

func TestAPI_GETWithQuerySignedAsGiven(t *testing.T) {
	t.Parallel()
	const body = `{"results":[{"symbol":"BTC-USD","bid_inclusive_of_sell_spread":"36000.1"}]}`
	v := newFakeVenue(t, answer(http.StatusOK, body))
	// Repeated params and a raw comma list, in a deliberately unsorted
	// order: the query must be sent and signed exactly as given.
	target := "/api/v2/crypto/trading/estimated_price/?symbol=BTC-USD&side=both&quantity=0.1,1&symbol=ETH-USD"

	r := runCLI(t, credEnv(v.srv.URL), "", "api", "get", target)

	if r.code != 0 {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	if r.stdout != body+"\n" {
		t.Errorf("stdout = %q, want the body and a newline", r.stdout)
	}
	if r.stderr != "" {
		t.Errorf("stderr = %q, want nothing", r.stderr)
	}
	reqs := v.requests()
	if len(reqs) != 1 || reqs[0].Method != "GET" || reqs[0].Target != target || len(reqs[0].Body) != 0 {
		t.Errorf("venue saw %+v, want one GET %s with no body", reqs, target)
	}
}

func TestAPI_DataSentByteForByte(t *testing.T) {
	t.Parallel()
	// Odd spacing, key order and a trailing newline: a re-serialising
	// client would change every one of them and break the signature
	// check the venue makes against these bytes.
	const data = "{ \"symbol\":\"BTC-USD\",  \"client_order_id\":\"131de903-5a9c-4260-abc1-28d562a5dcf0\",\"side\":\"buy\",\"type\":\"market\",\"market_order_config\":{\"asset_quantity\":\"0.10\"}}\n"
	file := filepath.Join(t.TempDir(), "order.json")
	if err := os.WriteFile(file, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	const target = "/api/v2/crypto/trading/orders/?account_number=AB1"
	tests := []struct {
		name  string
		stdin string
		args  []string
	}{
		{"literal", "", []string{"api", "POST", target, "--data", data}},
		{"short flag", "", []string{"api", "post", target, "-d", data}},
		{"file", "", []string{"api", "POST", target, "--data", "@" + file}},
		{"stdin", data, []string{"api", "POST", target, "--data=@-"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := newFakeVenue(t, answer(http.StatusCreated, `{"id":"o1","state":"open"}`))
			r := runCLI(t, credEnv(v.srv.URL), tt.stdin, tt.args...)
			if r.code != 0 {
				t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
			}
			if r.stdout != "{\"id\":\"o1\",\"state\":\"open\"}\n" {
				t.Errorf("stdout = %q", r.stdout)
			}
			reqs := v.requests()
			if len(reqs) != 1 {
				t.Fatalf("venue saw %d requests, want 1", len(reqs))
			}
			if reqs[0].Method != "POST" || reqs[0].Target != target || !bytes.Equal(reqs[0].Body, []byte(data)) {
				t.Errorf("venue saw %s %s %q, want POST %s %q", reqs[0].Method, reqs[0].Target, reqs[0].Body, target, data)
			}
		})
	}
}

func TestAPI_FullURLOnBaseURL(t *testing.T) {
	t.Parallel()
	v := newFakeVenue(t, answer(http.StatusOK, `{"next":null,"results":[]}`))
	r := runCLI(t, credEnv(v.srv.URL), "", "api", "GET", v.srv.URL+"/api/v2/crypto/trading/orders/?cursor=abc")
	if r.code != 0 {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	if reqs := v.requests(); len(reqs) != 1 || reqs[0].Target != "/api/v2/crypto/trading/orders/?cursor=abc" {
		t.Errorf("venue saw %+v", reqs)
	}
}

func TestGlobalFlagsBeforeOrAfterTheSubcommand(t *testing.T) {
	t.Parallel()
	keyFile := writeKeyFile(t, 0o600)
	tests := []struct {
		name string
		args func(url string) []string
	}{
		{"after", func(url string) []string {
			return []string{"api", "GET", "/api/v2/crypto/trading/accounts/", "--base-url", url, "--api-key", testAPIKey, "--private-key-file", keyFile, "--rate-per-minute", "0", "--log-level", "error"}
		}},
		{"before", func(url string) []string {
			return []string{"--base-url=" + url, "--api-key=" + testAPIKey, "--private-key-file=" + keyFile, "--burst=5", "api", "GET", "/api/v2/crypto/trading/accounts/"}
		}},
		{"between", func(url string) []string {
			return []string{"api", "--base-url", url, "GET", "--api-key", testAPIKey, "/api/v2/crypto/trading/accounts/", "--private-key-file", keyFile}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := newFakeVenue(t, answer(http.StatusOK, `{"results":[]}`))
			r := runCLI(t, nil, "", tt.args(v.srv.URL)...)
			if r.code != 0 {
				t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
			}
			if n := len(v.requests()); n != 1 {
				t.Errorf("venue saw %d requests, want 1", n)
			}
		})
	}
}

func TestFlagsOverrideEnvironment(t *testing.T) {
	t.Parallel()
	good := newFakeVenue(t, answer(http.StatusOK, `{"results":[]}`))
	wrong := newFakeVenue(t, func(w http.ResponseWriter, _ int) {
		t.Error("request went to the base URL from the environment, not the flag")
		w.WriteHeader(http.StatusTeapot)
	})
	env := map[string]string{
		envBaseURL:       wrong.srv.URL,
		envAPIKey:        "rh-api-00000000-0000-0000-0000-000000000000",
		envPrivateKey:    "not base64 at all!",
		envRatePerMinute: "not a number",
		envBurst:         "-1",
		envLogLevel:      "shout",
	}
	r := runCLI(t, env, "", "api", "GET", "/api/v2/crypto/trading/accounts/",
		"--base-url", good.srv.URL, "--api-key", testAPIKey, "--private-key-file", writeKeyFile(t, 0o600),
		"--rate-per-minute", "60", "--burst", "2", "--log-level", "disabled")
	if r.code != 0 {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	if reqs := good.requests(); len(reqs) != 1 || reqs[0].APIKey != testAPIKey {
		t.Errorf("venue saw %+v, want one request with the flag's API key", reqs)
	}
}

func TestEnvironmentAlone(t *testing.T) {
	t.Parallel()
	v := newFakeVenue(t, answer(http.StatusOK, `{"results":[]}`))
	env := map[string]string{
		envBaseURL:        v.srv.URL,
		envAPIKey:         testAPIKey,
		envPrivateKeyFile: writeKeyFile(t, 0o600),
		envRatePerMinute:  "0",
		envBurst:          "0",
		envLogLevel:       "warn",
	}
	r := runCLI(t, env, "", "api", "GET", "/api/v2/crypto/trading/accounts/")
	if r.code != 0 {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
}

func TestExitCodesFromTheVenue(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		status     int
		body       string
		method     string
		wantCode   int
		wantSent   int
		wantStderr string
	}{
		{"200", 200, `{"results":[]}`, "GET", 0, 1, ""},
		{"404 not found", 404, `{"type":"client_error","errors":[{"detail":"Not found.","attr":null}]}`, "GET", 3, 1, "404 Not Found: Not found."},
		{"503 storm on GET gives up", 503, `{"type":"server_error","errors":[{"detail":"down","attr":null}]}`, "GET", 4, 4, "503 Service Unavailable after 4 attempts"},
		{"429 storm on GET gives up", 429, `{"type":"client_error","errors":[{"detail":"slow down","attr":null}]}`, "GET", 4, 4, "429 Too Many Requests after 4 attempts"},
		{"503 on POST is an unknown outcome, sent once", 503, `{"type":"server_error","errors":[]}`, "POST", 5, 1, "unknown outcome"},
		{"429 on POST is an unknown outcome, sent once", 429, ``, "POST", 5, 1, "unknown outcome"},
		{"400 rejected", 400, `{"type":"validation_error","errors":[{"detail":"Must be a valid UUID.","attr":"client_order_id"}]}`, "POST", 6, 1, "400 Bad Request: client_order_id: Must be a valid UUID."},
		{"400 plain text, many lines, rejected", 400, "Request missing\nrequired headers\n", "GET", 6, 1, "400 Bad Request: Request missing required headers"},
		{"401 credentials refused", 401, `{"type":"client_error","errors":[{"detail":"Invalid signature.","attr":null}]}`, "GET", 6, 1, "401 Unauthorized"},
		{"403 scope refused", 403, ``, "POST", 6, 1, "403 Forbidden"},
		{"501 on GET is final, other failure", 501, ``, "GET", 1, 1, "501 Not Implemented"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := newFakeVenue(t, answer(tt.status, tt.body))
			args := []string{"api", tt.method, "/api/v2/crypto/trading/orders/"}
			if tt.method == "POST" {
				args = append(args, "--data", `{"side":"buy"}`)
			}
			r := runCLI(t, credEnv(v.srv.URL), "", args...)
			if r.code != tt.wantCode {
				t.Errorf("exit %d, want %d; stderr %q", r.code, tt.wantCode, r.stderr)
			}
			if n := len(v.requests()); n != tt.wantSent {
				t.Errorf("venue saw %d requests, want %d", n, tt.wantSent)
			}
			if tt.wantCode == 0 {
				return
			}
			if r.stdout != "" {
				t.Errorf("stdout = %q, want nothing on failure", r.stdout)
			}
			assertOneErrorLine(t, r.stderr, tt.wantStderr)
		})
	}
}

// TestNothingSentOnUsageOrConfigurationError covers every exit 2: each
// must name its cause and send nothing.
func TestNothingSentOnUsageOrConfigurationError(t *testing.T) {
	t.Parallel()
	openKey := writeKeyFile(t, 0o644)
	const accounts = "/api/v2/crypto/trading/accounts/"
	tests := []struct {
		name  string
		env   func(url string) map[string]string
		args  []string
		stdin string
		want  string
	}{
		{"missing API key", without(envAPIKey), []string{"api", "GET", accounts},
			"", "TRADEWIRE_API_KEY is not set (or pass --api-key)"},
		{"empty --api-key", nil, []string{"api", "GET", accounts, "--api-key="},
			"", "--api-key is empty"},
		{"API key with a space", with(envAPIKey, "rh-api-has a space"), []string{"api", "GET", accounts},
			"", "TRADEWIRE_API_KEY: holds a space"},
		{"missing private key", without(envPrivateKey), []string{"api", "GET", accounts},
			"", "no private key: set TRADEWIRE_PRIVATE_KEY (base64) or TRADEWIRE_PRIVATE_KEY_FILE"},
		{"private key not base64", with(envPrivateKey, "%%%not-base64%%%"), []string{"api", "GET", accounts},
			"", "TRADEWIRE_PRIVATE_KEY: not valid standard base64"},
		{"private key wrong length", with(envPrivateKey, "AAAA"), []string{"api", "GET", accounts},
			"", "TRADEWIRE_PRIVATE_KEY: decodes to 3 bytes"},
		{"both key variables", with(envPrivateKeyFile, "/nonexistent"), []string{"api", "GET", accounts},
			"", "both TRADEWIRE_PRIVATE_KEY and TRADEWIRE_PRIVATE_KEY_FILE are set"},
		{"key file too open", nil, []string{"api", "GET", accounts, "--private-key-file", openKey},
			"", "--private-key-file " + openKey + ": permissions 0644 are too open: group or others can access it; run: chmod 600 " + openKey},
		{"key file from env missing", func(url string) map[string]string {
			env := without(envPrivateKey)(url)
			env[envPrivateKeyFile] = "/nonexistent/key"
			return env
		}, []string{"api", "GET", accounts}, "", "TRADEWIRE_PRIVATE_KEY_FILE /nonexistent/key: no such file"},
		{"http base URL off loopback", nil, []string{"api", "GET", accounts, "--base-url", "http://example.com"},
			"", `base URL "http://example.com": http is allowed only for loopback hosts`},
		{"base URL with a path", with(envBaseURL, "https://example.com/api"), []string{"api", "GET", accounts},
			"", `base URL "https://example.com/api"`},
		{"negative rate", with(envRatePerMinute, "-5"), []string{"api", "GET", accounts},
			"", `TRADEWIRE_RATE_PER_MINUTE "-5": want a number of requests per minute`},
		{"NaN rate flag", nil, []string{"api", "GET", accounts, "--rate-per-minute", "NaN"},
			"", `--rate-per-minute "NaN"`},
		{"zero burst with a rate", with(envBurst, "0"), []string{"api", "GET", accounts},
			"", `TRADEWIRE_BURST "0": want a whole number`},
		{"bad log level", with(envLogLevel, "loud"), []string{"api", "GET", accounts},
			"", `TRADEWIRE_LOG_LEVEL "loud": want one of trace, debug, info, warn, error, disabled`},
		{"bad flag value", nil, []string{"api", "GET", accounts, "--burst", "many"},
			"", `invalid argument "many" for "--burst"`},
		{"unknown flag", nil, []string{"api", "GET", accounts, "--verbose"},
			"", "unknown flag: --verbose"},
		{"private key as a flag", nil, []string{"api", "GET", accounts, "--private-key=" + testSeedB64},
			"", "the private key is never taken on the command line"},
		{"unknown command", nil, []string{"acounts"},
			"", `unknown command or unexpected argument for "tradewire"`},
		{"too few arguments", nil, []string{"api", "GET"},
			"", "api: want METHOD PATH, got 1 argument(s)"},
		{"too many arguments", nil, []string{"api", "GET", accounts, "extra"},
			"", "api: want METHOD PATH, got 3 argument(s)"},
		{"unknown method", nil, []string{"api", "FETCH", accounts},
			"", `api: METHOD "FETCH": want one of GET, POST, PUT, PATCH, DELETE`},
		{"path without slash", nil, []string{"api", "GET", "api/v2/crypto/trading/accounts/"},
			"", `api: PATH "api/v2/crypto/trading/accounts/" must start with /`},
		{"path that would be re-encoded", nil, []string{"api", "GET", "/api/v2/a b/"},
			"", "invalid request"},
		{"URL on another host", nil, []string{"api", "GET", "https://evil.example/api/v2/crypto/trading/accounts/"},
			"", "URL is not on the base URL's scheme and host"},
		{"data with GET", nil, []string{"api", "GET", accounts, "--data", "{}"},
			"", "api: --data with GET: a GET carries no body"},
		{"data not JSON", nil, []string{"api", "POST", accounts, "--data", "{side:buy}"},
			"", "--data: not valid JSON"},
		{"data from stdin not JSON", nil, []string{"api", "POST", accounts, "--data", "@-"},
			"side=buy", "--data: not valid JSON"},
		{"data file missing", nil, []string{"api", "POST", accounts, "--data", "@/nonexistent/order.json"},
			"", "--data @/nonexistent/order.json: cannot read the file: no such file or directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := newFakeVenue(t, func(w http.ResponseWriter, _ int) { w.WriteHeader(http.StatusOK) })
			env := credEnv(v.srv.URL)
			if tt.env != nil {
				env = tt.env(v.srv.URL)
			}
			r := runCLI(t, env, tt.stdin, tt.args...)
			if r.code != 2 {
				t.Errorf("exit %d, want 2; stderr %q", r.code, r.stderr)
			}
			if n := len(v.requests()); n != 0 {
				t.Errorf("venue saw %d requests, want none", n)
			}
			if r.stdout != "" {
				t.Errorf("stdout = %q, want nothing", r.stdout)
			}
			assertOneErrorLine(t, r.stderr, tt.want)
			assertNoSecrets(t, r.stderr)
		})
	}
}

// TestHTTPBaseURLOffLoopbackSendsNothing proves the refusal happens before
// any round trip, even with a transport that would reach the host.
func TestHTTPBaseURLOffLoopbackSendsNothing(t *testing.T) {
	t.Parallel()
	rt := &countingRoundTripper{}
	env := credEnv("http://example.com")
	r := runWith(t, Options{
		Getenv: func(k string) string { return env[k] },
		// Appended last, so a sim's round tripper would be in force too.
		TransportConfig: transport.Config{RoundTripper: rt},
	}, "api", "POST", "/api/v2/crypto/trading/orders/", "--data", "{}")
	if r.code != 2 || rt.count() != 0 {
		t.Errorf("exit %d with %d round trips, want 2 and none; stderr %q", r.code, rt.count(), r.stderr)
	}
}

func TestKeyFileFormsAccepted(t *testing.T) {
	t.Parallel()
	v := newFakeVenue(t, answer(http.StatusOK, `{}`))
	env := credEnv(v.srv.URL)
	delete(env, envPrivateKey)
	env[envPrivateKeyFile] = writeKeyFile(t, 0o400)
	if r := runCLI(t, env, "", "api", "GET", "/api/v2/crypto/trading/accounts/"); r.code != 0 {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
}

func TestNoSecretInOutputOrLogs(t *testing.T) {
	t.Parallel()
	var sigs []string
	tests := []struct {
		name   string
		status int
		body   string
		method string
	}{
		{"success", 200, `{"results":[]}`, "GET"},
		// A venue that echoes the API key back must not get it printed.
		{"401 echoing the key", 401, "unknown key " + testAPIKey, "GET"},
		{"unknown outcome", 503, "", "POST"},
		{"retry storm", 429, "", "GET"},
	}
	for _, tt := range tests {
		v := newFakeVenue(t, answer(tt.status, tt.body))
		args := []string{"api", tt.method, "/api/v2/crypto/trading/orders/", "--log-level", "trace"}
		if tt.method == "POST" {
			args = append(args, "--data", `{}`)
		}
		r := runCLI(t, credEnv(v.srv.URL), "", args...)
		for _, req := range v.requests() {
			sigs = append(sigs, req.Signature)
		}
		if !strings.Contains(r.stderr, `"level":`) {
			t.Errorf("%s: no JSON log lines on stderr: %q", tt.name, r.stderr)
		}
		assertNoSecrets(t, r.stderr, sigs...)
		if tt.status != 200 {
			assertNoSecrets(t, r.stdout, sigs...)
		}
	}
	if len(sigs) == 0 {
		t.Fatal("no signatures recorded")
	}
}

func TestHelpExitsZero(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{}, {"--help"}, {"api", "--help"}, {"help", "api"}} {
		r := runCLI(t, nil, "", args...)
		if r.code != 0 || r.stderr != "" || !strings.Contains(r.stdout, "tradewire") {
			t.Errorf("%q: exit %d, stderr %q, stdout %.80q", args, r.code, r.stderr, r.stdout)
		}
	}
}

func assertOneErrorLine(t *testing.T, stderr, want string) {
	t.Helper()
	if !strings.HasPrefix(stderr, "tradewire: ") || strings.Count(stderr, "\n") != 1 || !strings.HasSuffix(stderr, "\n") {
		t.Errorf("stderr = %q, want one line starting with \"tradewire: \"", stderr)
	}
	if !strings.Contains(stderr, want) {
		t.Errorf("stderr = %q, want it to contain %q", stderr, want)
	}
}

func assertNoSecrets(t *testing.T, out string, more ...string) {
	t.Helper()
	for _, s := range append([]string{testAPIKey, testSeedB64, "xQnTJVeQLmw1"}, more...) {
		if s != "" && strings.Contains(out, s) {
			t.Errorf("output holds a secret %.12q…: %q", s, out)
		}
	}
}

func writeKeyFile(t *testing.T, mode os.FileMode) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(path, []byte(testSeedB64+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
	return path
}

func with(name, value string) func(url string) map[string]string {
	return func(url string) map[string]string {
		env := credEnv(url)
		env[name] = value
		return env
	}
}

func without(name string) func(url string) map[string]string {
	return func(url string) map[string]string {
		env := credEnv(url)
		delete(env, name)
		return env
	}
}
