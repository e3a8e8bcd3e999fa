package transport

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestShouldRetry(t *testing.T) {
	live := context.Background()
	done, cancel := context.WithCancel(context.Background())
	cancel()
	netErr := io.ErrUnexpectedEOF
	tests := []struct {
		name   string
		ctx    context.Context
		method string
		status int
		err    error
		want   bool
		reason string
	}{
		{"GET 200", live, "GET", 200, nil, false, reasonSuccess},
		{"GET 429", live, "GET", 429, nil, true, reasonRetryableStatus},
		{"GET 500", live, "GET", 500, nil, true, reasonRetryableStatus},
		{"GET 502", live, "GET", 502, nil, true, reasonRetryableStatus},
		{"GET 503", live, "GET", 503, nil, true, reasonRetryableStatus},
		{"GET 504", live, "GET", 504, nil, true, reasonRetryableStatus},
		{"GET 501", live, "GET", 501, nil, false, reasonFinalStatus},
		{"GET 505", live, "GET", 505, nil, false, reasonFinalStatus},
		{"GET 400", live, "GET", 400, nil, false, reasonFinalStatus},
		{"GET 401", live, "GET", 401, nil, false, reasonFinalStatus},
		{"GET 403", live, "GET", 403, nil, false, reasonFinalStatus},
		{"GET 404", live, "GET", 404, nil, false, reasonFinalStatus},
		{"GET 408", live, "GET", 408, nil, false, reasonFinalStatus},
		{"GET 422", live, "GET", 422, nil, false, reasonFinalStatus},
		{"GET 301", live, "GET", 301, nil, false, reasonFinalStatus},
		{"GET network error", live, "GET", 0, netErr, true, reasonNetworkError},
		{"GET body too large", live, "GET", 200, errResponseTooLarge, false, reasonFinalStatus},
		{"GET 503 context done", done, "GET", 503, nil, false, reasonCanceled},
		{"GET network error context done", done, "GET", 0, netErr, false, reasonCanceled},
		{"POST 201", live, "POST", 201, nil, false, reasonSuccess},
		{"POST 429", live, "POST", 429, nil, false, reasonNotGET},
		{"POST 500", live, "POST", 500, nil, false, reasonNotGET},
		{"POST 503", live, "POST", 503, nil, false, reasonNotGET},
		{"POST network error", live, "POST", 0, netErr, false, reasonNotGET},
		{"PUT 503", live, "PUT", 503, nil, false, reasonNotGET},
		{"DELETE 503", live, "DELETE", 503, nil, false, reasonNotGET},
		{"HEAD 503", live, "HEAD", 503, nil, false, reasonNotGET},
	}
	for _, tt := range tests {
		got, reason := shouldRetry(tt.ctx, tt.method, tt.status, tt.err)
		if got != tt.want || reason != tt.reason {
			t.Errorf("%s: shouldRetry = %v, %q; want %v, %q", tt.name, got, reason, tt.want, tt.reason)
		}
	}
}

func TestBackoff(t *testing.T) {
	p := defaultRetryPolicy()
	tests := []struct {
		next  int
		ra    time.Duration
		hasRA bool
		want  time.Duration
	}{
		{2, 0, false, 500 * time.Millisecond},
		{3, 0, false, time.Second},
		{4, 0, false, 2 * time.Second},
		{5, 0, false, 4 * time.Second},
		{6, 0, false, 8 * time.Second},
		{7, 0, false, 8 * time.Second},
		{1000, 0, false, 8 * time.Second},
		{2, 3 * time.Second, true, 3 * time.Second},
		{2, 0, true, 0},
		{2, time.Hour, true, 8 * time.Second},
	}
	for _, tt := range tests {
		if got, _ := p.backoff(tt.next, tt.ra, tt.hasRA); got != tt.want {
			t.Errorf("backoff(%d, %v, %v) = %v, want %v", tt.next, tt.ra, tt.hasRA, got, tt.want)
		}
	}
	j := p
	j.Jitter = true
	for next := 2; next < 8; next++ {
		ceil, _ := p.backoff(next, 0, false)
		for i := 0; i < 200; i++ {
			if got, _ := j.backoff(next, 0, false); got < 0 || got > ceil {
				t.Fatalf("jittered backoff %v outside [0, %v]", got, ceil)
			}
		}
	}
	if got, _ := j.backoff(2, 3*time.Second, true); got != 3*time.Second {
		t.Errorf("Retry-After was jittered: %v", got)
	}
	if got, _ := (RetryPolicy{}).backoff(2, 0, false); got != 0 {
		t.Errorf("zero policy waits %v", got)
	}
}

