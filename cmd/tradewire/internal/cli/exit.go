package cli

import (
	"errors"
	"fmt"
	"strings"

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

// exitCode maps an error to the process's exit code:
//
//	0  success
//	1  any other failure
//	2  usage or configuration error; nothing was sent (bad flags or
//	   arguments, missing or malformed credentials, a base URL or limit
//	   transport.New refuses, transport.ErrInvalidRequest,
//	   transport.ErrForeignURL)
//	3  not found (transport.ErrNotFound)
//	4  gave up after retries (transport.ErrRateLimited, transport.ErrUnavailable)
//	5  unknown outcome: a write may have taken effect (transport.ErrUnknownOutcome)
//	6  rejected by the venue (transport.ErrRejected, transport.ErrCredentials)
//
// An unknown outcome is checked first: it wraps the 5xx or 429
// *transport.StatusError that caused it, which also matches
// ErrUnavailable or ErrRateLimited.
func exitCode(err error) int {
	var ue *usageError
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, transport.ErrUnknownOutcome):
		return exitUnknown
	case errors.As(err, &ue),
		errors.Is(err, transport.ErrInvalidRequest),
		errors.Is(err, transport.ErrForeignURL):
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
