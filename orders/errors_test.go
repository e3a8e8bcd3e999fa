package orders_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tradewire/tradewire/broker"
	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/orders"
	"github.com/tradewire/tradewire/signing"
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

// TestTaxonomy: every Kind of error Place and Recover return, with the
// causes they carry in practice (the transport's errors are real ones), ×
// every sentinel a caller might check. Each matches exactly its category;
// an unknown outcome or an in-progress intent matches nothing that reads
// "safe to retry", whatever its cause matches.
func TestTaxonomy(t *testing.T) {
	const cid = "f65c0bcd-d663-5ee6-b915-c8819f4272bb"
	s503 := &transport.StatusError{Method: "POST", Path: "/x", StatusCode: 503}
	s429 := &transport.StatusError{Method: "POST", Path: "/x", StatusCode: 429}
	s400 := &transport.StatusError{Method: "POST", Path: "/x", StatusCode: 400}
	s401 := &transport.StatusError{Method: "POST", Path: "/x", StatusCode: 401}
	s404 := &transport.StatusError{Method: "POST", Path: "/x", StatusCode: 404}
	tr := transportErrors(t)
	netErr, tUnknown, notSent := tr.network, tr.unknown503, tr.notSent
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
		{"ErrHalted", broker.ErrHalted},
		{"transport.ErrNotSent", transport.ErrNotSent},
		{"transport.ErrUnavailable", transport.ErrUnavailable},
		{"transport.ErrRateLimited", transport.ErrRateLimited},
		{"transport.ErrNotFound", transport.ErrNotFound},
		{"transport.ErrCredentials", transport.ErrCredentials},
		{"transport.ErrInvalidRequest", transport.ErrInvalidRequest},
		{"transport.ErrInvalidRequest", transport.ErrInvalidRequest},
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
		{"not sent: the context ended", &orders.Error{Kind: transport.ErrNotSent, ClientOrderID: cid, Reason: "stopped", Err: notSent}, "not sent", []error{transport.ErrNotSent, context.Canceled}},
		{"not sent: the lookup before the first send failed", &orders.Error{Kind: transport.ErrNotSent, ClientOrderID: cid, Reason: "lookup", Err: netErr}, "not sent", []error{transport.ErrNotSent, transport.ErrUnavailable}},
		{"not sent: the lookup before the first send was refused 400", &orders.Error{Kind: transport.ErrNotSent, ClientOrderID: cid, Reason: "lookup", Err: s400}, "not sent", []error{transport.ErrNotSent}},
		{"not sent: the lookup before the first send was answered 404", &orders.Error{Kind: transport.ErrNotSent, ClientOrderID: cid, Reason: "lookup", Err: s404}, "not sent", []error{transport.ErrNotSent}},
		{"not sent: the lookup before the first send was refused 401", &orders.Error{Kind: transport.ErrNotSent, ClientOrderID: cid, Reason: "lookup", Err: s401}, "not sent", []error{transport.ErrNotSent, transport.ErrCredentials}},
		{"not sent: the intent could not be recorded", &orders.Error{Kind: transport.ErrNotSent, ClientOrderID: cid, Reason: "store", Err: idempotency.ErrClosed}, "not sent", []error{transport.ErrNotSent}},
		{"not sent: the store is unavailable", &orders.Error{Kind: transport.ErrNotSent, ClientOrderID: cid, Reason: "store", Err: fmt.Errorf("redis down: %w", transport.ErrUnavailable)}, "not sent", []error{transport.ErrNotSent, transport.ErrUnavailable}},
		{"halted: refused before it was sent", &orders.Error{Kind: orders.ErrHalted, ClientOrderID: cid, Reason: "refused", Err: errors.New("the intent store is halted")}, "not sent", []error{orders.ErrHalted, transport.ErrNotSent}},
		{"not placed: not found after expiry", &orders.Error{Kind: orders.ErrNotPlaced, ClientOrderID: cid, Reason: "not found"}, "not placed", []error{orders.ErrNotPlaced}},
		{"rejected: 400", &orders.Error{Kind: transport.ErrRejected, ClientOrderID: cid, Reason: "400", Err: s400}, "rejected", []error{broker.ErrRejected}},
		{"rejected: 401", &orders.Error{Kind: transport.ErrRejected, ClientOrderID: cid, Reason: "401", Err: s401}, "rejected", []error{broker.ErrRejected}},
		{"rejected: 404", &orders.Error{Kind: transport.ErrRejected, ClientOrderID: cid, Reason: "404", Err: s404}, "rejected", []error{broker.ErrRejected}},
		{"rejected: the order failed", &orders.Error{Kind: transport.ErrRejected, ClientOrderID: cid, Reason: "failed"}, "rejected", []error{broker.ErrRejected}},
		{"unknown: a 503 to the create", &orders.Error{Kind: transport.ErrUnknownOutcome, ClientOrderID: cid, Err: tUnknown}, "unknown", []error{broker.ErrUnknownOutcome}},
		{"unknown: a 503 StatusError", &orders.Error{Kind: transport.ErrUnknownOutcome, ClientOrderID: cid, Err: s503}, "unknown", []error{broker.ErrUnknownOutcome}},
		{"unknown: a 429 StatusError", &orders.Error{Kind: transport.ErrUnknownOutcome, ClientOrderID: cid, Err: s429}, "unknown", []error{broker.ErrUnknownOutcome}},
		{"unknown: the lookup's venue was unavailable", &orders.Error{Kind: transport.ErrUnknownOutcome, ClientOrderID: cid, Key: "k", Err: netErr}, "unknown", []error{broker.ErrUnknownOutcome}},
		{"unknown: a 404 lookup", &orders.Error{Kind: transport.ErrUnknownOutcome, ClientOrderID: cid, Key: "k", Err: s404}, "unknown", []error{broker.ErrUnknownOutcome}},
		{"unknown: an incomplete lookup", &orders.Error{Kind: transport.ErrUnknownOutcome, ClientOrderID: cid, Key: "k", Err: incomplete}, "unknown", []error{broker.ErrUnknownOutcome}},
		{"unknown: the context ended while waiting", &orders.Error{Kind: transport.ErrUnknownOutcome, ClientOrderID: cid, Key: "k", Err: context.DeadlineExceeded}, "unknown", []error{broker.ErrUnknownOutcome}},
		{"unknown: a 2xx too large", &orders.Error{Kind: transport.ErrUnknownOutcome, ClientOrderID: cid, Key: "k", Answered2xx: true,
			Err: tr.tooLarge2xx}, "unknown", []error{broker.ErrUnknownOutcome}},
		{"unknown: a resend not sent", &orders.Error{Kind: transport.ErrUnknownOutcome, ClientOrderID: cid, Key: "k", Err: notSent}, "unknown", []error{broker.ErrUnknownOutcome}},
		{"in progress: held by another process", &orders.Error{Kind: idempotency.ErrInProgress, ClientOrderID: cid, Err: fmt.Errorf("held by b/42: %w", idempotency.ErrInProgress)},
			"in progress", []error{broker.ErrInProgress, broker.ErrUnknownOutcome}},
		{"in progress: the claim was lost", &orders.Error{Kind: idempotency.ErrInProgress, ClientOrderID: cid, Err: idempotency.ErrClaimLost},
			"in progress", []error{broker.ErrInProgress, broker.ErrUnknownOutcome, idempotency.ErrClaimLost}},
		{"key conflict", &orders.Error{Kind: transport.ErrInvalidRequest, Key: "k", ClientOrderID: cid}, "invalid", []error{transport.ErrInvalidRequest}},
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
			if e, ok := row.err.(*orders.Error); ok {
				// Only in progress (to the store's refusal) and not sent
				// (to what stopped it) unwrap; no other cause is reachable.
				unwraps := e.Kind == broker.ErrInProgress ||
					(e.Kind == broker.ErrNotSent && !errors.Is(e.Err, transport.ErrRejected) && !errors.Is(e.Err, transport.ErrNotFound))
				if got := errors.Unwrap(e); (got != nil) != unwraps || (unwraps && got != e.Err) {
					t.Errorf("errors.Unwrap(Kind %v) = %v, want the cause only for in progress and not sent", e.Kind, got)
				}
				var se *transport.StatusError
				if errors.As(e, &se) && !unwraps {
					t.Errorf("errors.As reached the %d behind Kind %v", se.StatusCode, e.Kind)
				}
				if msg := e.Error(); !strings.Contains(msg, cid) || (e.Err != nil && !strings.Contains(msg, e.Err.Error())) {
					t.Errorf("message %q does not name the client_order_id and the cause", msg)
				}
			}
			wrapped := fmt.Errorf("bot: %w", row.err)
			if got := classify(wrapped); got != row.category {
				t.Errorf("the documented switch says %q, want %q", got, row.category)
			}
		})
	}
}

