package cli

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tradewire/tradewire/transport"
)

// inMemoryVenue is a round tripper that serves requests in process (the
// way a simulated venue plugs in through transport.Config.RoundTripper),
// checking each signature like fakeVenue does.
type inMemoryVenue struct {
	t      *testing.T
	pub    ed25519.PublicKey
	status int

	mu    sync.Mutex
	times []time.Time
}

func (v *inMemoryVenue) RoundTrip(r *http.Request) (*http.Response, error) {
	var body []byte
	if r.Body != nil {
		var err error
		if body, err = io.ReadAll(r.Body); err != nil {
			return nil, err
		}
	}
	rec := received{
		Method: r.Method, Target: r.URL.RequestURI(), Body: body,
		APIKey: r.Header.Get("x-api-key"), Signature: r.Header.Get("x-signature"),
	}
	if ok, why := verify(v.pub, r.Header.Get("x-timestamp"), rec, time.Now()); !ok {
		v.t.Errorf("in-memory venue: %s", why)
	}
	v.mu.Lock()
	v.times = append(v.times, time.Now())
	v.mu.Unlock()
	w := httptest.NewRecorder()
	w.WriteHeader(v.status)
	resp := w.Result()
	resp.Request = r
	return resp, nil
}

// TestStormWithTheDefaultPolicy runs a 503 storm through the CLI's real
// configuration — default retry policy, real clock, token bucket — in a
// synctest bubble, where time is virtual: the 0.5 s, 1 s and 2 s waits
// pass at once.
func TestStormWithTheDefaultPolicy(t *testing.T) {
	t.Parallel()
	pub, _ := base64.StdEncoding.DecodeString(testPublicB64)
	tests := []struct {
		method   string
		wantCode int
		wantSent int
		wantWait time.Duration
	}{
		{"GET", 4, 4, 3500 * time.Millisecond},
		{"POST", 5, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.method, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				v := &inMemoryVenue{t: t, pub: pub, status: http.StatusServiceUnavailable}
				env := credEnv("https://venue.invalid")
				args := []string{"api", tt.method, "/api/v2/crypto/trading/orders/"}
				if tt.method == "POST" {
					args = append(args, "--data", `{"side":"buy"}`)
				}
				var stdout, stderr bytes.Buffer
				start := time.Now()
				code := Run(context.Background(), args, Options{
					Getenv:          func(k string) string { return env[k] },
					Stdout:          &stdout,
					Stderr:          &stderr,
					TransportConfig: transport.Config{RoundTripper: v},
				})
				if code != tt.wantCode {
					t.Errorf("exit %d, want %d; stderr %q", code, tt.wantCode, stderr.String())
				}
				if len(v.times) != tt.wantSent {
					t.Fatalf("venue saw %d requests, want %d", len(v.times), tt.wantSent)
				}
				if got := v.times[len(v.times)-1].Sub(start); got != tt.wantWait {
					t.Errorf("last attempt %v after the start, want %v (0.5 s + 1 s + 2 s for a GET)", got, tt.wantWait)
				}
				if stdout.Len() != 0 || strings.Count(stderr.String(), "\n") != 1 {
					t.Errorf("stdout %q, stderr %q: want nothing and one line", stdout.String(), stderr.String())
				}
			})
		})
	}
}
