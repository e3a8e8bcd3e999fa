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
	"testing/synctest"
	"time"

	"github.com/jonboulle/clockwork"
)

// TestAttemptCtx: an attempt's own context is live until the attempt
// timeout ends it; then its Done is closed, its Err is context.Canceled,
// and what package context derived from it ends too, through AfterFunc
// (no goroutine per child), whether derived before or after.
func TestAttemptCtx(t *testing.T) { synctest.Test(t, testAttemptCtx) }

func testAttemptCtx(t *testing.T) {
	var a attemptCtx
	a.init(context.WithValue(context.Background(), ctxKey{}, "v"))
	before, cancel := context.WithCancelCause(&a)
	defer cancel(nil)
	ran := make(chan struct{})
	stop := context.AfterFunc(&a, func() { close(ran) })
	stopped := make(chan struct{}, 1)
	stopNow := context.AfterFunc(&a, func() { stopped <- struct{}{} })
	if !stopNow() {
		t.Fatal("context.AfterFunc's stop before the end did not stop it")
	}
	if a.Err() != nil || before.Err() != nil || a.timedOut() {
		t.Fatal("a live attempt's context reports an end")
	}
	if a.Value(ctxKey{}) != "v" || before.Value(ctxKey{}) != "v" {
		t.Fatal("values of the caller's context are lost")
	}
	a.end()
	a.end() // a second end is a no-op
	select {
	case <-a.Done():
	default:
		t.Fatal("Done is open after the end")
	}
	<-before.Done() // ended by the end, synchronously
	if !errors.Is(a.Err(), context.Canceled) || !a.timedOut() || !errors.Is(before.Err(), context.Canceled) {
		t.Fatalf("after the end: Err %v, child Err %v, timedOut %v", a.Err(), before.Err(), a.timedOut())
	}
	<-ran
	if stop() {
		t.Error("context.AfterFunc's stop after its function ran says it stopped it")
	}
	after, cancel2 := context.WithCancel(&a)
	defer cancel2()
	<-after.Done()  // a child of an ended context starts ended
	synctest.Wait() // every goroutine the end started has run or blocked
	select {
	case <-stopped:
		t.Error("a function whose context.AfterFunc was stopped ran")
	default:
	}
}

type ctxKey struct{}

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
	c, err := New(srv.URL, testSigner(t), WithRateLimit(0, 0), WithAttemptTimeout(time.Second),
		WithRoundTripper(srv.Client().Transport))
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
