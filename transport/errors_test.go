package transport

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
)

// TestTaxonomy: every error type this package returns, against every
// sentinel. Each row lists exactly the sentinels it matches; a write with
// an unknown outcome matches ErrUnknownOutcome alone, whatever its cause.
func TestTaxonomy(t *testing.T) {
	t.Parallel()
	sentinels := map[string]error{
		"ErrNotFound": ErrNotFound, "ErrCredentials": ErrCredentials, "ErrRejected": ErrRejected,
		"ErrRateLimited": ErrRateLimited, "ErrUnavailable": ErrUnavailable, "ErrUnknownOutcome": ErrUnknownOutcome,
		"ErrInvalidRequest": ErrInvalidRequest, "ErrNotSent": ErrNotSent,
	}
	status := func(method string, code int) *StatusError { return newStatusError(method, "/o/", code, 1, 0, nil) }
	unknown := func(code int, cause error) *unknownOutcomeError {
		return &unknownOutcomeError{Method: "POST", Path: "/o/", StatusCode: code, Err: cause}
	}
	tooLarge := &responseTooLargeError{Method: "POST", Path: "/o/", StatusCode: 201, Limit: 1}
	tests := []struct {
		name string
		err  error
		want []string
	}{
		{"StatusError 400", status("GET", 400), []string{"ErrRejected"}},
		{"StatusError 401", status("GET", 401), []string{"ErrCredentials"}},
		{"StatusError 403", status("POST", 403), []string{"ErrCredentials"}},
		{"StatusError 404", status("GET", 404), []string{"ErrNotFound"}},
		{"StatusError 409", status("POST", 409), []string{"ErrRejected"}},
		{"StatusError 422", status("POST", 422), []string{"ErrRejected"}},
		{"StatusError 429 (GET, budget spent)", status("GET", 429), []string{"ErrRateLimited"}},
		{"StatusError 500 (GET, budget spent)", status("GET", 500), []string{"ErrUnavailable"}},
		{"StatusError 503 (GET, budget spent)", status("GET", 503), []string{"ErrUnavailable"}},
		{"StatusError 501", status("GET", 501), nil},
		{"StatusError 302", status("GET", 302), nil},
		{"networkError", &networkError{Method: "GET", Path: "/a/", Attempts: 4, Err: io.ErrUnexpectedEOF}, []string{"ErrUnavailable"}},
		{"responseTooLargeError (GET)", &responseTooLargeError{Method: "GET", Path: "/a/", StatusCode: 200, Limit: 1}, nil},
		{"unknownOutcomeError after 429", unknown(429, status("POST", 429)), []string{"ErrUnknownOutcome"}},
		{"unknownOutcomeError after 500", unknown(500, status("POST", 500)), []string{"ErrUnknownOutcome"}},
		{"unknownOutcomeError after 503", unknown(503, status("POST", 503)), []string{"ErrUnknownOutcome"}},
		{"unknownOutcomeError after 501", unknown(501, status("POST", 501)), []string{"ErrUnknownOutcome"}},
		{"unknownOutcomeError after 302", unknown(302, status("POST", 302)), []string{"ErrUnknownOutcome"}},
		{"unknownOutcomeError after a 2xx too large", unknown(201, tooLarge), []string{"ErrUnknownOutcome"}},
		{"unknownOutcomeError after a reset", unknown(0, io.ErrUnexpectedEOF), []string{"ErrUnknownOutcome"}},
		{"unknownOutcomeError after the attempt timeout", unknown(0, errAttemptTimeout), []string{"ErrUnknownOutcome"}},
		{"unknownOutcomeError whose cause reads not-sent", unknown(0, &notSentError{Err: io.EOF}), []string{"ErrUnknownOutcome"}},
		{"notSentError (BeforeSend refused)", &notSentError{Method: "POST", Path: "/o/", Err: errors.New("store down")}, []string{"ErrNotSent"}},
		{"notSentError (budget wait cancelled)", &notSentError{Method: "POST", Path: "/o/", Err: context.Canceled}, []string{"ErrNotSent"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			want := map[string]bool{}
			for _, w := range tt.want {
				want[w] = true
			}
			for name, s := range sentinels {
				if got := errors.Is(tt.err, s); got != want[name] {
					t.Errorf("errors.Is(%T, %s) = %v, want %v", tt.err, name, got, want[name])
				}
			}
			if tt.err.Error() == "" {
				t.Error("empty message")
			}
		})
	}
}

// TestUnknownOutcomeHidesItsCause: errors.As cannot reach the answer behind
// an unknown outcome (a bot that looks for *StatusError to decide "the venue
// said no" must not find one); the answer stays readable in the message.
func TestUnknownOutcomeHidesItsCause(t *testing.T) {
	t.Parallel()
	cause := newStatusError("POST", "/o/", 503, 1, 0, []byte(`{"type":"server_error","errors":[{"detail":"boom","attr":null}]}`))
	var err error = &unknownOutcomeError{Method: "POST", Path: "/o/", StatusCode: 503, Err: cause}
	var se *StatusError
	if errors.As(err, &se) {
		t.Error("errors.As found the *StatusError behind an unknown outcome")
	}
	var uo *unknownOutcomeError
	if !errors.As(err, &uo) || uo.Err != cause || uo.StatusCode != 503 {
		t.Error("the unknown outcome's cause is not readable")
	}
	var ns *notSentError
	if errors.As(err, &ns) {
		t.Error("an unknown outcome reads as not sent")
	}
	if msg := err.Error(); !strings.Contains(msg, "503") || !strings.Contains(msg, "boom") {
		t.Errorf("message %q does not carry the answer behind it", msg)
	}
}
