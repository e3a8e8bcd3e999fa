package orders

import (
	"errors"
	"fmt"

	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/transport"
)

// UnknownOutcomeError is a create whose outcome could not be learned: the
// venue's answer was ambiguous and the lookups that followed could not
// finish (the context ended, the venue stayed unavailable), or the create
// was sent under a random id, which is never sent again. The order may or
// may not exist; look it up by ClientOrderID. It matches
// transport.ErrUnknownOutcome.
type UnknownOutcomeError struct {
	ClientOrderID string
	// Key is the caller's idempotency key, empty for a random id.
	Key string
	Err error
}

// Error implements error.
func (e *UnknownOutcomeError) Error() string {
	return fmt.Sprintf("orders: outcome unknown for client_order_id %s: %v", e.ClientOrderID, e.Err)
}

// Unwrap returns what kept the outcome unknown.
func (e *UnknownOutcomeError) Unwrap() error { return e.Err }

// Is matches transport.ErrUnknownOutcome.
func (e *UnknownOutcomeError) Is(target error) bool { return target == transport.ErrUnknownOutcome }

// RejectedError is a create the venue refused: nothing was placed. It
// matches transport.ErrRejected; Err, when set, is the venue's
// *transport.StatusError with its field paths.
type RejectedError struct {
	ClientOrderID string
	Reason        string
	Err           error
}

// Error implements error.
func (e *RejectedError) Error() string {
	return fmt.Sprintf("orders: client_order_id %s rejected: %s", e.ClientOrderID, e.Reason)
}

// Unwrap returns the venue's answer, if any.
func (e *RejectedError) Unwrap() error { return e.Err }

// Is matches transport.ErrRejected.
func (e *RejectedError) Is(target error) bool { return target == transport.ErrRejected }

// NotPlacedError is a create known not to have been placed: nothing was
// sent, or every signature it was sent with has expired and no order with
// its client_order_id exists. Calling Place again with the same key is
// safe.
type NotPlacedError struct {
	ClientOrderID string
	Reason        string
	Err           error
}

// Error implements error.
func (e *NotPlacedError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("orders: client_order_id %s not placed: %s: %v", e.ClientOrderID, e.Reason, e.Err)
	}
	return fmt.Sprintf("orders: client_order_id %s not placed: %s", e.ClientOrderID, e.Reason)
}

// Unwrap returns the cause, if any.
func (e *NotPlacedError) Unwrap() error { return e.Err }

// KeyConflictError is an idempotency key reused for a different request:
// a key names one order. Nothing was sent. It matches
// transport.ErrInvalidRequest.
type KeyConflictError struct {
	Key           string
	ClientOrderID string
}

// Error implements error.
func (e *KeyConflictError) Error() string {
	return fmt.Sprintf("orders: idempotency key %q already names a different order (client_order_id %s); use a new key (nothing was sent)", e.Key, e.ClientOrderID)
}

// Is matches transport.ErrInvalidRequest.
func (e *KeyConflictError) Is(target error) bool { return target == transport.ErrInvalidRequest }

// InProgressError is a Place or Recover that found the intent held by
// another process sharing the store: this process sent nothing and leaves
// the intent to its holder. Place again later returns the settled order.
// It matches idempotency.ErrInProgress and, since this process cannot tell
// the outcome yet, transport.ErrUnknownOutcome.
type InProgressError struct {
	ClientOrderID string
	Err           error
}

// Error implements error.
func (e *InProgressError) Error() string {
	return fmt.Sprintf("orders: client_order_id %s is in progress in another process (nothing was sent here): %v", e.ClientOrderID, e.Err)
}

// Unwrap returns the store's refusal.
func (e *InProgressError) Unwrap() error { return e.Err }

// Is matches idempotency.ErrInProgress and transport.ErrUnknownOutcome.
func (e *InProgressError) Is(target error) bool {
	return target == idempotency.ErrInProgress || target == transport.ErrUnknownOutcome
}

// ErrLookupIncomplete: a lookup could not read every page of orders, so it
// cannot say an order is absent.
var ErrLookupIncomplete = errors.New("orders: lookup could not read every page")
