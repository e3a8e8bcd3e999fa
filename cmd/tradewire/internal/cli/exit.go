package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/tradewire/tradewire/transport"
)

// Exit codes, the same for every command.
const (
	exitOK          = 0 // success
	exitFailure     = 1 // any other failure
	exitUsage       = 2 // usage or configuration error: nothing was sent
	exitNotFound    = 3 // the venue answered 404
	exitGaveUp      = 4 // retried until the budget ran out (429 or 5xx/network)
	exitUnknown     = 5 // a write may or may not have taken effect
	exitRejected    = 6 // refused by the venue (400, 422, 401, 403, other 4xx)
	errorLinePrefix = "tradewire: "
)

// usageError is a usage or configuration problem found before anything
// was sent. Its message names the flag or variable at fault.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// unavailableError is a service the command needs that could not be
// reached, such as the fleet's Redis: exit 4, as for a venue that stayed
// unavailable, so that a wrapper retries later rather than give up as on
// a usage error. It matches transport.ErrUnavailable.
type unavailableError struct {
	msg string
	err error
}

func (e *unavailableError) Error() string        { return e.msg }
func (e *unavailableError) Unwrap() error        { return e.err }
func (e *unavailableError) Is(target error) bool { return target == transport.ErrUnavailable }

// setupError classifies an error from setting up a command against a
// shared service (the fleet's Redis): msg is the line to print. An outage
// (the service cannot be reached or stopped answering: refused, reset,
// timed out, or an error matching transport.ErrUnavailable, as
// redisstore's and the venue's below HTTP do) is an *unavailableError
// (exit 4); the venue's answer (a *transport.StatusError) or an unknown
// outcome keeps its own exit code; anything else is a configuration error
// (exit 2). This is the one place that tells them apart.
func setupError(msg string, err error) error {
	var se *transport.StatusError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, transport.ErrUnknownOutcome), errors.As(err, &se):
		return &wrappedError{msg: msg, err: err}
	case isOutage(err):
		return &unavailableError{msg: msg, err: err}
	default:
		return &usageError{msg: msg}
	}
}

// isOutage reports whether err says a service could not be reached or
// stopped answering, as opposed to refusing what it was asked.
func isOutage(err error) bool {
	var op *net.OpError
	var dns *net.DNSError
	var timeout interface{ Timeout() bool }
	switch {
	case errors.Is(err, transport.ErrUnavailable),
		errors.As(err, &op), errors.As(err, &dns),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, context.DeadlineExceeded):
		return true
	case errors.As(err, &timeout):
		return timeout.Timeout()
	}
	return false
}

// wrappedError prints msg and keeps err's exit code.
type wrappedError struct {
	msg string
	err error
}

func (e *wrappedError) Error() string { return e.msg }
func (e *wrappedError) Unwrap() error { return e.err }

// exitCode maps an error to the process's exit code:
//
//	0  success
//	1  any other failure
//	2  usage or configuration error; nothing was sent (bad flags or
//	   arguments, missing or malformed credentials, a base URL or limit
//	   transport.New refuses, transport.ErrInvalidRequest,
//	   transport.ErrInvalidRequest)
//	3  not found (transport.ErrNotFound)
//	4  gave up after retries, or a service it needs is down
//	   (transport.ErrRateLimited, transport.ErrUnavailable, such as the
//	   fleet's Redis unreachable: see setupError)
//	5  unknown outcome: a write may have taken effect (transport.ErrUnknownOutcome)
//	6  rejected by the venue (transport.ErrRejected, transport.ErrCredentials)
//
// An unknown outcome is checked first: it wraps the 5xx or 429
// *transport.StatusError that caused it, which also matches
// ErrUnavailable or ErrRateLimited, and a bot must never read it as
// "retry later" (it may have taken effect).
func exitCode(err error) int {
	var ue *usageError
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, transport.ErrUnknownOutcome):
		return exitUnknown
	case errors.As(err, &ue),
		errors.Is(err, transport.ErrInvalidRequest),
		errors.Is(err, transport.ErrInvalidRequest):
		return exitUsage
	case errors.Is(err, transport.ErrNotFound):
		return exitNotFound
	case errors.Is(err, transport.ErrRateLimited), errors.Is(err, transport.ErrUnavailable):
		return exitGaveUp
	case errors.Is(err, transport.ErrRejected), errors.Is(err, transport.ErrCredentials):
		return exitRejected
	default:
		return exitFailure
	}
}

// errorLine renders err as the one line printed on stderr: prefixed,
// with control characters (a venue's multi-line body) folded to spaces,
// and every secret replaced by a placeholder.
func errorLine(err error, secrets []string) string {
	msg := redact(err.Error(), secrets)
	msg = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, msg)
	return errorLinePrefix + strings.Join(strings.Fields(msg), " ") + "\n"
}

const redacted = "[REDACTED]"

// redact replaces every non-empty secret in s with a placeholder.
func redact(s string, secrets []string) string {
	for _, sec := range secrets {
		if sec != "" {
			s = strings.ReplaceAll(s, sec, redacted)
		}
	}
	return s
}
