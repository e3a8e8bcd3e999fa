package broker

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tradewire/tradewire/transport"
)

// Fixed conditions, matched with errors.Is.
var (
	// ErrNoSuchOrder: the venue answered 404 for an order id (Order,
	// CancelOrder). The error also wraps the *transport.StatusError.
	ErrNoSuchOrder = errors.New("no such order")
	// ErrRepeatedCursor: a listing's next link led back to a page already
	// read; the listing stopped rather than loop.
	ErrRepeatedCursor = errors.New("pagination repeated a cursor")
	// ErrUnknownSymbol: the venue lists no trading pair for a symbol.
	ErrUnknownSymbol = errors.New("no such trading pair")
	// ErrAccount: the venue's accounts list did not name exactly one
	// account to act on (none, several without WithAccountNumber, or not
	// the one WithAccountNumber chose).
	ErrAccount = errors.New("cannot resolve the account")
)

// ArgumentError is an argument refused before anything was sent. Field
// names the argument or option, in the venue's spelling where there is one
// ("quantity", "order_id", "symbol"). It matches
// transport.ErrInvalidRequest.
type ArgumentError struct {
	Field  string
	Value  string
	Reason string
}

// Error describes the refused argument.
func (e *ArgumentError) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("broker: %s: %s", e.Field, e.Reason)
	}
	return fmt.Sprintf("broker: %s %q: %s", e.Field, e.Value, e.Reason)
}

// Is matches transport.ErrInvalidRequest: nothing was sent.
func (e *ArgumentError) Is(target error) bool { return target == transport.ErrInvalidRequest }

// PageCapError is a listing that still had a next page after Pages pages,
// the cap. The listing failed rather than return a partial answer; raise
// the cap (WithPageCap, MaxPages), narrow the query, or, for FeeSummary,
// accept a partial result with AllowPartial.
type PageCapError struct {
	// Path is the listing's path, without its query string.
	Path string
	// Pages is how many pages were read: the cap.
	Pages int
}

// Error describes the cap that was reached.
func (e *PageCapError) Error() string {
	return fmt.Sprintf("broker: %s: more than %d pages; stopped at the page cap rather than return a partial list", e.Path, e.Pages)
}

// CancelRejectedError is a cancel the venue refused as sent (400, 422),
// typically "This order cannot be canceled." because the order is already
// final. It unwraps to the *transport.StatusError.
type CancelRejectedError struct {
	OrderID string
	// Detail is the venue's words, joined with "; " when it gave several.
	Detail string
	Err    *transport.StatusError
}

// Error describes the refusal with the venue's detail.
func (e *CancelRejectedError) Error() string {
	return fmt.Sprintf("broker: cancel order %s rejected: %s", e.OrderID, e.Detail)
}

// Unwrap returns the venue's answer.
func (e *CancelRejectedError) Unwrap() error { return e.Err }

// DecodeError is a 2xx body that could not be decoded.
type DecodeError struct {
	// Path is the request path, without its query string.
	Path string
	Err  error
}

// Error describes the body that could not be decoded.
func (e *DecodeError) Error() string {
	return fmt.Sprintf("broker: decoding the answer to %s: %v", e.Path, e.Err)
}

// Unwrap returns the decoding failure.
func (e *DecodeError) Unwrap() error { return e.Err }

func statusDetail(se *transport.StatusError) string {
	var parts []string
	for _, fe := range se.Errors {
		parts = append(parts, fe.Detail)
	}
	if len(parts) == 0 && se.Body != "" {
		parts = append(parts, se.Body)
	}
	if len(parts) == 0 {
		return fmt.Sprintf("status %d", se.StatusCode)
	}
	return strings.Join(parts, "; ")
}

func pathOf(target string) string {
	if i := strings.IndexByte(target, '?'); i >= 0 {
		return target[:i]
	}
	return target
}