// transportErrs are errors a transport.Client returns in practice,
// made by one against a venue that answers as each needs.
type transportErrs struct {
	network     error // a GET that failed below HTTP on every attempt
	unknown503  error // a POST answered 503
	notSent     error // a POST whose BeforeSend hook saw the context end
	tooLarge2xx error // a POST answered 201 with a body over the limit
}

func transportErrors(t *testing.T) transportErrs {
	t.Helper()
	venue := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/drop/":
			if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
				conn.Close()
			}
		case "/large/":
			w.WriteHeader(http.StatusCreated)
			io.WriteString(w, `{"id":"an order too large to read"}`)
		default:
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(venue.Close)
	key, err := signing.ParsePrivateKey("xQnTJVeQLmw1/Mg2YimEViSpw/SdJcgNXZ5kQkAXNPU=")
	if err != nil {
		t.Fatal(err)
	}
	signer, err := signing.New("rh-api-6148effc-c0b1-486c-8940-a1d099456be6", key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := transport.New(venue.URL, signer, transport.Config{RatePerMinute: -1, MaxResponseBytes: 8, Retry: &transport.RetryPolicy{MaxAttempts: 4}}) // no waits between attempts
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var e transportErrs
	_, e.network = c.Get(ctx, "/drop/")
	_, e.unknown503 = c.Do(ctx, "POST", "/503/", []byte(`{}`))
	_, e.notSent = c.Send(ctx, http.MethodPost, "/503/", []byte(`{}`), func(time.Time) error { return context.Canceled })
	resp, tooLarge := c.Do(ctx, "POST", "/large/", []byte(`{}`))
	e.tooLarge2xx = tooLarge
	switch {
	case !errors.Is(e.network, transport.ErrUnavailable):
		t.Fatalf("GET of a dropped connection: %v, want unavailable", e.network)
	case !errors.Is(e.unknown503, transport.ErrUnknownOutcome):
		t.Fatalf("POST answered 503: %v, want an unknown outcome", e.unknown503)
	case !errors.Is(e.notSent, transport.ErrNotSent) || !errors.Is(e.notSent, context.Canceled):
		t.Fatalf("POST refused by its hook: %v, want not sent, canceled", e.notSent)
	case !errors.Is(tooLarge, transport.ErrUnknownOutcome) || resp == nil || resp.StatusCode != http.StatusCreated:
		t.Fatalf("POST answered 201 too large: %v, %v; want an unknown outcome with the answer", resp, tooLarge)
	}
	return e
}
