package transport

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/rs/zerolog"

	"github.com/tradewire/tradewire/signing"
)

const (
	testSeed   = "xQnTJVeQLmw1/Mg2YimEViSpw/SdJcgNXZ5kQkAXNPU="
	testAPIKey = "rh-api-6148effc-c0b1-486c-8940-a1d099456be6"
)

// t0 is not on a whole second, so that attempts 0.5 s apart carry
// different x-timestamp values.
var t0 = time.Date(2026, 11, 2, 14, 0, 0, 750_000_000, time.UTC)

func testSigner(t testing.TB) *signing.Signer {
	t.Helper()
	key, err := signing.ParsePrivateKey(testSeed)
	if err != nil {
		t.Fatal(err)
	}
	s, err := signing.New(testAPIKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// reply is one scripted answer of the test venue.
type reply struct {
	status int
	header map[string]string
	body   string
	// drop closes the connection without answering, after reading the
	// request.
	drop bool
	// hang blocks until the request's context ends.
	hang bool
	// venueClock is how far the venue's clock (its Date header) is ahead
	// of the test's; noDate sends no Date header.
	venueClock time.Duration
	noDate     bool
}

// received is one request as the test venue saw it.
type received struct {
	method, target string
	body           []byte
	at             time.Time // the fake clock when the request arrived
	timestamp      string
	signature      string
	validSig       bool
}

// venue is an httptest server that answers from a script and checks every
// signature itself, with crypto/ed25519, against the fake clock.
type venue struct {
	t      *testing.T
	srv    *httptest.Server
	clock  *clockwork.FakeClock
	pub    ed25519.PublicKey
	mu     sync.Mutex
	script []reply
	reqs   []received
	// arrived gets one value per request, after it is recorded.
	arrived chan received
}

func newVenue(t *testing.T, clock *clockwork.FakeClock, script ...reply) *venue {
	t.Helper()
	key, _ := signing.ParsePrivateKey(testSeed)
	v := &venue{t: t, clock: clock, pub: key.Public(), script: script, arrived: make(chan received, 64)}
	v.srv = httptest.NewServer(http.HandlerFunc(v.serve))
	t.Cleanup(v.srv.Close)
	return v
}

func (v *venue) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rec := received{
		method:    r.Method,
		target:    r.RequestURI,
		body:      body,
		at:        v.clock.Now(),
		timestamp: r.Header.Get("x-timestamp"),
		signature: r.Header.Get("x-signature"),
	}
	sig, err := base64.StdEncoding.DecodeString(rec.signature)
	msg := r.Header.Get("x-api-key") + rec.timestamp + r.RequestURI + r.Method + string(body)
	rec.validSig = err == nil && r.Header.Get("x-api-key") == testAPIKey && ed25519.Verify(v.pub, []byte(msg), sig)

	v.mu.Lock()
	v.reqs = append(v.reqs, rec)
	rp := reply{status: http.StatusOK, body: `{"results":[]}`}
	if len(v.script) > 0 {
		rp = v.script[0]
		if len(v.script) > 1 {
			v.script = v.script[1:]
		}
	}
	v.mu.Unlock()
	v.arrived <- rec

	switch {
	case rp.drop:
		hj, _ := w.(http.Hijacker)
		conn, _, err := hj.Hijack()
		if err == nil {
			conn.Close()
		}
		return
	case rp.hang:
		<-r.Context().Done()
		return
	}
	// The venue's clock is the test's: no offset unless a reply says so.
	if !rp.noDate {
		w.Header().Set("Date", v.clock.Now().Add(rp.venueClock).UTC().Format(http.TimeFormat))
	} else {
		w.Header()["Date"] = nil // net/http adds none
	}
	for k, val := range rp.header {
		w.Header().Set(k, val)
	}
	w.WriteHeader(rp.status)
	io.WriteString(w, rp.body)
}

func (v *venue) requests() []received {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]received(nil), v.reqs...)
}

// attemptEvent is one "attempt" log event.
type attemptEvent struct {
	Method  string  `json:"method"`
	Path    string  `json:"path"`
	Attempt int     `json:"attempt"`
	Status  int     `json:"status"`
	Retry   bool    `json:"retry"`
	Delay   float64 `json:"delay"` // milliseconds, zerolog's default
	Reason  string  `json:"reason"`
}

// eventLog is a zerolog writer that hands every attempt event to the test.
type eventLog struct {
	mu     sync.Mutex
	raw    []string
	events chan attemptEvent
}

func newEventLog() *eventLog { return &eventLog{events: make(chan attemptEvent, 4096)} }

func (l *eventLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	l.raw = append(l.raw, string(p))
	l.mu.Unlock()
	sc := bufio.NewScanner(bytes.NewReader(p))
	for sc.Scan() {
		var ev attemptEvent
		if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.Attempt > 0 {
			select {
			case l.events <- ev:
			default:
			}
		}
	}
	return len(p), nil
}

func (l *eventLog) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.raw...)
}

func (l *eventLog) logger() zerolog.Logger {
	return zerolog.New(l).Level(zerolog.DebugLevel)
}

// drive plays the clock for one call: after each attempt that will be
// retried it waits for the backoff timer (the only waiter then, with the
// limiter off) and advances the clock by the delay the client chose. It
// returns the chosen delays once the call's final attempt is logged.
func drive(t *testing.T, ctx context.Context, clock *clockwork.FakeClock, log *eventLog, extraWaiters int) []time.Duration {
	t.Helper()
	var delays []time.Duration
	for {
		var ev attemptEvent
		select {
		case ev = <-log.events:
		case <-ctx.Done():
			t.Fatalf("no attempt event: %v", ctx.Err())
		}
		if !ev.Retry {
			return delays
		}
		d := time.Duration(ev.Delay * float64(time.Millisecond))
		delays = append(delays, d)
		if d > 0 {
			if err := clock.BlockUntilContext(ctx, 1+extraWaiters); err != nil {
				t.Fatalf("backoff timer never armed: %v", err)
			}
			clock.Advance(d)
		}
	}
}

type result struct {
	resp *Response
	err  error
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// deadlineCtx is a context whose deadline is on the fake clock. (clockwork's
// own WithTimeout context blocks in Err until it is done, so it cannot be
// polled.)
type deadlineCtx struct {
	context.Context
	deadline time.Time
}

func (c deadlineCtx) Deadline() (time.Time, bool) { return c.deadline, true }

func withFakeDeadline(parent context.Context, clock *clockwork.FakeClock, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	timer := clock.AfterFunc(d, func() { cancel(context.DeadlineExceeded) })
	return deadlineCtx{ctx, clock.Now().Add(d)}, func() { timer.Stop(); cancel(context.Canceled) }
}
