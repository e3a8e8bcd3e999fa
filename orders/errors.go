package orders

import (
	"errors"
	"fmt"

	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/transport"
)

// ErrNotPlaced: no order exists for the client_order_id and none can
// appear from what this Place sent. Calling Place again with the same key
// is safe.
//
// Each error Place returns matches exactly one of ErrNotPlaced,
// transport.ErrRejected, transport.ErrUnknownOutcome and
// transport.ErrInvalidRequest, except *InProgressError, which matches
// idempotency.ErrInProgress and transport.ErrUnknownOutcome (package
// broker names all of them). See the package documentation for the
// switch to write.
var ErrNotPlaced = errors.New("orders: not placed")

// No error type of this package unwraps to a cause from below the store:
// a 503 *transport.StatusError or a transport error matches sentinels
// such as transport.ErrUnavailable that read "safe to retry", which an
// outcome of this package must never inherit. The cause is kept in the
// Err field, to read, not to match. The one exception is InProgressError,
// which unwraps to the store's refusal, never a transport error.

// UnknownOutcomeError is a create whose outcome could not be learned: it
// may or may not have taken effect. The venue's answer was ambiguous and
// the lookups that followed could not settle it (the context ended, the
// venue stayed unavailable, a lookup could not read every order, or
// re-sends are forbidden), or the venue answered 2xx but its order could
// not be read (Answered2xx: an order exists), or the create was sent once
// under a random id. Look the order up by ClientOrderID, or call Place
// again with the same Key; never place it again under a new key.
//
// It matches transport.ErrUnknownOutcome only.
type UnknownOutcomeError struct {
	ClientOrderID string
	// Key is the caller's idempotency key, empty for a random id.
	Key string
	// Answered2xx: the venue acknowledged the create with a 2xx; the order
	// exists, but neither the answer nor a lookup could read it.
	Answered2xx bool
	// Err is what kept the outcome unknown. It is not unwrapped.
	Err error
}

// Error implements error.
func (e *UnknownOutcomeError) Error() string {
	if e.Answered2xx {
		return fmt.Sprintf("orders: outcome unknown for client_order_id %s: the venue acknowledged the create with a 2xx, so an order exists, but it could not be read: %v", e.ClientOrderID, e.Err)
	}
	return fmt.Sprintf("orders: outcome unknown for client_order_id %s (it may have been placed; do not place it under a new key): %v", e.ClientOrderID, e.Err)
}

// Is matches transport.ErrUnknownOutcome.
func (e *UnknownOutcomeError) Is(target error) bool { return target == transport.ErrUnknownOutcome }

// RejectedError is a create the venue refused, or whose order the venue
// reports failed: nothing is live. Err, when set, is the venue's
// *transport.StatusError with its field paths; it is not unwrapped.
//
// It matches transport.ErrRejected only.
type RejectedError struct {
	ClientOrderID string
	Reason        string
	Err           error
}

// Error implements error.
func (e *RejectedError) Error() string {
	return fmt.Sprintf("orders: client_order_id %s rejected: %s", e.ClientOrderID, e.Reason)
}

// Is matches transport.ErrRejected.
func (e *RejectedError) Is(target error) bool { return target == transport.ErrRejected }

// NotPlacedError is a create known not to have been placed: nothing was
// sent (the intent could not be recorded, the rate budget or the context
// ended before the send, a lookup before the first send failed), or every
// signature it was sent with has expired and a complete lookup found no
// order with its client_order_id. Calling Place again with the same key
// is safe. Err is the cause, if any; it is not unwrapped.
//
// It matches ErrNotPlaced only.
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

// Is matches ErrNotPlaced.
func (e *NotPlacedError) Is(target error) bool { return target == ErrNotPlaced }

// NotSentError is a Place that sent nothing: the intent could not be
// recorded (the store failed, or refuses because it cannot be trusted),
// a lookup needed before the first send failed, or the rate budget or
// the context ended before the create left. Nothing of this call reached
// the venue, but whether an earlier call's create of the same key exists
// is not known here: Place again later with the same key, never a new
// one.
//
// It matches transport.ErrNotSent, and whatever Err matches: a store or
// venue outage matches transport.ErrUnavailable.
type NotSentError struct {
	ClientOrderID string
	Reason        string
	Err           error
}

// Error implements error.
func (e *NotSentError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("orders: client_order_id %s: nothing was sent: %s: %v", e.ClientOrderID, e.Reason, e.Err)
	}
	return fmt.Sprintf("orders: client_order_id %s: nothing was sent: %s", e.ClientOrderID, e.Reason)
}

// Is matches transport.ErrNotSent.
func (e *NotSentError) Is(target error) bool { return target == transport.ErrNotSent }

// Unwrap returns what stopped the send: a store's or the venue's error,
// or the context's.
func (e *NotSentError) Unwrap() error { return e.Err }

// KeyConflictError is an idempotency key reused for a different request:
// a key names one order. Nothing was sent. It matches
// transport.ErrInvalidRequest only.
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
// another process sharing the store (or, when its context ended while
// waiting, by another Place of the key in this process), or lost its claim
// on it (the store
// refused a write with idempotency.ErrClaimLost): the intent is its
// holder's to settle, and this process sends nothing more for it. What
// this process sent before, if anything, may have taken effect, and the
// holder may send it again: the outcome is not known here. Place again
// later returns the settled order.
//
// It matches idempotency.ErrInProgress and transport.ErrUnknownOutcome, and nothing that reads
// "safe to retry": a bot that checks only transport.ErrUnknownOutcome treats it
// safely. It unwraps to Err, the store's refusal (an error matching
// idempotency.ErrInProgress or idempotency.ErrClaimLost, such as a
// redisstore.InProgressError naming the holder, or a plain description),
// never to a transport or context error.
type InProgressError struct {
	ClientOrderID string
	Err           error
}

// Error implements error.
func (e *InProgressError) Error() string {
	return fmt.Sprintf("orders: client_order_id %s is in progress in another process (its outcome is not known here): %v", e.ClientOrderID, e.Err)
}

// Unwrap returns the store's refusal.
func (e *InProgressError) Unwrap() error { return e.Err }

// Is matches idempotency.ErrInProgress and transport.ErrUnknownOutcome.
func (e *InProgressError) Is(target error) bool {
	return target == idempotency.ErrInProgress || target == transport.ErrUnknownOutcome
}

// ErrLookupIncomplete: a lookup could not see every order it asked for (a
// page or a row it could not decode, a row without client_order_id, a
// pagination link that vanished or repeated, the page cap), so it cannot
// say an order is absent. It appears as the Err of an
// *UnknownOutcomeError or *NotPlacedError; those do not match it.
var ErrLookupIncomplete = errors.New("orders: lookup could not read every order")
