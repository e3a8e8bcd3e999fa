package transport

import (
	"sync"
	"testing"

	"github.com/jonboulle/clockwork"
)

// TestObserverSeesEveryAttempt: the observer is called once per attempt,
// retries included, with the answer's status and protocol, and a failure
// below HTTP as Err with status 0 (see the next test).
func TestObserverSeesEveryAttempt(t *testing.T) {
	ctx := testContext(t)
	clock := clockwork.NewFakeClockAt(t0)
	v := newVenue(t, clock, status(503), status(502), reply{status: 200, body: `{}`})
	log := newEventLog()
	var mu sync.Mutex
	var seen []Attempt
	c := newTestClient(t, v, log, Config{Observer: func(a Attempt) {
		mu.Lock()
		seen = append(seen, a)
		mu.Unlock()
	}})
	done := make(chan result, 1)
	go func() {
		resp, err := c.Get(ctx, "/api/v2/crypto/trading/accounts/?x=1")
		done <- result{resp, err}
	}()
	drive(t, ctx, clock, log, 0)
	if res := <-done; res.err != nil {
		t.Fatal(res.err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 3 {
		t.Fatalf("observer saw %d attempts, want 3: %+v", len(seen), seen)
	}
	for i, a := range seen {
		if a.Number != i+1 || a.Method != "GET" || a.Path != "/api/v2/crypto/trading/accounts/" {
			t.Errorf("attempt %d = %+v", i+1, a)
		}
	}
	if seen[0].Status != 503 || seen[0].Proto != "HTTP/1.1" || seen[0].Err != nil {
		t.Errorf("first attempt = %+v, want 503 over HTTP/1.1", seen[0])
	}
	if seen[1].Status != 502 || seen[1].Err != nil {
		t.Errorf("second attempt = %+v, want 502", seen[1])
	}
	if seen[2].Status != 200 || seen[2].Err != nil {
		t.Errorf("third attempt = %+v, want 200", seen[2])
	}
}

// TestObserverSeesFailureBelowHTTP: an attempt with no answer is observed
// with status 0, no protocol and the failure.
func TestObserverSeesFailureBelowHTTP(t *testing.T) {
	clock := clockwork.NewFakeClockAt(t0)
	v := newVenue(t, clock)
	url := v.srv.URL
	v.srv.Close()
	var seen []Attempt
	c, err := New(url, testSigner(t), Config{Clock: clock, RatePerMinute: -1, Retry: &RetryPolicy{MaxAttempts: 1}, Observer: func(a Attempt) { seen = append(seen, a) }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(testContext(t), "/api/v2/crypto/trading/accounts/"); err == nil {
		t.Fatal("a GET to a closed server succeeded")
	}
	if len(seen) != 1 || seen[0].Status != 0 || seen[0].Proto != "" || seen[0].Err == nil {
		t.Fatalf("observed %+v, want one attempt with no answer and its error", seen)
	}
}
