package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"

	"github.com/tradewire/tradewire/broker"
	"github.com/tradewire/tradewire/orders"
	"github.com/tradewire/tradewire/signing"
	"github.com/tradewire/tradewire/transport"
)

// bothErr matches ErrUnknownOutcome and ErrUnavailable, as an error
// that wraps a 503 behind an unknown outcome does.
type bothErr struct{}

func (bothErr) Error() string { return "both" }
func (bothErr) Is(target error) bool {
	return target == transport.ErrUnknownOutcome || target == transport.ErrUnavailable
}

func TestExitCode(t *testing.T) {
	t.Parallel()
	status := func(method string, code, attempts int) *transport.StatusError {
		return &transport.StatusError{Method: method, Path: "/p/", StatusCode: code, Attempts: attempts}
	}
	getDropped := sendErr(t, "GET", nil)
	post503 := sendErr(t, "POST", answer(503, ""))
	tests := []struct {
		name string
		err  error
		want int
	}{
		{"nil is success", nil, 0},
		{"plain error is other failure", errors.New("boom"), 1},
		{"context canceled is other failure", context.Canceled, 1},
		{"response too large is other failure", sendErr(t, "GET", answer(200, `{"results":[]}`)), 1},
		{"redirect not followed is other failure", status("GET", 302, 1), 1},
		{"GET 501 is final, other failure", status("GET", 501, 1), 1},
		{"write not sent (dial error) is other failure", fmt.Errorf("POST /p/: not sent: %w", errors.New("connection refused")), 1},

		{"usage error", usagef("TRADEWIRE_API_KEY is not set"), 2},
		{"wrapped usage error", fmt.Errorf("api: %w", usagef("bad")), 2},
		{"ErrInvalidRequest", fmt.Errorf("transport: %w: method must be upper case", transport.ErrInvalidRequest), 2},
		{"ErrForeignURL", fmt.Errorf("transport: %w", transport.ErrInvalidRequest), 2},

		{"404", status("GET", 404, 1), 3},

		{"GET 503 after retries", status("GET", 503, 4), 4},
		{"GET 500 after retries", status("GET", 500, 4), 4},
		{"GET 502 after retries", status("GET", 502, 4), 4},
		{"GET 504 after retries", status("GET", 504, 4), 4},
		{"GET 429 after retries", status("GET", 429, 4), 4},
		{"GET network failure after retries", getDropped, 4},

		{"POST 503 is unknown outcome, not gave up", post503, 5},
		{"POST 429 is unknown outcome, not gave up", sendErr(t, "POST", answer(429, "")), 5},
		{"POST lost answer is unknown outcome", sendErr(t, "POST", nil), 5},
		{"wrapped unknown outcome", fmt.Errorf("order: %w", sendErr(t, "POST", answer(500, ""))), 5},

		{"matches both unknown and unavailable: unknown", bothErr{}, 5},
		{"orders' unknown outcome after a network failure", &orders.Error{Kind: transport.ErrUnknownOutcome, ClientOrderID: "c", Key: "k", Err: getDropped}, 5},
		{"orders' unknown outcome after lookups ran into 503s", &orders.Error{Kind: transport.ErrUnknownOutcome, ClientOrderID: "c", Key: "k", Err: status("GET", 503, 4)}, 5},
		{"unknown outcome inside a usage-looking wrapper", &wrappedError{msg: "x", err: post503}, 5},
		{"Redis unreachable", &unavailableError{msg: "redis", err: &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}}, 4},

		{"400 rejected", status("POST", 400, 1), 6},
		{"422 rejected", status("POST", 422, 1), 6},
		{"409 rejected", status("GET", 409, 1), 6},
		{"401 credentials refused", status("GET", 401, 1), 6},
		{"403 scope refused", status("GET", 403, 1), 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := exitCode(tt.err); got != tt.want {
				t.Errorf("exitCode(%v) = %d, want %d", tt.err, got, tt.want)
			}
		})
	}
}

// sendErr is what a transport.Client returns for one request to a venue
// that answers with handler, or drops the connection when handler is nil
// (retries immediate, bodies limited to 8 bytes).
func sendErr(t *testing.T, method string, handler func(http.ResponseWriter, int)) error {
	t.Helper()
	if handler == nil {
		handler = func(w http.ResponseWriter, _ int) {
			if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
				conn.Close()
			}
		}
	}
	v := newFakeVenue(t, handler)
	key, err := signing.ParsePrivateKey(testSeedB64)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := signing.New(testAPIKey, key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := transport.New(v.srv.URL, signer, transport.Config{Retry: fastRetries, RatePerMinute: -1, MaxResponseBytes: 8})
	if err != nil {
		t.Fatal(err)
	}
	var body []byte
	if method != http.MethodGet {
		body = []byte(`{}`)
	}
	if _, err = c.Do(context.Background(), method, "/p/", body); err == nil {
		t.Fatalf("%s: no error", method)
	}
	return err
}

func TestErrorLine(t *testing.T) {
	t.Parallel()
	secret := "rh-api-secret-value"
	err := fmt.Errorf("venue said:\nline two\r\n\tkey %s\x1b[31m", secret)
	got := errorLine(err, []string{secret})
	want := "tradewire: venue said: line two key [REDACTED] [31m\n"
	if got != want {
		t.Errorf("errorLine = %q, want %q", got, want)
	}
	if strings.Count(got, "\n") != 1 {
		t.Errorf("errorLine is not one line: %q", got)
	}
}

// TestSetupError sorts what reaching a shared service at start-up can
// fail with: an outage is exit 4 (try later), the venue's answer keeps its
// code, anything else is configuration (exit 2).
func TestSetupError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want int
	}{
		{"connection refused", fmt.Errorf("broker: Redis cannot be reached: %w", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}), 4},
		{"dns failure", &net.DNSError{Err: "no such host", Name: "redis.internal"}, 4},
		{"timed out", fmt.Errorf("ping: %w", context.DeadlineExceeded), 4},
		{"connection reset mid-answer", fmt.Errorf("redis: %w", syscall.ECONNRESET), 4},
		{"closed connection", fmt.Errorf("redis: %w", io.EOF), 4},
		{"store says unavailable", fmt.Errorf("redisstore: %w", transport.ErrUnavailable), 4},
		{"bad URL", &broker.ArgumentError{Field: "RedisURL", Reason: "not a redis:// URL"}, 2},
		{"auth refused", errors.New("WRONGPASS invalid username-password pair"), 2},
		{"venue refused the accounts read", &transport.StatusError{Method: "GET", Path: "/accounts/", StatusCode: 401, Attempts: 1}, 6},
		{"venue unavailable for the accounts read", &transport.StatusError{Method: "GET", Path: "/accounts/", StatusCode: 503, Attempts: 4}, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := setupError("msg", tt.err)
			if got := exitCode(err); got != tt.want {
				t.Errorf("exitCode(setupError(%v)) = %d, want %d", tt.err, got, tt.want)
			}
			if err.Error() != "msg" {
				t.Errorf("message %q", err.Error())
			}
		})
	}
	if setupError("x", nil) != nil {
		t.Error("setupError(nil) is not nil")
	}
}
