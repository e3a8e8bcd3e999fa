package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tradewire/tradewire/transport"
)

func TestSimFlag_APIReadsTheDemoAccountWithNoEnvironment(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		env  map[string]string
	}{
		{"no environment", nil},
		// Credentials that would fail (or reach a real venue) are ignored.
		{"credentials in the environment ignored", map[string]string{
			envBaseURL: "https://trading.robinhood.com", envAPIKey: testAPIKey, envPrivateKey: "not base64!",
			envPrivateKeyFile: "/nonexistent",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := runCLI(t, tt.env, "", "--sim", "api", "GET", "/api/v2/crypto/trading/accounts/")
			if r.code != 0 {
				t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
			}
			var page struct {
				Results []struct {
					AccountNumber string `json:"account_number"`
				} `json:"results"`
			}
			if err := json.Unmarshal([]byte(r.stdout), &page); err != nil {
				t.Fatalf("stdout %q: %v", r.stdout, err)
			}
			if len(page.Results) != 1 || page.Results[0].AccountNumber != "TW0000000001" {
				t.Errorf("accounts = %+v, want the demo account TW0000000001", page.Results)
			}
			if r.stderr != "" {
				t.Errorf("stderr = %q, want nothing", r.stderr)
			}
		})
	}
}

func TestSimFlag_SeededHistory(t *testing.T) {
	t.Parallel()
	r := runCLI(t, nil, "", "--sim", "api", "GET", "/api/v2/crypto/trading/orders/?account_number=TW0000000001")
	if r.code != 0 {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	var page struct {
		Results []struct {
			State      string          `json:"state"`
			FeeCharged json.RawMessage `json:"fee_charged"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &page); err != nil {
		t.Fatalf("stdout %q: %v", r.stdout, err)
	}
	states := map[string]int{}
	for _, o := range page.Results {
		states[o.State]++
	}
	if len(page.Results) != simHistory || states["filled"] == 0 || states["canceled"] == 0 {
		t.Errorf("history: %d orders, states %v; want %d with filled and canceled ones", len(page.Results), states, simHistory)
	}
}

func TestSimFlag_RefusesAnotherVenue(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--sim", "--base-url", "https://trading.robinhood.com"},
		{"--sim", "--api-key", testAPIKey},
		{"--sim", "--private-key-file", "/tmp/key"},
	} {
		t.Run(args[1], func(t *testing.T) {
			t.Parallel()
			r := runCLI(t, nil, "", append(args, "api", "GET", "/api/v2/crypto/trading/accounts/")...)
			if r.code != 2 || r.stdout != "" || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, args[1]) {
				t.Errorf("exit %d, stdout %q, stderr %q: want 2 and one line naming %s", r.code, r.stdout, r.stderr, args[1])
			}
		})
	}
}

func TestSimFlag_HelpSaysTheEnvironmentIsIgnored(t *testing.T) {
	t.Parallel()
	r := runCLI(t, nil, "", "--help")
	if r.code != 0 {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	i := strings.Index(r.stdout, "--sim")
	if i < 0 || !strings.Contains(r.stdout[i:], "ignored") || !strings.Contains(r.stdout[i:], envAPIKey) {
		t.Errorf("--help does not say that --sim ignores %s:\n%s", envAPIKey, r.stdout)
	}
}

// runSimReal runs tradewire --sim with no clock injected: the command
// line as a user runs it.
func runSimReal(t *testing.T, args ...string) result {
	t.Helper()
	return runWith(t, Options{}, append([]string{"--sim"}, args...)...)
}

// A --sim run prints the same bytes every time for a given seed, whatever
// the wall clock says: its clock starts at --sim-time (by default the
// instant the golden files were made at) and moves only by what the
// command waits.
func TestSimFlag_ReproducibleToTheByte(t *testing.T) {
	t.Parallel()
	t.Run("golden", func(t *testing.T) {
		t.Parallel()
		checkGolden(t, runSimReal, false)
	})
	for _, args := range [][]string{{"fees", "-o", "json"}, {"orders", "-o", "csv"}, {"quote", "BTC-USD", "-o", "table"}, {"estimate", "ETH-USD", "--quantity", "1"}} {
		t.Run("seed 7 "+args[0], func(t *testing.T) {
			t.Parallel()
			seeded := append([]string{"--seed", "7"}, args...)
			a, b := runSimReal(t, seeded...), runSimReal(t, seeded...)
			ok(t, a)
			ok(t, b)
			if a.stdout != b.stdout {
				t.Errorf("two runs of --sim --seed 7 %s differ:\n%s\n---\n%s", strings.Join(args, " "), a.stdout, b.stdout)
			}
			if c := runSimReal(t, args...); c.stdout == a.stdout {
				t.Errorf("--seed 7 and the default seed print the same %s: the seed is not used", args[0])
			}
		})
	}
	t.Run("sim-time", func(t *testing.T) {
		t.Parallel()
		r := runSimReal(t, "--sim-time", "2027-01-01T00:00:00Z", "fees", "-o", "json")
		ok(t, r)
		if !strings.Contains(r.stdout, `"window_end": "2027-01-01T00:00:00Z"`) {
			t.Errorf("--sim-time 2027-01-01: fees window does not end there:\n%s", r.stdout)
		}
	})
}

// --seed and --sim-time apply to a simulated venue only: elsewhere they
// are usage errors, found before anything is sent.
func TestSimFlag_SeedNeedsASimulatedVenue(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--seed", "3", "account"},
		{"--sim-time", "2026-01-01T00:00:00Z", "account"},
		{"--sim", "--sim-time", "yesterday", "account"},
		{"--sim-time", "2026-01-01T00:00:00Z", "demo"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			t.Parallel()
			rt := &countingRoundTripper{}
			r := runWith(t, Options{
				Getenv:          func(k string) string { return credEnv("https://venue.example")[k] },
				TransportConfig: transport.Config{RoundTripper: rt},
			}, args...)
			if r.code != 2 || r.stdout != "" || strings.Count(r.stderr, "\n") != 1 || rt.count() != 0 {
				t.Errorf("exit %d, stdout %q, stderr %q, %d sent; want 2, one line, nothing sent", r.code, r.stdout, r.stderr, rt.count())
			}
		})
	}
}
