package cli

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// doctorVenue answers the accounts list with the live capture and the
// orders list with an empty page, stamping every answer's Date header
// offset from the real clock, and records every method it was sent. It
// does not check signatures: doctor's own checks are under test.
type doctorVenue struct {
	srv    *httptest.Server
	mu     sync.Mutex
	method []string
}

func newDoctorVenue(t *testing.T, offset time.Duration, status int) *doctorVenue {
	t.Helper()
	accounts, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "broker", "testdata", "fixtures", "v2", "accounts.json"))
	if err != nil {
		t.Fatal(err)
	}
	v := &doctorVenue{}
	v.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v.mu.Lock()
		v.method = append(v.method, r.Method)
		v.mu.Unlock()
		w.Header().Set("Date", time.Now().Add(offset).UTC().Format(http.TimeFormat))
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		switch {
		case status != http.StatusOK:
			_, _ = io.WriteString(w, `{"type":"client_error","errors":[{"detail":"Invalid API key.","attr":null}]}`)
		case strings.HasPrefix(r.URL.Path, "/api/v2/crypto/trading/accounts/"):
			_, _ = w.Write(accounts)
		default:
			_, _ = io.WriteString(w, `{"next":null,"previous":null,"results":[]}`)
		}
	}))
	t.Cleanup(v.srv.Close)
	return v
}

func (v *doctorVenue) methods() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]string(nil), v.method...)
}

// checkLine fails unless out has a line starting with status and check.
func checkLine(t *testing.T, out, status, check, contains string) {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == status && f[1] == check && strings.Contains(line, contains) {
			return
		}
	}
	t.Errorf("no %q line for %s containing %q in:\n%s", status, check, contains, out)
}

func TestDoctorAllWell(t *testing.T) {
	v := newDoctorVenue(t, 0, http.StatusOK)
	r := runCLI(t, credEnv(v.srv.URL), "", "doctor")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("exit %d, stderr %q; want 0\n%s", r.code, r.stderr, r.stdout)
	}
	checkLine(t, r.stdout, "ok", "credentials", "loaded")
	checkLine(t, r.stdout, "ok", "connection", "answered 200")
	checkLine(t, r.stdout, "warn", "protocol", "HTTP/1.1") // httptest serves HTTP/1.1
	checkLine(t, r.stdout, "ok", "clock", "within")
	checkLine(t, r.stdout, "ok", "account", "AB1234567890, active")
	checkLine(t, r.stdout, "ok", "orders", "0 order(s)")
	for _, m := range v.methods() {
		if m != http.MethodGet {
			t.Errorf("doctor sent a %s; it must only read", m)
		}
	}
	if strings.Contains(r.stdout, testSeedB64) || strings.Contains(r.stdout, testAPIKey) {
		t.Error("the report shows a secret")
	}
}

func TestDoctorClockOff(t *testing.T) {
	for _, tc := range []struct {
		name   string
		offset time.Duration
		status string
		want   string
	}{
		{"3 min behind", -3 * time.Minute, "FAIL", "behind"},
		{"25 s ahead", 25 * time.Second, "warn", "ahead of"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := newDoctorVenue(t, tc.offset, http.StatusOK)
			r := runCLI(t, credEnv(v.srv.URL), "", "doctor")
			checkLine(t, r.stdout, tc.status, "clock", tc.want)
			if !strings.Contains(r.stdout, "fix: sync this machine's clock") {
				t.Errorf("no fix named:\n%s", r.stdout)
			}
			wantCode := 0
			if tc.status == "FAIL" {
				wantCode = exitFailure
			}
			if r.code != wantCode {
				t.Errorf("exit %d, want %d; stderr %q", r.code, wantCode, r.stderr)
			}
		})
	}
}

func TestDoctorCredentialsRefused(t *testing.T) {
	v := newDoctorVenue(t, 0, http.StatusUnauthorized)
	r := runCLI(t, credEnv(v.srv.URL), "", "doctor")
	checkLine(t, r.stdout, "ok", "connection", "answered 401")
	checkLine(t, r.stdout, "FAIL", "account", "401")
	if r.code != exitFailure || !strings.Contains(r.stderr, "1 check failed") {
		t.Errorf("exit %d, stderr %q; want %d and the count", r.code, r.stderr, exitFailure)
	}
}

func TestDoctorWithoutCredentialsSendsNothing(t *testing.T) {
	v := newDoctorVenue(t, 0, http.StatusOK)
	r := runCLI(t, map[string]string{envBaseURL: v.srv.URL}, "", "doctor")
	checkLine(t, r.stdout, "FAIL", "credentials", envAPIKey)
	if r.code != exitUsage {
		t.Errorf("exit %d, want %d (nothing sent)", r.code, exitUsage)
	}
	if n := len(v.methods()); n != 0 {
		t.Errorf("%d requests sent without credentials", n)
	}
}

func TestDoctorUnreachable(t *testing.T) {
	v := newDoctorVenue(t, 0, http.StatusOK)
	url := v.srv.URL
	v.srv.Close()
	r := runCLI(t, credEnv(url), "", "doctor")
	checkLine(t, r.stdout, "FAIL", "connection", "")
	if r.code != exitFailure {
		t.Errorf("exit %d, want %d", r.code, exitFailure)
	}
}

// TestDoctorRedisUnreachable: the fix line for a fleet's Redis that cannot
// be reached names Redis and its flag and variable, not the venue's flags;
// exit 4, as for any command that needs it.
func TestDoctorRedisUnreachable(t *testing.T) {
	t.Parallel()
	v := newDoctorVenue(t, 0, http.StatusOK)
	env := credEnv(v.srv.URL)
	env[envRedisURL] = "redis://:hunter22@127.0.0.1:1/0"
	r := runCLI(t, env, "", "doctor")
	checkLine(t, r.stdout, "FAIL", "redis", "cannot be reached")
	fix := r.stdout[strings.Index(r.stdout, "fix:"):]
	if !strings.Contains(fix, "--redis-url") || !strings.Contains(fix, "TRADEWIRE_REDIS_URL") ||
		strings.Contains(fix, "--base-url") || strings.Contains(fix, "--rate-per-minute") {
		t.Errorf("fix line %q; want it to name --redis-url and TRADEWIRE_REDIS_URL only", fix)
	}
	if r.code != exitGaveUp || strings.Contains(r.stdout+r.stderr, "hunter22") {
		t.Errorf("exit %d, stdout %q, stderr %q; want 4 and no password", r.code, r.stdout, r.stderr)
	}
	if n := len(v.methods()); n != 0 {
		t.Errorf("%d requests sent without the shared budget", n)
	}
}
