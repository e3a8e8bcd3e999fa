package simulation

import (
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/tradewire/tradewire/internal/adaptive"
	"github.com/tradewire/tradewire/transport"
)

// Invariant is a property every run must keep. Check looks at the whole
// run (history, events, orders) and returns an error naming what broke,
// or nil.
type Invariant struct {
	Name  string
	Check func(*Run) error
}

// DefaultInvariants returns the transport's invariants, checked on every
// run unless Scenario.Invariants says otherwise:
//
//   - calls-ended: every call ended, every failed call has a typed
//     transport error, the attempts the client reports are the requests on
//     the wire, and no request was sent outside a call;
//   - post-sent-once: every POST call reached the venue exactly once, and
//     no create body (client_order_id) was sent or created twice;
//   - get-retry-rule: a GET was sent again only after 429, 500, 502, 503,
//     504 or a dropped connection or timeout, and at most
//     defaultMaxAttempts times in all (transport's default policy);
//   - signatures-fresh: the venue accepted no signature more than 30 s
//     from its clock and refused none (no 401), and two attempts of one
//     call a second or more apart never carry the same timestamp or
//     signature;
//   - rate-budget: the requests the venue received, all of them, fit a
//     token bucket of the client's budget (adaptive.PerMinute
//     a minute, bursts of adaptive.Burst: 100 and 300, the
//     venue's) from the start, and the venue never throttled the client
//     (429s injected by the fault mix or a scripted fault aside).
//
// Append to the slice to add invariants.
func DefaultInvariants() []Invariant {
	return []Invariant{
		{Name: "calls-ended", Check: checkCallsEnded},
		{Name: "post-sent-once", Check: checkPostSentOnce},
		{Name: "get-retry-rule", Check: checkGetRetryRule},
		{Name: "signatures-fresh", Check: checkSignaturesFresh},
		{Name: "rate-budget", Check: checkRateBudget},
	}
}

// Attempts returns the requests call id sent, in order.
func (r *Run) Attempts(id int) []Event {
	r.byCallOnce.Do(func() {
		r.byCall = map[int][]Event{}
		for _, e := range r.Events {
			if e.Replayed {
				continue // net/http's, beneath the client: not an attempt of its own
			}
			r.byCall[e.Call] = append(r.byCall[e.Call], e)
		}
	})
	return r.byCall[id]
}

// problems collects the failures of one invariant: a count and the first
// few, as examples.
type problems struct {
	n        int
	examples []string
}

func (p *problems) addf(format string, args ...any) {
	p.n++
	if len(p.examples) < 5 {
		p.examples = append(p.examples, fmt.Sprintf(format, args...))
	}
}

func (p *problems) err() error {
	if p.n == 0 {
		return nil
	}
	return fmt.Errorf("%d violation(s), e.g.: %s", p.n, strings.Join(p.examples, "; "))
}

func checkCallsEnded(r *Run) error {
	var p problems
	if len(r.Calls) != r.begun {
		p.addf("%d calls began, %d ended", r.begun, len(r.Calls))
	}
	for _, c := range r.Calls {
		if c.End.Before(c.Start) {
			p.addf("call %d ended before it began", c.ID)
		}
		if c.Err != nil && !typed(c.Err) {
			p.addf("call %d (%s %s) failed with an untyped error: %v", c.ID, c.Method, c.Target, c.Err)
		}
		if n := len(r.Attempts(c.ID)) + r.undelivered[c.ID]; n != c.Attempts && !(c.Err != nil && c.Attempts == 0 && n == 0) {
			p.addf("call %d (%s %s): the client reports %d attempts, the wire carried %d", c.ID, c.Method, c.Target, c.Attempts, n)
		}
	}
	outside := 0
	for _, e := range r.Attempts(0) {
		if e.Op == 0 { // a Placer's requests belong to its PlaceOp
			outside++
		}
	}
	if outside > 0 {
		p.addf("%d request(s) sent outside any call", outside)
	}
	return p.err()
}

// typed reports whether err is one the transport documents: the venue's
// answer (*transport.StatusError), or a failure matching
// transport.ErrUnavailable, ErrUnknownOutcome or ErrInvalidRequest.
func typed(err error) bool {
	var se *transport.StatusError
	return errors.As(err, &se) || errors.Is(err, transport.ErrUnavailable) ||
		errors.Is(err, transport.ErrUnknownOutcome) || errors.Is(err, transport.ErrInvalidRequest)
}

func checkPostSentOnce(r *Run) error {
	var p problems
	for _, c := range r.Calls {
		if c.Method != http.MethodPost {
			continue
		}
		if n := len(r.Attempts(c.ID)); n > 1 {
			p.addf("call %d (POST %s) reached the venue %d times", c.ID, c.Target, n)
		}
	}
	sent := map[string]int{}
	for _, e := range r.Events {
		if e.ClientOrderID == "" || e.Op != 0 {
			// A Placer may send a create again, once every earlier
			// signature of it has expired: create-resent-after-expiry.
			continue
		}
		if sent[e.ClientOrderID]++; sent[e.ClientOrderID] == 2 {
			p.addf("client_order_id %s was sent more than once", e.ClientOrderID)
		}
	}
	created := map[string]int{}
	for _, o := range r.Orders {
		if created[o.ClientOrderID]++; created[o.ClientOrderID] == 2 {
			p.addf("client_order_id %s created more than one order", o.ClientOrderID)
		}
	}
	return p.err()
}

