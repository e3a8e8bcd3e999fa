package transport

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/jonboulle/clockwork"
)

// TestAttemptTimeoutOnTheRealClock: on the real clock (the default), the
// attempt timeout (an AfterFunc on the clock, as on any other) times
// attempts out: a hung GET is sent again, a hung POST is an unknown
// outcome, sent once. (Real time passes: two short timeouts.)
//
// It runs with a caller's context that can end and with one that never
// does.
func TestAttemptTimeoutOnTheRealClock(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"cancelable", "never ends"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := testContext(t)
			if name == "never ends" {
				ctx = context.WithoutCancel(ctx)
			}
			attemptTimeoutOnTheRealClock(t, ctx)
		})
	}
}

func attemptTimeoutOnTheRealClock(t *testing.T, ctx context.Context) {
	v := newVenue(t, clockwork.NewFakeClockAt(t0), reply{hang: true}, reply{status: 200, body: `{}`}, reply{hang: true})
	const timeout = time.Second // long enough for the answered attempt on a loaded machine
	c, err := New(v.srv.URL, testSigner(t), Config{RatePerMinute: -1, AttemptTimeout: timeout, Retry: &RetryPolicy{MaxAttempts: 2}})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	resp, err := c.Get(ctx, "/a/")
	if err != nil || resp.Attempts != 2 {
		t.Fatalf("GET: %+v, %v; want a 200 on the second attempt", resp, err)
	}
	if took := time.Since(start); took < timeout {
		t.Errorf("the hung attempt was ended after %v, before its %v timeout", took, timeout)
	}
	_, err = c.Do(ctx, "POST", "/o/", []byte(`{}`))
	var uo *unknownOutcomeError
	if !errors.As(err, &uo) || !errors.Is(uo.Err, errAttemptTimeout) {
		t.Fatalf("POST: err = %v, want an unknown outcome from the attempt timeout", err)
	}
	if n := len(v.requests()); n != 3 {
		t.Fatalf("venue saw %d requests, want 3 (2 GETs, 1 POST)", n)
	}
}

// TestAttemptTimeoutOverHTTP2NeverEndingContext: over HTTP/2, which
// watches the request's context itself, a hung GET under a context that
// never ends is timed out and sent again.
func TestAttemptTimeoutOverHTTP2NeverEndingContext(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	v := newVenue(t, clockwork.NewFakeClockAt(t0), reply{hang: true}, reply{status: 200, body: `{}`})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(v.serve))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	c, err := New(srv.URL, testSigner(t), Config{RatePerMinute: -1, AttemptTimeout: time.Second, RoundTripper: srv.Client().Transport})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Get(context.WithoutCancel(ctx), "/a/")
	if err != nil || resp.Attempts != 2 || resp.Proto != "HTTP/2.0" {
		t.Fatalf("GET: %+v, %v; want a 200 over HTTP/2 on the second attempt", resp, err)
	}
}

// TestReadBody: a body is read whole up to the limit, whatever its
// Content-Length says and however it arrives; past the limit, the first
// limit+1 bytes come back for the caller to refuse; a read error is
// returned.
func TestReadBody(t *testing.T) {
	const limit = 1000
	for _, n := range []int{0, 1, 511, 512, 513, 999, 1000, 1001, 4096} {
		body := bytes.Repeat([]byte("abcdefg"), n/7+1)[:n]
		want := body
		if n > limit {
			want = body[:limit+1]
		}
		for _, size := range []int64{int64(n), -1, int64(n / 2), int64(n) * 2} {
			for name, r := range map[string]io.Reader{
				"whole":    bytes.NewReader(body),
				"one byte": iotest.OneByteReader(bytes.NewReader(body)),
				"data+EOF": iotest.DataErrReader(bytes.NewReader(body)),
			} {
				got, err := readBody(r, size, limit)
				if err != nil || !bytes.Equal(got, want) {
					t.Errorf("%d bytes, Content-Length %d, %s: got %d bytes, %v; want %d", n, size, name, len(got), err, len(want))
				}
			}
		}
	}
	boom := errors.New("boom")
	got, err := readBody(io.MultiReader(strings.NewReader("abc"), iotest.ErrReader(boom)), -1, limit)
	if !errors.Is(err, boom) || string(got) != "abc" {
		t.Errorf("read error: got %q, %v", got, err)
	}
}

// TestObserveDateKeepsLastParse: a Date seen again is not parsed again,
// and gives the sample dateSample gives; a new one, or an invalid one
// (which records nothing and does not replace the one kept), is read
// afresh.
func TestObserveDateKeepsLastParse(t *testing.T) {
	var sk clockSkew
	d1 := t0.Add(5 * time.Second).UTC().Format(http.TimeFormat)
	d2 := t0.Add(7 * time.Second).UTC().Format(http.TimeFormat)
	for i, v := range []string{d1, d1, "", "not a date", d1, d2, d2, "Sunday, 06-Nov-94 08:49:37 GMT"} {
		at := t0.Add(time.Duration(i) * 100 * time.Millisecond)
		want, wantOK := dateSample(http.Header{"Date": {v}}, at)
		n := sk.n
		got, _, _, ok := sk.observeDate(v, at)
		if got != want || ok != wantOK {
			t.Errorf("%d: observeDate(%q) = %v, %v; dateSample says %v, %v", i, v, got, ok, want, wantOK)
		}
		if grew := sk.n != n || sk.n == clockSamples; grew != ok {
			t.Errorf("%d: observeDate(%q): recorded %v, want %v", i, v, grew, ok)
		}
	}
}
