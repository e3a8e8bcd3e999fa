package orders_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/tradewire/tradewire/broker"
	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/orders"
	"github.com/tradewire/tradewire/transport"
)

// classify is the switch the package documentation tells a bot to write,
// in its order.
func classify(err error) string {
	switch {
	case err == nil:
		return "placed"
	case errors.Is(err, broker.ErrInProgress):
		return "in progress"
	case errors.Is(err, broker.ErrUnknownOutcome):
		return "unknown"
	case errors.Is(err, broker.ErrRejected):
		return "rejected"
	case errors.Is(err, orders.ErrNotPlaced):
		return "not placed"
	case errors.Is(err, transport.ErrNotSent):
		return "not sent"
	case errors.Is(err, transport.ErrInvalidRequest):
		return "invalid"
	default:
		return "unknown"
	}
}

// TestTaxonomy: every error Place and Recover return, with the causes
// they carry in practice, × every sentinel a caller might check. Each
// matches exactly its category; an unknown outcome or an in-progress
// intent matches nothing that reads "safe to retry", whatever its cause
// matches.
func TestTaxonomy(t *testing.T) {
	const cid = "f65c0bcd-d663-5ee6-b915-c8819f4272bb"
	s503 := &transport.StatusError{Method: "POST", Path: "/x", StatusCode: 503}
	s429 := &transport.StatusError{Method: "POST", Path: "/x", StatusCode: 429}
	s400 := &transport.StatusError{Method: "POST", Path: "/x", StatusCode: 400}
	s401 := &transport.StatusError{Method: "POST", Path: "/x", StatusCode: 401}
	s404 := &transport.StatusError{Method: "POST", Path: "/x", StatusCode: 404}
	netErr := &transport.NetworkError{Method: "GET", Path: "/x", Attempts: 4, Err: io.ErrUnexpectedEOF}
	tUnknown := &transport.UnknownOutcomeError{Method: "POST", Path: "/x", StatusCode: 503, Err: s503}
	notSent := &transport.NotSentError{Method: "POST", Path: "/x", Err: context.Canceled}
	incomplete := fmt.Errorf("%w: more than 50 pages", orders.ErrLookupIncomplete)

	sentinels := []struct {
		name string
		err  error
	}{
		{"ErrNotPlaced", orders.ErrNotPlaced},
		{"ErrRejected", broker.ErrRejected},
		{"ErrUnknownOutcome", broker.ErrUnknownOutcome},
		{"ErrInProgress", broker.ErrInProgress},
		{"ErrLookupIncomplete", orders.ErrLookupIncomplete},
		{"transport.ErrNotSent", transport.ErrNotSent},
		{"transport.ErrUnavailable", transport.ErrUnavailable},
		{"transport.ErrRateLimited", transport.ErrRateLimited},
		{"transport.ErrNotFound", transport.ErrNotFound},
		{"transport.ErrCredentials", transport.ErrCredentials},
		{"transport.ErrInvalidRequest", transport.ErrInvalidRequest},
		{"transport.ErrForeignURL", transport.ErrForeignURL},
		{"idempotency.ErrClaimLost", idempotency.ErrClaimLost},
		{"idempotency.ErrNotFound", idempotency.ErrNotFound},
		{"context.Canceled", context.Canceled},
		{"context.DeadlineExceeded", context.DeadlineExceeded},
	}
	rows := []struct {
		name     string
		err      error
		category string
		matches  []error
	}{
		{"not sent: the context ended", &orders.NotSentError{ClientOrderID: cid, Reason: "stopped", Err: notSent}, "not sent", []error{transport.ErrNotSent, context.Canceled}},
		{"not sent: the lookup before the first send failed", &orders.NotSentError{ClientOrderID: cid, Reason: "lookup", Err: netErr}, "not sent", []error{transport.ErrNotSent, transport.ErrUnavailable}},
		{"not sent: the intent could not be recorded", &orders.NotSentError{ClientOrderID: cid, Reason: "store", Err: idempotency.ErrClosed}, "not sent", []error{transport.ErrNotSent}},
		{"not sent: the store is unavailable", &orders.NotSentError{ClientOrderID: cid, Reason: "store", Err: fmt.Errorf("redis down: %w", transport.ErrUnavailable)}, "not sent", []error{transport.ErrNotSent, transport.ErrUnavailable}},
		{"not placed: not found after expiry", &orders.NotPlacedError{ClientOrderID: cid, Reason: "not found"}, "not placed", []error{orders.ErrNotPlaced}},
		{"rejected: 400", &orders.RejectedError{ClientOrderID: cid, Reason: "400", Err: s400}, "rejected", []error{broker.ErrRejected}},
		{"rejected: 401", &orders.RejectedError{ClientOrderID: cid, Reason: "401", Err: s401}, "rejected", []error{broker.ErrRejected}},
		{"rejected: 404", &orders.RejectedError{ClientOrderID: cid, Reason: "404", Err: s404}, "rejected", []error{broker.ErrRejected}},
		{"rejected: the order failed", &orders.RejectedError{ClientOrderID: cid, Reason: "failed"}, "rejected", []error{broker.ErrRejected}},
		{"unknown: a 503 to the create", &orders.UnknownOutcomeError{ClientOrderID: cid, Err: tUnknown}, "unknown", []error{broker.ErrUnknownOutcome}},
		{"unknown: a 503 StatusError", &orders.UnknownOutcomeError{ClientOrderID: cid, Err: s503}, "unknown", []error{broker.ErrUnknownOutcome}},
		{"unknown: a 429 StatusError", &orders.UnknownOutcomeError{ClientOrderID: cid, Err: s429}, "unknown", []error{broker.ErrUnknownOutcome}},
		{"unknown: the lookup's venue was unavailable", &orders.UnknownOutcomeError{ClientOrderID: cid, Key: "k", Err: netErr}, "unknown", []error{broker.ErrUnknownOutcome}},
		{"unknown: a 404 lookup", &orders.UnknownOutcomeError{ClientOrderID: cid, Key: "k", Err: s404}, "unknown", []error{broker.ErrUnknownOutcome}},
		{"unknown: an incomplete lookup", &orders.UnknownOutcomeError{ClientOrderID: cid, Key: "k", Err: incomplete}, "unknown", []error{broker.ErrUnknownOutcome}},
		{"unknown: the context ended while waiting", &orders.UnknownOutcomeError{ClientOrderID: cid, Key: "k", Err: context.DeadlineExceeded}, "unknown", []error{broker.ErrUnknownOutcome}},
		{"unknown: a 2xx too large", &orders.UnknownOutcomeError{ClientOrderID: cid, Key: "k", Answered2xx: true,
			Err: &transport.ResponseTooLargeError{Method: "POST", Path: "/x", StatusCode: 201, Limit: 1}}, "unknown", []error{broker.ErrUnknownOutcome}},
		{"unknown: a resend not sent", &orders.UnknownOutcomeError{ClientOrderID: cid, Key: "k", Err: notSent}, "unknown", []error{broker.ErrUnknownOutcome}},
		{"in progress: held by another process", &orders.InProgressError{ClientOrderID: cid, Err: fmt.Errorf("held by b/42: %w", idempotency.ErrInProgress)},
			"in progress", []error{broker.ErrInProgress, broker.ErrUnknownOutcome}},
		{"in progress: the claim was lost", &orders.InProgressError{ClientOrderID: cid, Err: idempotency.ErrClaimLost},
			"in progress", []error{broker.ErrInProgress, broker.ErrUnknownOutcome, idempotency.ErrClaimLost}},
		{"key conflict", &orders.KeyConflictError{Key: "k", ClientOrderID: cid}, "invalid", []error{transport.ErrInvalidRequest}},
		{"validation", &broker.ArgumentError{Field: "symbol", Reason: "bad"}, "invalid", []error{transport.ErrInvalidRequest}},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			for _, s := range sentinels {
				want := false
				for _, m := range row.matches {
					want = want || m == s.err
				}
				if got := errors.Is(row.err, s.err); got != want {
					t.Errorf("errors.Is(%T, %s) = %v, want %v", row.err, s.name, got, want)
				}
			}
			wrapped := fmt.Errorf("bot: %w", row.err)
			if got := classify(wrapped); got != row.category {
				t.Errorf("the documented switch says %q, want %q", got, row.category)
			}
		})
	}
}
