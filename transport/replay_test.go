package transport

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	simvenue "github.com/tradewire/tradewire/venue"
)

const replayTarget = "/api/v2/crypto/trading/orders/"

// refusingCase is a venue, served over TLS + HTTP/2, that never answers
// a GET, and the tokens the client's budget holds against it.
type refusingCase struct {
	name   string
	tokens int
	cfg    simvenue.Config
	abort  string // the stream fault on every GET; "" for none
}

// everyTime is a fault's Times that outlasts any test.
const everyTime = 1 << 30

var refusingCases = []refusingCase{
	{name: "MAX_CONCURRENT_STREAMS 0", tokens: 3, cfg: simvenue.Config{MaxConcurrentStreams: -1}},
	{name: "GOAWAY on every GET", tokens: 3, abort: "goaway"},
	// net/http waits 1 s, 2 s, … (real time) before its second, third, …
	// retry on one connection: one token keeps the test off them.
	{name: "REFUSED_STREAM on every GET", tokens: 1, abort: "refused_stream"},
	{name: "PROTOCOL_ERROR on every GET", tokens: 1, abort: "protocol_error"},
}

// refusing is one run against a refusingCase's venue.
type refusing struct {
	venue    *h2Venue
	client   *Client
	attempts []Attempt
}

// newRefusing starts tc's venue and a client on the venue's fake clock
// whose token bucket holds tc.tokens tokens, the next a minute away, with
// one attempt per request (net/http's own replays are what is measured).
// stop, when set, is called once more GETs than tc.tokens have reached the
// venue or the client is dialing its (tc.tokens+4)th connection.
func newRefusing(t *testing.T, tc refusingCase, stop func()) *refusing {
	t.Helper()
	r := &refusing{venue: newH2Venue(t, tc.cfg)}
	if tc.abort != "" {
		r.venue.fault(t, tc.abort, http.MethodGet, everyTime)
	}
	var once sync.Once
	if stop != nil {
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		go func() {
			gets := 0
			_, err := r.venue.Ledger().AwaitRequests(ctx, 0, func(req simvenue.Request) bool {
				if req.Method == http.MethodGet {
					gets++
				}
				return gets > tc.tokens
			})
			if err == nil {
				once.Do(stop)
			}
		}()
	}
	tr := r.venue.transport(t)
	var d net.Dialer
	var dials atomic.Int32
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if stop != nil && int(dials.Add(1)) > tc.tokens+3 {
			once.Do(stop)
		}
		return d.DialContext(ctx, network, addr)
	}
	// At 1 a minute, Headroom holds one token of the burst back.
	lim := NewTokenBucket(r.venue.clock, 1, tc.tokens+1)
	c, err := New(r.venue.srv.URL, testSigner(t), Config{Clock: r.venue.clock, RoundTripper: tr, Limiter: lim, Retry: &RetryPolicy{MaxAttempts: 1}, Observer: func(a Attempt) { r.attempts = append(r.attempts, a) }})
	if err != nil {
		t.Fatal(err)
	}
	r.client = c
	return r
}

// deadline is ctx with a deadline 30 s away on r's clock: a token a
// minute away is refused at once.
func (r *refusing) deadline(t *testing.T, ctx context.Context) context.Context {
	ctx, cancel := clockwork.WithTimeout(ctx, r.venue.clock, 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// counts closes the venue, which waits for every stream it was reading,
// and returns the streams and connections clients opened on it.
func (r *refusing) counts() (streams, conns int) {
	r.venue.srv.Close()
	return r.venue.streams(), int(r.venue.conns.Load())
}

// TestGETAgainstARefusingServerCostsItsBudget: against a venue whose
// HTTP/2 front refuses every stream, a GET under a budget of N tokens
// opens at most N streams at the venue (and N+1 connections: the last is
// dialed, and sends nothing), then fails with an error that says
// net/http would have sent it again and the budget refused, matching
// ErrUnavailable. The observer counts the N-1 replays the budget admitted.
func TestGETAgainstARefusingServerCostsItsBudget(t *testing.T) {
	t.Parallel()
	for _, tc := range refusingCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRefusing(t, tc, nil)
			_, err := r.client.Get(r.deadline(t, testContext(t)), replayTarget)
			streams, conns := r.counts()
			t.Logf("%d tokens: %d streams on %d connections; %v", tc.tokens, streams, conns, err)
			if streams > tc.tokens || conns > tc.tokens+1 {
				t.Errorf("the venue saw %d streams on %d connections, want at most %d and %d", streams, conns, tc.tokens, tc.tokens+1)
			}
			if err == nil {
				t.Fatal("success, want an error")
			}
			var rr *replayRefusedError
			if !errors.As(err, &rr) || !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrNotSent) || errors.Is(err, ErrUnknownOutcome) {
				t.Fatalf("err = %v, want a refused replay matching ErrUnavailable only", err)
			}
			if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "rate budget did not admit it") {
				t.Errorf("err = %v, want the budget's refusal in it", err)
			}
			if rr.Replays != tc.tokens-1 {
				t.Errorf("%d replays admitted, want %d", rr.Replays, tc.tokens-1)
			}
			if len(r.attempts) != 1 || r.attempts[0].Replays != tc.tokens-1 || r.attempts[0].Err == nil {
				t.Errorf("observed %+v, want one failed attempt with %d replays", r.attempts, tc.tokens-1)
			}
			if tc.abort == "" && r.venue.served() != 0 {
				t.Errorf("the venue served %d requests behind MAX_CONCURRENT_STREAMS 0", r.venue.served())
			}
		})
	}
}

