package transport

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Conditions callers branch on, matched with errors.Is against the errors
// this package returns. Besides *StatusError, their types are unexported:
// what a caller needs of them is the condition, and the rest (method,
// path, attempts, status, cause) is in the message.
var (
	// ErrNotFound: the venue answered 404.
	ErrNotFound = errors.New("not found")
	// ErrCredentials: the venue refused the credentials (401) or their
	// scope (403).
	ErrCredentials = errors.New("credentials refused")
	// ErrRejected: the venue refused the request as sent (400, 422 and
	// the other final 4xx statuses). StatusError.Errors names the fields.
	ErrRejected = errors.New("rejected by the venue")
	// ErrRateLimited: the venue kept answering 429 until the retry budget
	// ran out.
	ErrRateLimited = errors.New("rate limited")
	// ErrUnavailable: the venue kept failing (500, 502, 503, 504, or
	// below HTTP) until the retry budget ran out. A GET that failed below
	// HTTP on every attempt unwraps to the last failure.
	ErrUnavailable = errors.New("venue unavailable")
	// ErrUnknownOutcome: a write may or may not have taken effect. Never
	// send it again under a new idempotency key; only a lookup can tell.
	// An error that matches it matches none of the sentinels that read
	// "safe to retry" (ErrNotSent, ErrUnavailable, ErrRateLimited) or "the
	// venue said no" (ErrRejected, ErrNotFound, ErrCredentials).
	ErrUnknownOutcome = errors.New("unknown outcome")
	// ErrNotSent: nothing reached the venue; safe to retry. The error
	// unwraps to the reason (Send's beforeSend hook's error, the context's, the
	// failed dial).
	ErrNotSent = errors.New("not sent")
	// ErrInvalidRequest: the request was refused before anything was
	// sent, such as a URL not on the client's base URL (Client.Target).
	ErrInvalidRequest = errors.New("invalid request")
	// ErrRetryBudget: a GET that could have been tried again was not,
	// because the client's retry budget (Config.RetryBudget) could not pay
	// for the retry: the venue has been failing for many callers. The
	// error also matches what the last answer was (ErrRateLimited,
	// ErrUnavailable) and unwraps to it (a *StatusError for an answer).
	ErrRetryBudget = errors.New("retry budget exhausted")
)

// retryBudgetError is a GET's last failure, not retried because the retry
// budget was spent.
type retryBudgetError struct{ err error }

func (e *retryBudgetError) Error() string {
	return e.err.Error() + " (not retried: the client's retry budget is spent)"
}
func (e *retryBudgetError) Unwrap() error        { return e.err }
func (e *retryBudgetError) Is(target error) bool { return target == ErrRetryBudget }

var errResponseTooLarge = errors.New("response body too large")

// FieldError is one entry of the venue's error envelope.
type FieldError struct {
	// Detail is the venue's message, such as "Must be a valid UUID.".
	Detail string `json:"detail"`
	// Attr is the field path the detail is about
	// ("market_order_config.asset_quantity", "non_field_errors"), or
	// empty when the venue gave none.
	Attr string `json:"attr"`
}

// StatusError is a final non-2xx answer from the venue, or the last answer
// of a GET that was retried until its budget ran out. Use errors.Is with
// ErrNotFound, ErrCredentials, ErrRejected, ErrRateLimited or
// ErrUnavailable to branch on it.
type StatusError struct {
	Method string
	// Path is the request path without its query string.
	Path       string
	StatusCode int
	// Attempts is how many times the request was sent.
	Attempts int
	// RetryAfter is the last Retry-After the venue sent, as parsed
	// (delta-seconds only, before clamping); zero when it sent none.
	RetryAfter time.Duration
	// Type is the envelope's type: validation_error, client_error or
	// server_error; empty when the body was not an envelope.
	Type string
	// Errors are the envelope's entries.
	Errors []FieldError
	// Body is the raw body, kept verbatim (up to 1 KiB) when it was not an
	// envelope.
	Body string
	// ClockOffset is set on a 401 whose cause looks like the clock: the
	// venue's clock minus this machine's, as the answer's Date header (or
	// the client's estimate) showed, when the request's signature was
	// stamped further from the venue's clock than a signature stays valid
	// (signing.ValidFor). Zero otherwise.
	ClockOffset time.Duration
}

// Error implements error.
func (e *StatusError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s: %d %s", e.Method, e.Path, e.StatusCode, http.StatusText(e.StatusCode))
	if e.Attempts > 1 {
		fmt.Fprintf(&b, " after %d attempts", e.Attempts)
	}
	for i, fe := range e.Errors {
		sep := "; "
		if i == 0 {
			sep = ": "
		}
		b.WriteString(sep)
		if fe.Attr != "" {
			b.WriteString(fe.Attr + ": ")
		}
		b.WriteString(fe.Detail)
	}
	if len(e.Errors) == 0 && e.Body != "" {
		b.WriteString(": " + e.Body)
	}
	if e.ClockOffset != 0 {
		dir, d := "ahead of", e.ClockOffset
		if d < 0 {
			dir, d = "behind", -d
		}
		fmt.Fprintf(&b, ": the venue's clock differs from this machine's by %v (it is %s this machine's); fix the system clock", d.Round(time.Second), dir)
	}
	return b.String()
}