// retryable reports whether an attempt's answer allows a GET to be sent
// again: 429, 500, 502, 503, 504, or no answer at all.
func retryable(e Event) bool {
	switch e.Status {
	case http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return e.Dropped
}

func checkGetRetryRule(r *Run) error {
	var p problems
	maxAttempts := defaultMaxAttempts
	for _, c := range r.Calls {
		if c.Method != http.MethodGet {
			continue
		}
		att := r.Attempts(c.ID)
		if len(att) > maxAttempts {
			p.addf("call %d (GET %s) was sent %d times, more than %d", c.ID, c.Target, len(att), maxAttempts)
		}
		for i := 0; i+1 < len(att); i++ {
			if !retryable(att[i]) {
				p.addf("call %d (GET %s) was sent again after status %d", c.ID, c.Target, att[i].Status)
			}
		}
	}
	return p.err()
}

// signatureWindow is how far the venue lets a request's x-timestamp be
// from its now (package venue's doc: the 30 s signature window).
const signatureWindow = 30 * time.Second

// signedBeforeMeasured reports whether e is a request the venue refused
// because it was signed on the client's own clock, as a process's first
// requests are, before any answer's Date header has shown the venue's
// clock offset: on a venue whose clock is off by more than the signature
// window (Scenario.Hostile.ClockOffset) that 401 is the venue's right
// answer (nothing was done), and the offset the transport learns from it
// corrects what follows. A timestamp off by anything but the venue's
// offset is still a violation.
func signedBeforeMeasured(r *Run, e Event) bool {
	off := r.Scenario.Hostile.ClockOffset
	if off.Abs() <= signatureWindow {
		return false
	}
	ts, ok := unixSeconds(e.Timestamp)
	if !ok {
		return false
	}
	return (e.Time.Sub(ts) - off).Abs() < 2*time.Second
}

func checkSignaturesFresh(r *Run) error {
	var p problems
	for _, e := range r.Events {
		if e.Status == http.StatusUnauthorized && !signedBeforeMeasured(r, e) {
			p.addf("%s %s at %s was refused 401 (x-timestamp %s)", e.Method, e.Target, e.Time.Format(time.RFC3339), e.Timestamp)
		}
		if e.Status < 200 || e.Status > 299 {
			continue
		}
		ts, ok := unixSeconds(e.Timestamp)
		if !e.SignatureValid || !ok {
			p.addf("%s %s at %s was accepted without a valid signature", e.Method, e.Target, e.Time.Format(time.RFC3339))
			continue
		}
		if age := e.Time.Sub(ts); age > signatureWindow || age < -signatureWindow {
			p.addf("%s %s was accepted with a signature %v from the venue's clock", e.Method, e.Target, age)
		}
	}
	for _, c := range r.Calls {
		att := r.Attempts(c.ID)
		for i := range att {
			for j := i + 1; j < len(att); j++ {
				if att[j].Time.Sub(att[i].Time) < time.Second {
					continue
				}
				if att[i].Timestamp == att[j].Timestamp || att[i].Signature == att[j].Signature {
					p.addf("call %d (%s %s): attempts %d and %d, %v apart, share a timestamp or signature",
						c.ID, c.Method, c.Target, i+1, j+1, att[j].Time.Sub(att[i].Time))
				}
			}
		}
	}
	return p.err()
}

// injected429 reports whether a 429 was put there by the fault machinery
// rather than earned by the client's rate.
func injected429(e Event) bool {
	return strings.Contains(e.Fault, "mix_429") || strings.Contains(e.Fault, string("respond")) ||
		strings.Contains(e.Fault, string("lose_response"))
}

func checkRateBudget(r *Run) error {
	var p problems
	// The client's budget, which is the venue's: the client's bucket
	// refills adaptive.RateMargin under it, so its requests must fit.
	rate := adaptive.PerMinute / 60.0 // tokens a second
	burst := float64(adaptive.Burst)
	arrivals := make([]time.Time, len(r.Events))
	for i, e := range r.Events {
		arrivals[i] = e.Time
		if e.Status == http.StatusTooManyRequests && !injected429(e) {
			p.addf("%s %s at %s was throttled by the venue", e.Method, e.Target, e.Time.Format(time.RFC3339))
		}
	}
	sort.SliceStable(arrivals, func(i, j int) bool { return arrivals[i].Before(arrivals[j]) })
	// Arrivals are on the venue's clock, which a hostile venue offsets.
	tokens, last := burst, r.Scenario.Start.Add(r.Scenario.Hostile.ClockOffset)
	for i, t := range arrivals {
		if t.After(last) {
			tokens = min(burst, tokens+t.Sub(last).Seconds()*rate)
			last = t
		}
		if tokens -= 1; tokens < -1e-6 {
			p.addf("request %d at %s is over the budget (%.3f tokens)", i+1, t.Format(time.RFC3339Nano), tokens)
		}
	}
	return p.err()
}