// TestRefusingServerWithoutTheGuard is the control: the same venues and
// budgets with the replay guard off. net/http keeps sending the GET,
// beneath the budget, until the test stops it (once more GETs than tokens
// have reached the venue, or the client dials a connection more than
// tokens+3): what TestGETAgainstARefusingServerCostsItsBudget forbids
// happens.
func TestRefusingServerWithoutTheGuard(t *testing.T) {
	t.Parallel()
	for _, tc := range refusingCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(testContext(t))
			defer cancel()
			r := newRefusing(t, tc, cancel)
			r.client.unguarded = true
			_, err := r.client.Get(r.deadline(t, ctx), replayTarget)
			streams, conns := r.counts()
			t.Logf("guard off, %d tokens: %d streams on %d connections; %v", tc.tokens, streams, conns, err)
			if streams <= tc.tokens && conns <= tc.tokens+1 {
				t.Errorf("the venue saw %d streams on %d connections; without the guard it should see more than %d or %d", streams, conns, tc.tokens, tc.tokens+1)
			}
		})
	}
}

// deadConnServer is a real HTTP/1.1 server that reads the second request
// on every connection and then closes the connection without answering,
// as a server closing an idle kept-alive connection does when the
// client's next request is already on the way: net/http sends a GET that
// met it again by itself on a new connection.
type deadConnServer struct {
	srv *httptest.Server
	// pair, when set, holds each request for /a1 and /a2 until both have
	// arrived, so that they take a connection each.
	pair *sync.WaitGroup
	mu   sync.Mutex
	// paths are the requests the server read, in order; dropped those it
	// closed the connection on.
	paths   []string
	dropped int
}

type connCount struct{ n atomic.Int32 }

type connCountKey struct{}

func newDeadConnServer(t *testing.T, overTLS bool) *deadConnServer {
	t.Helper()
	d := &deadConnServer{}
	d.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := r.Context().Value(connCountKey{}).(*connCount).n.Add(1)
		if d.pair != nil && (r.URL.Path == "/a1" || r.URL.Path == "/a2") {
			d.pair.Done()
			d.pair.Wait()
		}
		d.mu.Lock()
		d.paths = append(d.paths, r.URL.Path)
		if n == 2 {
			d.dropped++
		}
		d.mu.Unlock()
		if n == 2 {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			conn.Close()
			return
		}
		w.Header().Set("Date", t0.Format(http.TimeFormat))
		w.Write([]byte(`{}`))
	}))
	d.srv.Config.ConnContext = func(ctx context.Context, _ net.Conn) context.Context {
		return context.WithValue(ctx, connCountKey{}, &connCount{})
	}
	if overTLS {
		d.srv.StartTLS()
	} else {
		d.srv.Start()
	}
	t.Cleanup(d.srv.Close)
	return d
}

// seen returns the paths the server has read so far, and how many of them
// it closed the connection on.
func (d *deadConnServer) seen() ([]string, int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.paths...), d.dropped
}

// gateLimiter admits its first free Waits at once; each later one reports
// itself on waiting and returns what the test sends on decide.
type gateLimiter struct {
	free    int
	waiting chan struct{}
	decide  chan error

	mu      sync.Mutex
	granted int
}