// Is reports whether e is one of the conditions this package names.
func (e *StatusError) Is(target error) bool {
	switch target {
	case ErrNotFound:
		return e.StatusCode == http.StatusNotFound
	case ErrCredentials:
		return e.StatusCode == http.StatusUnauthorized || e.StatusCode == http.StatusForbidden
	case ErrRateLimited:
		return e.StatusCode == http.StatusTooManyRequests
	case ErrUnavailable:
		switch e.StatusCode {
		case http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			return true
		}
	case ErrRejected:
		switch e.StatusCode {
		case http.StatusNotFound, http.StatusUnauthorized, http.StatusForbidden, http.StatusTooManyRequests:
			return false
		}
		return e.StatusCode >= 400 && e.StatusCode < 500
	}
	return false
}

// networkError is a GET that failed below HTTP (connection refused or
// reset, per-attempt timeout) on every attempt. It matches ErrUnavailable
// and unwraps to the last failure; its message names the attempts.
type networkError struct {
	Method, Path string
	Attempts     int
	Err          error
}

func (e *networkError) Error() string {
	return fmt.Sprintf("%s %s: failed after %d attempts: %v", e.Method, e.Path, e.Attempts, e.Err)
}

func (e *networkError) Unwrap() error { return e.Err }

func (e *networkError) Is(target error) bool { return target == ErrUnavailable }

// unknownOutcomeError is a write (a POST) whose effect cannot be known: the
// venue answered 429, 5xx or a redirect, a 2xx too large to read or cut
// off, or the answer was lost after the request may have been written (a
// timeout, a connection reset, an HTTP/2 stream reset or GOAWAY). The
// request was sent once and was not sent again; only a lookup can tell
// whether it took effect.
//
// It matches ErrUnknownOutcome and nothing else: it deliberately does not
// unwrap to its cause, so that a 503 behind it cannot read as
// ErrUnavailable ("retry later") nor a 3xx as ErrRejected. The cause
// (the venue's answer or the failure) and the status are in its message.
type unknownOutcomeError struct {
	Method, Path string
	// StatusCode is the venue's answer, or 0 when none arrived.
	StatusCode int
	// Err is the answer (a *StatusError, a *responseTooLargeError) or the
	// failure.
	Err error
}

func (e *unknownOutcomeError) Error() string {
	var se *StatusError
	var tl *responseTooLargeError
	if e.StatusCode != 0 && !errors.As(e.Err, &se) && !errors.As(e.Err, &tl) {
		return fmt.Sprintf("%s %s: unknown outcome (answered %d %s but its body could not be read; sent once, not retried; it may have taken effect): %v",
			e.Method, e.Path, e.StatusCode, http.StatusText(e.StatusCode), e.Err)
	}
	return fmt.Sprintf("%s %s: unknown outcome (sent once, not retried; it may have taken effect): %v", e.Method, e.Path, e.Err)
}

func (e *unknownOutcomeError) Is(target error) bool { return target == ErrUnknownOutcome }

// responseTooLargeError is a response whose body exceeded the client's
// limit. The request was answered with StatusCode; the body was not read.
// It matches none of the sentinels.
type responseTooLargeError struct {
	Method, Path string
	StatusCode   int
	Limit        int64
}

func (e *responseTooLargeError) Error() string {
	return fmt.Sprintf("%s %s: %d response body exceeds the %d-byte limit", e.Method, e.Path, e.StatusCode, e.Limit)
}

// Unwrap lets errors.Is see that the body was too large.
func (e *responseTooLargeError) Unwrap() error { return errResponseTooLarge }

const maxErrorBody = 1 << 10

// newStatusError builds the error for a non-2xx answer, decoding the
// venue's envelope when the body is one.
func newStatusError(method, path string, status, attempts int, retryAfter time.Duration, body []byte) *StatusError {
	e := &StatusError{Method: method, Path: path, StatusCode: status, Attempts: attempts, RetryAfter: retryAfter}
	var env struct {
		Type   string `json:"type"`
		Errors []struct {
			Detail *string `json:"detail"`
			Attr   *string `json:"attr"`
		} `json:"errors"`
	}
	if json.Unmarshal(body, &env) == nil && (env.Type != "" || len(env.Errors) > 0) {
		e.Type = env.Type
		for _, fe := range env.Errors {
			var f FieldError
			if fe.Detail != nil {
				f.Detail = *fe.Detail
			}
			if fe.Attr != nil {
				f.Attr = *fe.Attr
			}
			e.Errors = append(e.Errors, f)
		}
		return e
	}
	text := strings.TrimSpace(string(body))
	if len(text) > maxErrorBody {
		text = text[:maxErrorBody] + "…"
	}
	e.Body = text
	return e
}

// notSentError is a request that was stopped before anything reached the
// venue: Send's beforeSend hook refused it, the rate budget could not be had,
// or the connection could not be made. It matches ErrNotSent and unwraps
// to the reason; sending it again is safe.
type notSentError struct {
	Method, Path string
	Err          error
}

func (e *notSentError) Error() string {
	return fmt.Sprintf("%s %s: not sent: %v", e.Method, e.Path, e.Err)
}

func (e *notSentError) Unwrap() error { return e.Err }

func (e *notSentError) Is(target error) bool { return target == ErrNotSent }
