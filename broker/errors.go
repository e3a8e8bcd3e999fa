package broker

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/orders"
	"github.com/tradewire/tradewire/transport"
)

// Fixed conditions, matched with errors.Is.
var (
	// ErrNoSuchOrder: the venue answered 404 for an order id (Order,
	// CancelOrder). The error also wraps the *transport.StatusError.
	ErrNoSuchOrder = errors.New("no such order")
	// ErrUnknownSymbol: the venue lists no trading pair for a symbol.
	ErrUnknownSymbol = errors.New("no such trading pair")
	// ErrAccount: the venue's accounts list did not name exactly one
	// account to act on (none, several without Config.AccountNumber, or not
	// the one Config.AccountNumber chose).
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
// the cap (Config.PageCap, Paging.MaxPages), narrow the query, or, for FeeSummary,
// accept a partial result with Paging.AllowPartial.
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

// decodeError is a 2xx body that could not be decoded.
type decodeError struct {
	// Path is the request path, without its query string.
	Path string
	Err  error
}

// Error describes the body that could not be decoded.
func (e *decodeError) Error() string {
	return fmt.Sprintf("broker: decoding the answer to %s: %v", e.Path, e.Err)
}

// Unwrap returns the decoding failure.
func (e *decodeError) Unwrap() error { return e.Err }

func pathOf(target string) string {
	if i := strings.IndexByte(target, '?'); i >= 0 {
		return target[:i]
	}
	return target
}

// The outcomes of Place, CancelOrder and Recover a bot switches on, from
// this package alone. They are the same values as packages transport,
// idempotency and orders use, so errors.Is matches any spelling. Place's
// errors are package orders' one type, *orders.Error, whose Kind is the
// sentinel; its message names the client_order_id (ClientOrderID(key)
// gives it too), the reason and the cause, so a bot needs no other
// import to act on it.
var (
	// ErrInProgress: another Place or Recover sharing the intent store (in
	// this process or another) holds the key. Place again later with the
	// same key. It also matches
	// ErrUnknownOutcome: check it first.
	ErrInProgress = idempotency.ErrInProgress
	// ErrUnknownOutcome: the create (or cancel) may have taken effect.
	// Place again later with the same key, or Recover; never a new key.
	ErrUnknownOutcome = transport.ErrUnknownOutcome
	// ErrRejected: the venue said no (a create refused or failed, a cancel
	// of a final order); nothing is live from it.
	ErrRejected = transport.ErrRejected
	// ErrNotPlaced: nothing was placed and nothing can land from what was
	// sent: the same key again is safe.
	ErrNotPlaced = orders.ErrNotPlaced
	// ErrNotSent: nothing was sent by this call (the store or the venue
	// unavailable, the context ended); an earlier create of the key is not
	// ruled out: again later with the same key only.
	ErrNotSent = transport.ErrNotSent
	// ErrInvalidRequest: refused offline, nothing sent (an *ArgumentError,
	// a *LimitError, or the key already names another request): fix the
	// request or the key, or wait for the account's limit to allow it.
	ErrInvalidRequest = transport.ErrInvalidRequest
	// ErrRecordedOrder: Place on an acknowledged key could not read the
	// order afresh and returned the copy recorded at acknowledgement (it
	// exists; its state may have moved on). The error says why the read
	// failed, and unwraps to that.
	ErrRecordedOrder = errors.New("the order as recorded when acknowledged")
)

// What the reads (and a lookup) a bot switches on, from this package
// alone: the transport's conditions, the same values.
var (
	// ErrRateLimited: the venue kept answering 429 until the read's retry
	// budget ran out: try again later.
	ErrRateLimited = transport.ErrRateLimited
	// ErrUnavailable: the venue (or the fleet's Redis) kept failing, or
	// cannot be reached: try again later.
	ErrUnavailable = transport.ErrUnavailable
	// ErrCredentials: the venue refused the credentials (401) or their
	// scope (403).
	ErrCredentials = transport.ErrCredentials
)

// recordedOrderError is Place on an acknowledged key whose fresh read
// failed: Order is the copy recorded when the venue acknowledged it, which
// Place returns with it, Err why the read failed. It matches
// ErrRecordedOrder.
type recordedOrderError struct {
	Order *Order
	Err   error
}

// Error says the order is the recorded copy.
func (e *recordedOrderError) Error() string {
	return fmt.Sprintf("broker: order %s is the copy recorded when acknowledged; reading it afresh failed: %v", e.Order.ID, e.Err)
}

// Is matches ErrRecordedOrder.
func (e *recordedOrderError) Is(target error) bool { return target == ErrRecordedOrder }

// Unwrap returns why the fresh read failed.
func (e *recordedOrderError) Unwrap() error { return e.Err }

// noSuchClientOrderError is a client_order_id for which neither the
// intent store nor the venue's orders list shows an order. Intent is the
// store's state for it ("" when the store has no record): a pending or
// unknown intent may still land, so Recover or Place with the same key
// before deciding it is absent. It matches ErrNoSuchOrder.
type noSuchClientOrderError struct {
	ClientOrderID string
	Intent        string
}

// Error describes the order not found.
func (e *noSuchClientOrderError) Error() string {
	if e.Intent == "" {
		return fmt.Sprintf("broker: no order with client_order_id %s", e.ClientOrderID)
	}
	return fmt.Sprintf("broker: no order with client_order_id %s at the venue (the intent is %s)", e.ClientOrderID, e.Intent)
}

// Is matches ErrNoSuchOrder.
func (e *noSuchClientOrderError) Is(target error) bool { return target == ErrNoSuchOrder }
