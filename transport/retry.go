package transport

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// RetryPolicy says how often and how patiently a GET is tried again. POSTs
// and other writes are never tried again, whatever the policy.
//
// The zero value makes one attempt and never retries.
type RetryPolicy struct {
	// MaxAttempts is the total number of attempts, the first included.
	// Values below 1 mean 1.
	MaxAttempts int
	// BaseDelay is the wait before the second attempt; each later wait
	// doubles it.
	BaseDelay time.Duration
	// MaxDelay caps every wait, including one asked for by Retry-After.
	MaxDelay time.Duration
	// Jitter, when set, draws each computed wait uniformly from
	// [0, computed] ("full jitter"). It spreads retries of many processes
	// sharing one API key so they do not return in lockstep. A Retry-After
	// from the venue is never jittered.
	Jitter bool
}

func (p RetryPolicy) attempts() int { return max(1, p.MaxAttempts) }

// backoff returns the wait before attempt number next (2 for the first
// retry) and why it was chosen. A valid Retry-After replaces the computed
// delay, clamped to MaxDelay.
func (p RetryPolicy) backoff(next int, retryAfter time.Duration, hasRetryAfter bool) (time.Duration, string) {
	if hasRetryAfter {
		if retryAfter > p.MaxDelay {
			return max(0, p.MaxDelay), "retry-after clamped to cap"
		}
		return retryAfter, "retry-after"
	}
	d := p.BaseDelay
	for i := 2; i < next && d < p.MaxDelay; i++ {
		d *= 2
	}
	reason := "exponential backoff"
	if d > p.MaxDelay {
		d = p.MaxDelay
		reason = "exponential backoff at cap"
	}
	d = max(0, d)
	if p.Jitter && d > 0 {
		d = time.Duration(rand.Int64N(int64(d) + 1))
		reason += " with full jitter"
	}
	return d, reason
}

// maxRetryAfter bounds the parsed value so that arithmetic cannot overflow;
// it is clamped to the policy's cap anyway.
const maxRetryAfter = 24 * time.Hour

// parseRetryAfter reads the delta-seconds form of Retry-After: one or more
// ASCII digits, optionally surrounded by spaces. Every other form — an
// HTTP-date, a sign, a fraction, NaN, empty — is ignored (ok == false), so
// that the computed backoff applies and no clock agreement with the venue
// is needed.
func parseRetryAfter(v string) (d time.Duration, ok bool) {
	v = strings.Trim(v, " \t")
	if v == "" {
		return 0, false
	}
	var secs int64
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if secs < int64(maxRetryAfter/time.Second) {
			secs = secs*10 + int64(c-'0')
		}
	}
	return min(time.Duration(secs)*time.Second, maxRetryAfter), true
}

// Why a request is or is not sent again.
const (
	reasonRetryableStatus = "retryable status"
	reasonNetworkError    = "failed below HTTP"
	reasonNotGET          = "only GET is retried"
	reasonFinalStatus     = "status is final"
	reasonSuccess         = "success"
	reasonCanceled        = "context done"
)

// shouldRetry is the one place that decides whether a request may be sent
// again. It says yes only for a GET that got 429, 500, 502, 503 or 504, or
// that failed below HTTP (a GET has no effect to duplicate) while its
// context is still live. Everything else is final.
func shouldRetry(ctx context.Context, method string, status int, err error) (bool, string) {
	if ctxErr(ctx) != nil {
		return false, reasonCanceled
	}
	if err == nil && status >= 200 && status < 300 {
		return false, reasonSuccess
	}
	if method != http.MethodGet {
		return false, reasonNotGET
	}
	if err != nil {
		if errors.Is(err, errResponseTooLarge) {
			return false, reasonFinalStatus
		}
		return true, reasonNetworkError
	}
	switch status {
	case http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true, reasonRetryableStatus
	}
	return false, reasonFinalStatus
}

// ctxErr is ctx.Err without blocking: it reads Err only once Done is
// closed. (clockwork v0.5.0's WithTimeout contexts block in Err until
// they are done.)
func ctxErr(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	default:
		return nil
	}
}

// The retry budget's prices, the AWS SDKs' retry quota (aws-sdk-go-v2
// retry.DefaultRetryCost, DefaultRetryTimeoutCost, DefaultNoRetryIncrement):
// a retry after an answer costs retryCost, one after a failure below HTTP
// retryTimeoutCost; an answer that succeeds at the first attempt gives back
// noRetryRefund, and one that succeeds after retries what its last retry
// cost.
const (
	retryCost        = 5
	retryTimeoutCost = 10
	noRetryRefund    = 1
)

// retryBudget is a client's retry quota: a token bucket that retries
// spend and successes refill. A nil *retryBudget is off: it pays for
// every retry. Its balance is one atomic integer: a success that finds the
// budget full, as every one does while answers are clean, only reads it.
type retryBudget struct {
	tokens atomic.Int64
	max    int64
}

func newRetryBudget(tokens int) *retryBudget {
	if tokens == 0 {
		return nil
	}
	b := &retryBudget{max: int64(tokens)}
	b.tokens.Store(int64(tokens))
	return b
}

// take pays cost for a retry, if the budget holds that much.
func (b *retryBudget) take(cost int) bool {
	if b == nil {
		return true
	}
	for {
		n := b.tokens.Load()
		if n < int64(cost) {
			return false
		}
		if b.tokens.CompareAndSwap(n, n-int64(cost)) {
			return true
		}
	}
}

// refund gives n back, up to the budget.
func (b *retryBudget) refund(n int) {
	if b == nil {
		return
	}
	for {
		have := b.tokens.Load()
		if have >= b.max {
			return
		}
		if b.tokens.CompareAndSwap(have, min(b.max, have+int64(n))) {
			return
		}
	}
}

// left is what the budget holds; -1 when it is off.
func (b *retryBudget) left() int {
	if b == nil {
		return -1
	}
	return int(b.tokens.Load())
}
