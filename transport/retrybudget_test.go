package transport

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/jonboulle/clockwork"
)

// An outage spends the retry budget, after which a failed GET is not
// tried again and says why; successes fill the budget back.
func TestRetryBudgetBoundsAnOutage(t *testing.T) {
	ctx := testContext(t)
	clock := clockwork.NewFakeClockAt(t0)
	down := true
	venue := &scripted{next: func(string, string) int {
		if down {
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	}}
	policy := RetryPolicy{MaxAttempts: 4} // no delays: the outage is all that counts
	c, err := New("https://venue.example", testSigner(t), Config{Clock: clock, RoundTripper: venue, RatePerMinute: -1, Retry: &policy})
	if err != nil {
		t.Fatal(err)
	}
	const gets = 50
	refused := 0
	for i := 0; i < gets; i++ {
		_, err := c.Get(ctx, pathOrders)
		if !errors.Is(err, ErrUnavailable) {
			t.Fatalf("GET %d: %v, want ErrUnavailable", i, err)
		}
		var se *StatusError
		if !errors.As(err, &se) || se.StatusCode != 503 {
			t.Fatalf("GET %d: %v does not unwrap to the 503", i, err)
		}
		if errors.Is(err, ErrRetryBudget) {
			refused++
			if !strings.Contains(err.Error(), "retry budget") {
				t.Fatalf("the error does not say the budget stopped it: %v", err)
			}
		}
	}
	// 500 tokens at 5 a retry: 100 retries, 3 a GET for the first 33
	// GETs, 1 for the 34th, none after.
	attempts := venue.attempts()
	t.Logf("%d GETs in an outage: %d attempts with the retry budget (%d without), %d refused a retry", gets, attempts, gets*policy.MaxAttempts, refused)
	if want := gets + defaultRetryBudget/retryCost; attempts != want {
		t.Fatalf("%d attempts at the venue, want %d (one each plus the budget's %d retries)", attempts, want, defaultRetryBudget/retryCost)
	}
	if refused != gets-33 {
		t.Fatalf("%d GETs refused a retry, want %d", refused, gets-33)
	}
	if left := c.retries.left(); left != 0 {
		t.Fatalf("budget left: %d", left)
	}

	// Five successes at the first attempt pay for one retry again.
	down = false
	for i := 0; i < 5; i++ {
		if _, err := c.Get(ctx, pathOrders); err != nil {
			t.Fatal(err)
		}
	}
	if left := c.retries.left(); left != 5 {
		t.Fatalf("after 5 successes the budget holds %d, want 5", left)
	}
	n := 0
	venue.next = func(string, string) int {
		n++
		if n == 1 {
			return http.StatusBadGateway
		}
		return http.StatusOK
	}
	if _, err := c.Get(ctx, pathOrders); err != nil {
		t.Fatalf("a GET the budget could retry: %v", err)
	}
	// The retry that succeeded gave back what it cost.
	if left := c.retries.left(); left != 5 {
		t.Fatalf("after a retry that succeeded the budget holds %d, want 5", left)
	}
	// Writes never spend the budget, and a success never fills it past
	// its size.
	for i := 0; i < 600; i++ {
		if _, err := c.Do(ctx, "POST", pathOrders, []byte("{}")); err != nil {
			t.Fatal(err)
		}
	}
	if left := c.retries.left(); left != defaultRetryBudget {
		t.Fatalf("after 600 successes the budget holds %d, want %d", left, defaultRetryBudget)
	}
}

// A failure below HTTP costs twice an answer's retry; a negative
// RetryBudget turns the budget off.
func TestRetryBudgetOptions(t *testing.T) {
	ctx := testContext(t)
	clock := clockwork.NewFakeClockAt(t0)
	venue := &scripted{next: func(string, string) int { return http.StatusServiceUnavailable }}
	off, err := New("https://venue.example", testSigner(t), Config{Clock: clock, RoundTripper: venue, RatePerMinute: -1, Retry: &RetryPolicy{MaxAttempts: 4}, RetryBudget: -1})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 200; i++ {
		if _, err := off.Get(ctx, pathOrders); errors.Is(err, ErrRetryBudget) {
			t.Fatalf("GET %d: %v with the budget off", i, err)
		}
	}
	if got := venue.attempts(); got != 800 {
		t.Fatalf("budget off: %d attempts, want 800", got)
	}
	b := newRetryBudget(20)
	if !b.take(retryTimeoutCost) || !b.take(retryTimeoutCost) || b.take(retryCost) {
		t.Fatalf("20 tokens paid for other than two retries after failures below HTTP (left %d)", b.left())
	}
}
