package orders

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/transport"
)

// ErrNotPlaced: no order exists for the client_order_id and none can
// appear from what this Place sent. Calling Place again with the same key
// is safe.
//
// Each error Place returns that is an *Error matches exactly one of
// ErrNotPlaced, transport.ErrRejected, transport.ErrUnknownOutcome,
// transport.ErrNotSent and transport.ErrInvalidRequest, except one of
// Kind idempotency.ErrInProgress, which matches idempotency.ErrInProgress
// and transport.ErrUnknownOutcome, and one of Kind ErrHalted, which
// matches ErrHalted and transport.ErrNotSent (package broker names all of
// them). See
// the package documentation for the switch to write.
var ErrNotPlaced = errors.New("orders: not placed")

// Error is every failure of Place and Recover this package decides: one
// type, whose Kind is the sentinel it matches with errors.Is. Package
// broker returns it as it is.
//
//	Kind                         the outcome
//	transport.ErrUnknownOutcome  the create may or may not have taken effect
//	idempotency.ErrInProgress    another holder has the intent
//	transport.ErrRejected        the venue said no; nothing is live
//	ErrNotPlaced                 nothing placed: the same key again is safe
//	transport.ErrNotSent         nothing sent by this call
//	ErrHalted                    the store is halted; nothing sent by this call
//	transport.ErrInvalidRequest  the key names a different order
//
// An Error of Kind transport.ErrUnknownOutcome is a create whose outcome
// could not be learned: the venue's answer was ambiguous and the lookups
// that followed could not settle it (the context ended, the venue stayed
// unavailable, a lookup could not read every order, or re-sends are
// forbidden), or the venue answered 2xx but its order could not be read
// (Answered2xx: an order exists), or the create was sent once under a
// random id. Look the order up by ClientOrderID, or call Place again with
// the same Key; never place it again under a new key.
//
// Kind idempotency.ErrInProgress: the intent is held by another Place or
// Recover sharing the store, in this process or another (the store's
// claim, idempotency.Store), or this call lost its claim on it (the store
// refused a write with idempotency.ErrClaimLost): the intent is its
// holder's to settle, and this call sends nothing more for it. What this
// call sent before, if anything, may have taken effect, and the holder may
// send it again: the outcome is not known here. Place again later returns
// the settled order.
//
// Kind transport.ErrRejected: the venue refused the create, or reports
// its order failed. Err, when set, is the venue's *transport.StatusError
// with its field paths.
//
// Kind ErrNotPlaced: every signature the create was sent with has expired
// and a complete lookup found no order with its client_order_id, or the
// intent was settled so earlier and re-sends are forbidden
// (MaxSends 1).
//
// Kind transport.ErrNotSent: the intent could not be recorded (the store
// failed, or refuses because it cannot be trusted), a lookup needed
// before the first send failed, or the rate budget or the context ended
// before the create left. Nothing of this call reached the venue, but
// whether an earlier call's create of the same key exists is not known
// here: Place again later with the same key, never a new one.
//
// Kind ErrHalted: the intent store is halted (Placer.Halt), so the create
// was refused before it was sent; it matches transport.ErrNotSent too,
// with the same meaning. Place again with the same key once the store is
// resumed.
//
// Kind transport.ErrInvalidRequest: the idempotency key was used for a
// different request (a key names one order). Nothing was sent. State and
// OrderID say what the key names, as the store knows it: an order the
// venue holds (acknowledged), one it refused (rejected), none (not
// placed), or a create whose outcome is not settled (pending, unknown):
// then Recover, OrderByKey or Place with the original request settles it,
// and a new key would risk a second order.
//
// # Matching
//
// Each Kind matches itself only, and none unwraps to its cause, with
// these exceptions. Kind ErrHalted matches transport.ErrNotSent too.
// Kind idempotency.ErrInProgress matches
// transport.ErrUnknownOutcome too, so that a bot that checks only that
// treats it safely, and unwraps to Err, the store's refusal (an error
// matching idempotency.ErrInProgress or idempotency.ErrClaimLost, or a
// plain description), never a transport or context error. Kind
// transport.ErrNotSent unwraps to Err, what stopped the send (a store's
// or the venue's error, or the context's): a store or venue outage
// matches transport.ErrUnavailable too. Otherwise the cause — a 503
// *transport.StatusError, a transport error matching a sentinel such as
// transport.ErrUnavailable that reads "safe to retry" — is kept in Err,
// to read, not to match: an outcome of this package never inherits it.
type Error struct {
	// Kind is the sentinel the error matches (see the table).
	Kind error
	// ClientOrderID is the order's client_order_id.
	ClientOrderID string
	// Key is the caller's idempotency key; empty for a random id, and
	// where Place or Recover did not have it.
	Key string
	// Answered2xx (Kind transport.ErrUnknownOutcome only): the venue
	// acknowledged the create with a 2xx; the order exists, but neither
	// the answer nor a lookup could read it.
	Answered2xx bool
	// Reason says what happened, in words (Kinds ErrNotPlaced,
	// transport.ErrRejected and transport.ErrNotSent).
	Reason string
	// State and OrderID (Kind transport.ErrInvalidRequest only) are the
	// state of the intent the key names and its order's id, if known.
	State   idempotency.State
	OrderID string
	// Err is the cause; see Matching for when it is unwrapped.
	Err error
}