func newGateLimiter(free int) *gateLimiter {
	return &gateLimiter{free: free, waiting: make(chan struct{}), decide: make(chan error)}
}

func (g *gateLimiter) Wait(ctx context.Context) error {
	g.mu.Lock()
	if g.granted < g.free {
		g.granted++
		g.mu.Unlock()
		return nil
	}
	g.mu.Unlock()
	select {
	case g.waiting <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-g.decide:
		if err == nil {
			g.mu.Lock()
			g.granted++
			g.mu.Unlock()
		}
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g *gateLimiter) Pause(time.Duration) {}

func (g *gateLimiter) tokens() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.granted
}

var errBudgetSpent = errors.New("budget spent")

// TestHTTP1DeadConnectionReplayWaitsForAToken: over HTTP/1.1 (plain on
// loopback, and TLS), a GET sent on a kept-alive connection the server
// closes is sent again by net/http on a new connection only once the
// budget grants it a token: while its wait is held, the server has read
// nothing more. Admitted, the GET succeeds in one attempt with one
// replay and three tokens for the three requests the server read; refused,
// it fails with the refusal and the server never reads it a second time.
func TestHTTP1DeadConnectionReplayWaitsForAToken(t *testing.T) {
	t.Parallel()
	for _, overTLS := range []bool{false, true} {
		for _, admit := range []bool{true, false} {
			name := map[bool]string{false: "plain", true: "TLS"}[overTLS] + map[bool]string{true: "/admitted", false: "/refused"}[admit]
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				ctx := testContext(t)
				d := newDeadConnServer(t, overTLS)
				lim := newGateLimiter(2)
				var seen []Attempt
				c, err := New(d.srv.URL, testSigner(t), Config{Clock: clockwork.NewFakeClockAt(t0), RoundTripper: d.srv.Client().Transport, Limiter: lim, Retry: &RetryPolicy{MaxAttempts: 1}, Observer: func(a Attempt) { seen = append(seen, a) }})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := c.Get(ctx, "/a"); err != nil {
					t.Fatal(err)
				}
				type result struct {
					resp *Response
					err  error
				}
				// Over plain HTTP, /b goes with a context that never ends,
				// whose attempt context is the client's own (context.WithCancelCause's).
				bctx := ctx
				if !overTLS {
					bctx = context.Background()
				}
				done := make(chan result, 1)
				go func() {
					resp, err := c.Get(bctx, "/b")
					done <- result{resp, err}
				}()
				select {
				case <-lim.waiting:
				case r := <-done:
					t.Fatalf("GET /b ended (%+v) without waiting for a token for its replay", r)
				}
				if paths, dropped := d.seen(); len(paths) != 2 || dropped != 1 {
					t.Fatalf("while the replay waits the server read %v (%d dropped), want [/a /b] with /b dropped", paths, dropped)
				}
				if admit {
					lim.decide <- nil
				} else {
					lim.decide <- errBudgetSpent
				}
				r := <-done
				d.srv.Close() // waits for every request the server is reading
				paths, _ := d.seen()
				if admit {
					if r.err != nil || r.resp.Attempts != 1 || lim.tokens() != 3 || len(paths) != 3 || paths[2] != "/b" {
						t.Fatalf("admitted: %+v, %v; %d tokens, server read %v; want success in 1 attempt, 3 tokens, [/a /b /b]", r.resp, r.err, lim.tokens(), paths)
					}
					if seen[1].Replays != 1 {
						t.Errorf("observed %+v, want one replay", seen[1])
					}
					return
				}
				var rr *replayRefusedError
				if r.err == nil || !errors.As(r.err, &rr) || !errors.Is(r.err, errBudgetSpent) || !errors.Is(r.err, ErrUnavailable) {
					t.Fatalf("refused: err = %v, want the refused replay", r.err)
				}
				if len(paths) != 2 || lim.tokens() != 2 {
					t.Errorf("refused: server read %v with %d tokens granted, want [/a /b] and 2", paths, lim.tokens())
				}
				if seen[1].Replays != 0 || seen[1].Err == nil {
					t.Errorf("observed %+v, want a failed attempt with no replay", seen[1])
				}
			})
		}
	}
}

