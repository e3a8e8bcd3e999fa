package cli

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/tradewire/tradewire/transport"
)

// vectorsFile is the venue's published signature vectors, shared with
// package signing.
var vectorsFile = filepath.Join("..", "..", "..", "..", "signing", "testdata", "vectors.json")

type vectors struct {
	Seed      string `json:"seed"`
	APIKey    string `json:"api_key"`
	Timestamp int64  `json:"timestamp"`
	Vectors   []struct {
		Name, Method, Target, Body, Signature string
	} `json:"vectors"`
}

// recordingRoundTripper answers 200 {} and records each request's headers
// and body.
type recordingRoundTripper struct {
	mu      sync.Mutex
	headers []http.Header
	bodies  []string
}

func (rt *recordingRoundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	var body []byte
	if r.Body != nil {
		body, _ = io.ReadAll(r.Body)
	}
	rt.mu.Lock()
	rt.headers = append(rt.headers, r.Header.Clone())
	rt.bodies = append(rt.bodies, string(body))
	rt.mu.Unlock()
	return &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("{}")), Request: r}, nil
}

// TestGoldenSignatures sends each published vector through the whole CLI
// — flags, env, --data, the transport — on a clock stopped at the
// vector's timestamp, and expects the published signature on the wire.
// A body that is not JSON (the docs' Python dict repr) is refused before
// anything is sent.
func TestGoldenSignatures(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(vectorsFile)
	if err != nil {
		t.Fatal(err)
	}
	var vs vectors
	if err := json.Unmarshal(raw, &vs); err != nil {
		t.Fatal(err)
	}
	for _, v := range vs.Vectors {
		t.Run(v.Name, func(t *testing.T) {
			t.Parallel()
			rt := &recordingRoundTripper{}
			env := map[string]string{envAPIKey: vs.APIKey, envPrivateKey: vs.Seed}
			args := []string{"api", v.Method, v.Target}
			if v.Body != "" {
				args = append(args, "--data", v.Body)
			}
			r := runWith(t, Options{
				Getenv:          func(k string) string { return env[k] },
				Clock:           clockwork.NewFakeClockAt(time.Unix(vs.Timestamp, 0)),
				TransportConfig: transport.Config{RoundTripper: rt},
			}, args...)

			if !json.Valid([]byte(v.Body)) && v.Body != "" {
				if r.code != 2 || len(rt.headers) != 0 {
					t.Errorf("non-JSON body: exit %d with %d requests, want 2 and none", r.code, len(rt.headers))
				}
				return
			}
			if r.code != 0 {
				t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
			}
			if len(rt.headers) != 1 {
				t.Fatalf("%d requests, want 1", len(rt.headers))
			}
			h := rt.headers[0]
			if got := h.Get("x-signature"); got != v.Signature {
				t.Errorf("x-signature = %s, want %s", got, v.Signature)
			}
			if got := h.Get("x-timestamp"); got != "1698708981" {
				t.Errorf("x-timestamp = %s", got)
			}
			if rt.bodies[0] != v.Body {
				t.Errorf("body = %q, want %q", rt.bodies[0], v.Body)
			}
		})
	}
}