// Error describes the outcome, the client_order_id and the cause.
func (e *Error) Error() string {
	id := e.subject()
	switch e.Kind {
	case transport.ErrUnknownOutcome:
		if e.Answered2xx {
			return fmt.Sprintf("orders: outcome unknown for %s: the venue acknowledged the create with a 2xx, so an order exists, but it could not be read: %v", id, e.Err)
		}
		return fmt.Sprintf("orders: outcome unknown for %s (it may have been placed; do not place it under a new key): %v", id, e.Err)
	case idempotency.ErrInProgress:
		return fmt.Sprintf("orders: %s is in progress elsewhere (its outcome is not known here): %v", id, e.Err)
	case transport.ErrRejected:
		msg := fmt.Sprintf("orders: %s rejected: %s", id, e.Reason)
		if e.Err != nil && !strings.Contains(e.Reason, e.Err.Error()) { // the placer's Reason is the venue's answer
			return withCause(msg, e.Err)
		}
		return msg
	case ErrNotPlaced:
		return withCause(fmt.Sprintf("orders: %s not placed: %s", id, e.Reason), e.Err)
	case transport.ErrNotSent:
		return withCause(fmt.Sprintf("orders: %s: nothing was sent: %s", id, e.Reason), e.Err)
	case ErrHalted:
		return withCause(fmt.Sprintf("orders: %s not sent: %s", id, e.Reason), e.Err)
	case transport.ErrInvalidRequest:
		return fmt.Sprintf("orders: idempotency key %q already names a different request (client_order_id %s), %s; nothing was sent", e.Key, e.ClientOrderID, e.named())
	}
	return withCause(fmt.Sprintf("orders: %s: %v: %s", id, e.Kind, e.Reason), e.Err)
}

// named says what a key used for another request names.
func (e *Error) named() string {
	switch e.State {
	case idempotency.Acknowledged:
		return fmt.Sprintf("whose order %s the venue holds", e.OrderID)
	case idempotency.Rejected:
		return "whose create the venue rejected (no order)"
	case idempotency.NotPlaced:
		return "whose create was settled as not placed (no order)"
	}
	return "whose create may have been placed (outcome not settled: Recover or look the key up before placing anything else for it)"
}

// subject names the order: by client_order_id, or by key before one is
// known.
func (e *Error) subject() string {
	switch {
	case e.ClientOrderID != "":
		return "client_order_id " + e.ClientOrderID
	case e.Key != "":
		return fmt.Sprintf("key %q", e.Key)
	}
	return "the order"
}

func withCause(msg string, err error) string {
	if err != nil {
		return msg + ": " + err.Error()
	}
	return msg
}

// Is matches Kind, and, for Kind idempotency.ErrInProgress,
// transport.ErrUnknownOutcome too, and for Kind ErrHalted,
// transport.ErrNotSent too.
func (e *Error) Is(target error) bool {
	return target == e.Kind || (e.Kind == idempotency.ErrInProgress && target == transport.ErrUnknownOutcome) ||
		(e.Kind == ErrHalted && target == transport.ErrNotSent)
}

// Unwrap returns Err for Kind idempotency.ErrInProgress, and for Kind
// transport.ErrNotSent unless Err is a verdict of the venue on a lookup
// (it matches transport.ErrRejected or transport.ErrNotFound): a bot
// reading "rejected" or "not found" would take the order for refused or
// absent, which a refused lookup does not say. It returns nil for every
// other Kind.
func (e *Error) Unwrap() error {
	switch e.Kind {
	case idempotency.ErrInProgress:
		return e.Err
	case transport.ErrNotSent:
		if errors.Is(e.Err, transport.ErrRejected) || errors.Is(e.Err, transport.ErrNotFound) {
			return nil
		}
		return e.Err
	}
	return nil
}

// errLookupIncomplete: a lookup could not see every order it asked for (a
// page or a row it could not decode, a row without client_order_id, an
// order listed twice, or listed both failed and live, a last page without
// next that a read of the orders before it showed was cut short, a
// repeated pagination link, the page cap), so it cannot say an order is
// absent. It appears as the Err of an *Error of Kind
// transport.ErrUnknownOutcome or ErrNotPlaced; those do not match it.
var errLookupIncomplete = errors.New("orders: lookup could not read every order")