func TestParseRetryAfter(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"0", 0, true},
		{"1", time.Second, true},
		{" 7 ", 7 * time.Second, true},
		{"120", 120 * time.Second, true},
		{"99999999999999999999999", maxRetryAfter, true},
		{"", 0, false},
		{"   ", 0, false},
		{"-1", 0, false},
		{"+1", 0, false},
		{"1.5", 0, false},
		{"1e3", 0, false},
		{"NaN", 0, false},
		{"Inf", 0, false},
		{"0x10", 0, false},
		{"Wed, 21 Oct 2026 07:28:00 GMT", 0, false},
		{"1 2", 0, false},
		{"١", 0, false}, // a non-ASCII digit
	}
	for _, tt := range tests {
		got, ok := parseRetryAfter(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("parseRetryAfter(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"0", "5", "120", "-1", "1.5", "NaN", "", "Wed, 21 Oct 2026 07:28:00 GMT", "99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		d, ok := parseRetryAfter(in)
		if d < 0 || d > maxRetryAfter {
			t.Fatalf("parseRetryAfter(%q) = %v: out of range", in, d)
		}
		if !ok && d != 0 {
			t.Fatalf("parseRetryAfter(%q) ignored the value but returned %v", in, d)
		}
		if ok {
			for _, c := range []byte(in) {
				if (c < '0' || c > '9') && c != ' ' && c != '\t' {
					t.Fatalf("parseRetryAfter(%q) accepted a non-digit", in)
				}
			}
			clamped, _ := defaultRetryPolicy().backoff(2, d, true)
			if clamped > 8*time.Second {
				t.Fatalf("Retry-After %q not clamped: %v", in, clamped)
			}
		}
	})
}

func TestStatusErrorConditions(t *testing.T) {
	conds := []error{ErrNotFound, ErrCredentials, ErrRejected, ErrRateLimited, ErrUnavailable, ErrUnknownOutcome}
	want := map[int]error{
		400: ErrRejected, 401: ErrCredentials, 403: ErrCredentials, 404: ErrNotFound, 409: ErrRejected,
		422: ErrRejected, 429: ErrRateLimited, 500: ErrUnavailable, 501: nil, 502: ErrUnavailable,
		503: ErrUnavailable, 504: ErrUnavailable, 302: nil,
	}
	for code, w := range want {
		e := newStatusError("GET", "/a/", code, 1, 0, nil)
		for _, c := range conds {
			if got := errors.Is(e, c); got != (c == w) {
				t.Errorf("%d: errors.Is(%v) = %v", code, c, got)
			}
		}
	}
	uo := &unknownOutcomeError{Method: "POST", Path: "/o/", StatusCode: 503, Err: newStatusError("POST", "/o/", 503, 1, 0, nil)}
	if !errors.Is(uo, ErrUnknownOutcome) {
		t.Error("unknown outcome not matched")
	}
	if se, ok := uo.Err.(*StatusError); !ok || se.StatusCode != http.StatusServiceUnavailable {
		t.Error("the answer behind an unknown outcome is not readable in Err")
	}
	if errors.Is(uo, ErrUnavailable) {
		t.Error("an unknown outcome reads as unavailable (safe to retry)")
	}
}

func FuzzStatusErrorEnvelope(f *testing.F) {
	f.Add([]byte(`{"type":"validation_error","errors":[{"detail":"Must be a valid UUID.","attr":"client_order_id"}]}`))
	f.Add([]byte(`{"type":"client_error","errors":[{"detail":"Not found.","attr":null}]}`))
	f.Add([]byte(`Request missing required headers`))
	f.Add([]byte(`{"errors":[null,{"detail":5}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		e := newStatusError("GET", "/a/", 400, 1, 0, body)
		if len(e.Body) > maxErrorBody+len("…") {
			t.Fatalf("body kept unbounded: %d bytes", len(e.Body))
		}
		_ = e.Error()
	})
}

// FuzzTarget feeds pagination links, which the venue controls, to
// Client.Target: a link is either refused or turned into a request-target
// on the base URL's host that the client would send as is.
func FuzzTarget(f *testing.F) {
	for _, s := range []string{
		"https://trading.robinhood.com/api/v2/crypto/trading/orders/?cursor=abc",
		"https://evil.example/api/", "//evil.example/x", "/relative", "https://trading.robinhood.com@evil.example/",
		"https://trading.robinhood.com:443/x", "HTTPS://TRADING.ROBINHOOD.COM/x", "https://trading.robinhood.com/%zz",
	} {
		f.Add(s)
	}
	c, err := New("https://trading.robinhood.com", testSigner(f), Config{})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, link string) {
		target, err := c.Target(link)
		if err != nil {
			if !errors.Is(err, ErrInvalidRequest) {
				t.Fatalf("Target(%q) err = %v, want ErrInvalidRequest", link, err)
			}
			return
		}
		if !strings.HasPrefix(target, "/") || strings.HasPrefix(target, "//") {
			if _, cerr := checkTarget("GET", target); cerr == nil {
				t.Fatalf("Target(%q) = %q: not a path, yet sendable", link, target)
			}
			return
		}
		if _, err := checkTarget("GET", target); err == nil {
			u, _ := url.Parse(c.base.String() + target)
			if u == nil || !strings.EqualFold(u.Host, "trading.robinhood.com") {
				t.Fatalf("Target(%q) = %q leads to host %v", link, target, u)
			}
		}
	})
}