// TestHTTP1DeadConnectionWithoutTheGuard is the control: with the guard
// off, net/http sends the GET again without asking the budget: the
// server reads /b twice for two tokens.
func TestHTTP1DeadConnectionWithoutTheGuard(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	d := newDeadConnServer(t, false)
	lim := newGateLimiter(2)
	c, err := New(d.srv.URL, testSigner(t), Config{Clock: clockwork.NewFakeClockAt(t0), RoundTripper: d.srv.Client().Transport, Limiter: lim, Retry: &RetryPolicy{MaxAttempts: 1}})
	if err != nil {
		t.Fatal(err)
	}
	c.unguarded = true
	for _, p := range []string{"/a", "/b"} {
		if _, err := c.Get(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if paths, _ := d.seen(); len(paths) != 3 || lim.tokens() != 2 {
		t.Errorf("server read %v with %d tokens; the control expects 3 requests for 2 tokens", paths, lim.tokens())
	}
}

// TestHTTP1RefusedReplayIsNotWritten: when the budget refuses the replay
// while net/http has an idle connection at hand for it, net/http may
// still hand the request that connection (its choice between the
// connection and the ended context is random), and HTTP/1 writes a
// request without looking at its context: the guard closes that
// connection first, so the server never reads the refused GET. Two
// connections are kept alive (/a1 and /a2 at once); /b, on one of them,
// meets a dead connection, and its replay finds the other idle. Repeated,
// since without the close the server reads /b again about half the time.
func TestHTTP1RefusedReplayIsNotWritten(t *testing.T) {
	t.Parallel()
	for i := range 20 {
		ctx := testContext(t)
		d := newDeadConnServer(t, false)
		d.pair = new(sync.WaitGroup)
		d.pair.Add(2)
		lim := newGateLimiter(3)
		c, err := New(d.srv.URL, testSigner(t), Config{Clock: clockwork.NewFakeClockAt(t0), RoundTripper: d.srv.Client().Transport, Limiter: lim, Retry: &RetryPolicy{MaxAttempts: 1}})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for _, p := range []string{"/a1", "/a2"} {
			wg.Go(func() {
				if _, err := c.Get(ctx, p); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		done := make(chan error, 1)
		go func() {
			_, err := c.Get(ctx, "/b")
			done <- err
		}()
		<-lim.waiting
		lim.decide <- errBudgetSpent
		err = <-done
		d.srv.Close()
		paths, _ := d.seen()
		if !errors.Is(err, errBudgetSpent) || len(paths) != 3 {
			t.Fatalf("run %d: %v; server read %v; want the refusal and /b read once", i, err, paths)
		}
	}
}

// TestCallersTraceStillFires: a trace the caller put on the context is
// composed with the attempt's own: over HTTP/2 (the venue refuses a
// stream, then answers) and HTTP/1.1 (a dead kept-alive connection, then an answer), the
// caller's GetConn, GotConn and GotFirstResponseByte see every try, and
// the replay still took its own token.
func TestCallersTraceStillFires(t *testing.T) {
	t.Parallel()
	for _, proto := range []string{"HTTP/2.0", "HTTP/1.1"} {
		t.Run(proto, func(t *testing.T) {
			t.Parallel()
			clock := clockwork.NewFakeClockAt(t0)
			var url, path string
			var rt http.RoundTripper
			var warm bool
			if proto == "HTTP/2.0" {
				v := newH2Venue(t, simvenue.Config{})
				v.fault(t, "refused_stream", http.MethodGet, 1)
				url, path, rt, clock = v.srv.URL, accountsPath, v.transport(t), v.clock
			} else {
				d := newDeadConnServer(t, true)
				url, path, rt, warm = d.srv.URL, "/b", d.srv.Client().Transport, true
			}
			lim := &countingLimiter{}
			c, err := New(url, testSigner(t), Config{Clock: clock, RoundTripper: rt, Limiter: lim})
			if err != nil {
				t.Fatal(err)
			}
			if warm {
				if _, err := c.Get(testContext(t), "/a"); err != nil {
					t.Fatal(err)
				}
			}
			var gets, gots, reused, firstBytes int
			ctx := httptrace.WithClientTrace(testContext(t), &httptrace.ClientTrace{
				GetConn: func(string) { gets++ },
				GotConn: func(info httptrace.GotConnInfo) {
					gots++
					if info.Reused {
						reused++
					}
				},
				GotFirstResponseByte: func() { firstBytes++ },
			})
			before := lim.taken()
			resp, err := c.Get(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Proto != proto || lim.taken()-before != 2 {
				t.Errorf("%s with %d tokens, want %s with 2", resp.Proto, lim.taken()-before, proto)
			}
			// HTTP/1.1 asks for a connection twice (GetConn) and gets the
			// dead kept-alive one, then a new one; HTTP/2 gets its
			// connection back for the second stream, whether or not it
			// asks for one again.
			wantGets := 2
			if proto == "HTTP/2.0" && gets == 1 {
				wantGets = 1
			}
			if gets != wantGets || gots != 2 || reused != 1 || firstBytes != 1 {
				t.Errorf("caller's trace: GetConn %d, GotConn %d (%d reused), GotFirstResponseByte %d; want %d, 2 (1), 1", gets, gots, reused, firstBytes, wantGets)
			}
		})
	}
}

// adaptiveCounter is an AdaptiveLimiter that admits every request and
// records what it was asked.
type adaptiveCounter struct {
	mu       sync.Mutex
	waitFor  int
	answered []time.Time
}

func (a *adaptiveCounter) Wait(context.Context) error {
	return errors.New("Wait called on an adaptive limiter")
}
func (a *adaptiveCounter) Pause(time.Duration) {}
func (a *adaptiveCounter) WaitFor(context.Context, string, string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.waitFor++
	return nil
}
func (a *adaptiveCounter) Answered(_, _ string, grantedAt time.Time, _ int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.answered = append(a.answered, grantedAt)
}

// TestReplayDrawsOnTheAdaptiveBudget: with an AdaptiveLimiter, a replay
// waits with WaitFor for the request's own endpoint class, and the answer
// is reported as granted when the replay was.
func TestReplayDrawsOnTheAdaptiveBudget(t *testing.T) {
	t.Parallel()
	v := newH2Venue(t, simvenue.Config{})
	v.fault(t, "refused_stream", http.MethodGet, 1)
	lim := &adaptiveCounter{}
	c, err := New(v.srv.URL, testSigner(t), Config{Clock: v.clock, RoundTripper: v.transport(t), Limiter: lim})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(testContext(t), v.ordersTarget()); err != nil {
		t.Fatal(err)
	}
	if lim.waitFor != 2 || len(lim.answered) != 1 || !lim.answered[0].Equal(t0) || v.seen(http.MethodGet) != 2 {
		t.Errorf("WaitFor %d times, answered %v, venue saw %d GETs; want 2, one answer granted at %v, 2", lim.waitFor, lim.answered, v.seen(http.MethodGet), t0)
	}
}

// TestReplaysPerAttemptAreCapped: however large the budget, net/http sends
// one attempt at most 1+maxReplays times; then the attempt fails and the
// client's own retries (here 3 attempts, with no delay) take over. Against
// venues that refuse every stream, a GET costs at most 3×(1+maxReplays)
// tokens and streams.
func TestReplaysPerAttemptAreCapped(t *testing.T) {
	t.Parallel()
	for _, tc := range refusingCases[:2] { // MAX_CONCURRENT_STREAMS 0, GOAWAY: no real waits in net/http
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := newH2Venue(t, tc.cfg)
			if tc.abort != "" {
				v.fault(t, tc.abort, http.MethodGet, everyTime)
			}
			lim := &countingLimiter{}
			var seen []Attempt
			c, err := New(v.srv.URL, testSigner(t), Config{Clock: v.clock, RoundTripper: v.transport(t), Limiter: lim, Retry: &RetryPolicy{MaxAttempts: 3}, Observer: func(a Attempt) { seen = append(seen, a) }})
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Get(testContext(t), replayTarget)
			v.srv.Close() // waits for every stream the venue was reading
			const perAttempt = 1 + maxReplays
			t.Logf("%d tokens, %d streams on %d connections; %v", lim.taken(), v.streams(), v.conns.Load(), err)
			if !errors.Is(err, errReplayLimit) || !errors.Is(err, ErrUnavailable) {
				t.Fatalf("err = %v, want the replay limit, matching ErrUnavailable", err)
			}
			if lim.taken() != 3*perAttempt || v.streams() > 3*perAttempt {
				t.Errorf("%d tokens, %d streams; want %d tokens and at most as many streams", lim.taken(), v.streams(), 3*perAttempt)
			}
			for _, a := range seen {
				if a.Replays != maxReplays {
					t.Errorf("observed %+v, want %d replays in every attempt", a, maxReplays)
				}
			}
		})
	}
}
