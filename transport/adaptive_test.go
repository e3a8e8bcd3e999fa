package transport

import (
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/tradewire/tradewire/internal/adaptive"
	"github.com/tradewire/tradewire/internal/wire"
)

const (
	pathBBA    = "/api/v2/crypto/marketdata/best_bid_ask/"
	pathOrders = "/api/v2/crypto/trading/orders/"
)

// classRate is the class's rate now, in requests a minute.
func (l *adaptiveLimiter) classRate(c wire.Class) float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rate(&l.classes[c], l.clock.Now()) * 60
}

// spend takes n tokens of class c without waiting, failing if any would
// have had to wait.
func spend(t *testing.T, l *adaptiveLimiter, c wire.Class, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		l.mu.Lock()
		d, _ := l.reserve(&l.classes[c], l.clock.Now())
		l.mu.Unlock()
		if d > 0 {
			t.Fatalf("%v: token %d of %d is %v away", c, i+1, n, d)
		}
	}
}

func TestAdaptiveCutsOnceForOneCongestion(t *testing.T) {
	clock := clockwork.NewFakeClockAt(t0)
	l := NewAdaptiveLimiter(clock, 100, 300).(*adaptiveLimiter)
	if got := l.classRate(wire.ClassMarketData); math.Abs(got-99) > 1e-9 {
		t.Fatalf("starting rate %v/min, want Headroom's 99", got)
	}
	// Send at the ceiling for a minute, so the measured rate is the rate.
	for i := 0; i < 99; i++ {
		clock.Advance(time.Minute / 99)
		l.WaitFor(context.Background(), "GET", pathBBA)
	}
	granted := clock.Now()
	l.Answered("GET", pathBBA, granted, 429)
	cut := l.classRate(wire.ClassMarketData)
	if cut < 99*adaptive.Beta*0.9 || cut > 99*adaptive.Beta*1.01 {
		t.Fatalf("rate after a 429: %.2f/min, want about half of 99", cut)
	}
	// The bucket is empty: the next token is a whole interval away.
	l.mu.Lock()
	d, _ := l.reserve(&l.classes[wire.ClassMarketData], clock.Now())
	l.mu.Unlock()
	if want := time.Duration(float64(time.Minute) / cut); d < want*9/10 {
		t.Fatalf("after a cut the next token is %v away, want about %v", d, want)
	}
	// More 429s to requests granted before the cut are the same event.
	clock.Advance(time.Second)
	l.Answered("GET", pathBBA, granted, 429)
	if got := l.classRate(wire.ClassMarketData); got < cut {
		t.Fatalf("a 429 to a request granted before the cut cut again: %.2f/min", got)
	}
	// A 429 to one granted after it is a new event.
	before := l.classRate(wire.ClassMarketData)
	l.Answered("GET", pathBBA, clock.Now(), 429)
	if got := l.classRate(wire.ClassMarketData); got > before*adaptive.Beta*1.001 {
		t.Fatalf("a second congestion left the rate at %.2f/min, want at most half of %.2f", got, before)
	}
	// Other answers never cut.
	for _, status := range []int{200, 404, 500, 503} {
		before := l.classRate(wire.ClassMarketData)
		l.Answered("GET", pathBBA, clock.Now(), status)
		if got := l.classRate(wire.ClassMarketData); got < before {
			t.Fatalf("a %d cut the rate from %.2f to %.2f", status, before, got)
		}
	}
}

func TestAdaptiveProbesBackUpToTheCeiling(t *testing.T) {
	clock := clockwork.NewFakeClockAt(t0)
	l := NewAdaptiveLimiter(clock, 100, 300).(*adaptiveLimiter)
	spend(t, l, wire.ClassOrderReads, 299) // measured: far above the rate
	l.Answered("GET", pathOrders, clock.Now(), 429)
	start := l.classRate(wire.ClassOrderReads)
	if math.Abs(start-99*adaptive.Beta) > 1e-6 {
		t.Fatalf("after the cut: %.3f/min, want %.3f", start, 99*adaptive.Beta)
	}
	// Concave back to the rate of the cut, a plateau, then convex up to
	// the ceiling, and never past it.
	prev, reached := start, time.Duration(0)
	for s := time.Second; s <= 5*time.Minute; s += time.Second {
		clock.Advance(time.Second)
		r := l.classRate(wire.ClassOrderReads)
		if r < prev-1e-9 {
			t.Fatalf("at +%v the rate fell from %.3f to %.3f with no 429", s, prev, r)
		}
		if r > 99+1e-9 {
			t.Fatalf("at +%v the rate %.3f/min is above the ceiling", s, r)
		}
		if reached == 0 && r >= 99-1e-9 {
			reached = s
		}
		prev = r
	}
	// CUBIC's plateau: at 90 % of the cut's rate after K, then on to the
	// ceiling.
	k := adaptive.Probe.Seconds() * math.Cbrt(adaptive.Plateau-adaptive.Beta) // wmax is the ceiling here
	if got := adaptive.Rate(99.0/60, 99.0/60, k) * 60; math.Abs(got-99*adaptive.Plateau) > 1e-9 {
		t.Fatalf("at the plateau (+%.1fs): %.3f/min, want %.3f", k, got, 99*adaptive.Plateau)
	}
	t.Logf("from %.1f/min back to the ceiling in %v (plateau at +%.1fs)", start, reached, k)
	if reached == 0 || reached > 80*time.Second {
		t.Fatalf("back at the ceiling after %v, want within 80 s", reached)
	}
	// Control: with no cut the rate is the ceiling and stays there.
	if got := l.classRate(wire.ClassMarketData); math.Abs(got-99) > 1e-9 {
		t.Fatalf("an untouched class is at %.3f/min", got)
	}
}

func TestAdaptiveClassesLearnApart(t *testing.T) {
	clock := clockwork.NewFakeClockAt(t0)
	l := NewAdaptiveLimiter(clock, 100, 300).(*adaptiveLimiter)
	spend(t, l, wire.ClassMarketData, 299)
	l.Answered("GET", pathBBA, clock.Now(), 429)
	l.Answered("GET", "/api/v1/crypto/marketdata/best_bid_ask/", clock.Now().Add(time.Millisecond), 429)
	if got := l.classRate(wire.ClassMarketData); got > 50 {
		t.Fatalf("market data not cut: %.2f/min", got)
	}
	// Every other class keeps its rate and its whole burst.
	for _, c := range []wire.Class{wire.ClassAccountReads, wire.ClassOrderReads, wire.ClassOrderWrites, wire.ClassOther} {
		if got := l.classRate(c); math.Abs(got-99) > 1e-9 {
			t.Errorf("%v: %.2f/min after a 429 on market data", c, got)
		}
		spend(t, l, c, 299)
	}
	// The 429 pause is shared: Pause holds every class.
	l.Pause(time.Second)
	l.mu.Lock()
	d, _ := l.reserve(&l.classes[wire.ClassOrderWrites], clock.Now())
	l.mu.Unlock()
	if d < time.Second {
		t.Fatalf("a pause held order writes for %v, want 1s", d)
	}
}

// A waiter queued before a cut queues again at the new rate instead of
// taking the token it was promised at the old one.
func TestAdaptiveWaitersRequeueAfterACut(t *testing.T) {
	ctx := testContext(t)
	clock := clockwork.NewFakeClockAt(t0)
	l := NewAdaptiveLimiter(clock, 60, 2).(*adaptiveLimiter) // ceiling 59.4/min, burst 1
	spend(t, l, wire.ClassMarketData, 1)
	done := make(chan time.Time, 1)
	go func() {
		if err := l.WaitFor(ctx, "GET", pathBBA); err != nil {
			t.Error(err)
		}
		done <- clock.Now()
	}()
	if err := clock.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal(err)
	}
	l.Answered("GET", pathBBA, clock.Now(), 429)
	rate := l.classRate(wire.ClassMarketData)
	clock.Advance(1100 * time.Millisecond) // the old promise: ~1.01 s
	if err := clock.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal(err)
	}
	select {
	case at := <-done:
		t.Fatalf("the waiter took its token at +%v, at the old rate", at.Sub(t0))
	default:
	}
	clock.Advance(time.Duration(float64(time.Minute) / rate))
	if at := <-done; at.Sub(t0) < 2*time.Second {
		t.Fatalf("token at +%v; want after the new interval (%.1f/min)", at.Sub(t0), rate)
	}
}

func TestAdaptiveOffStillPauses(t *testing.T) {
	clock := clockwork.NewFakeClockAt(t0)
	l := NewAdaptiveLimiter(clock, 0, 0).(*adaptiveLimiter)
	spend(t, l, wire.ClassMarketData, 10000)
	l.Answered("GET", pathBBA, clock.Now(), 429)
	spend(t, l, wire.ClassMarketData, 10)
	l.Pause(time.Second)
	l.mu.Lock()
	d, _ := l.reserve(&l.classes[wire.ClassMarketData], clock.Now())
	l.mu.Unlock()
	if d != time.Second {
		t.Fatalf("a pause of an unlimited limiter held for %v", d)
	}
}

// scripted answers every request with the status next returns.
type scripted struct {
	mu    sync.Mutex
	next  func(method, path string) int
	count map[int]int
}

func (s *scripted) RoundTrip(req *http.Request) (*http.Response, error) {
	s.mu.Lock()
	status := s.next(req.Method, req.URL.Path)
	if s.count == nil {
		s.count = map[int]int{}
	}
	s.count[status]++
	s.mu.Unlock()
	if req.Body != nil {
		io.Copy(io.Discard, req.Body)
		req.Body.Close()
	}
	return &http.Response{StatusCode: status, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("{}")), Request: req}, nil
}

func (s *scripted) attempts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.count {
		n += c
	}
	return n
}

// The client feeds an AdaptiveLimiter the class of each request and its
// answer.
func TestClientTeachesTheAdaptiveLimiter(t *testing.T) {
	ctx := testContext(t)
	clock := clockwork.NewFakeClockAt(t0)
	venue := &scripted{next: func(method, path string) int {
		if strings.HasPrefix(path, "/api/v2/crypto/marketdata/") {
			return 429
		}
		return 200
	}}
	c, err := New("https://venue.example", testSigner(t), WithClock(clock), WithRoundTripper(venue),
		WithAdaptiveRateLimit(100, 300), WithRetryPolicy(RetryPolicy{}))
	if err != nil {
		t.Fatal(err)
	}
	if !c.AdaptiveRateLimit() {
		t.Fatal("AdaptiveRateLimit() = false with WithAdaptiveRateLimit")
	}
	l := c.limiter.(*adaptiveLimiter)
	if _, err := c.Get(ctx, pathBBA+"?symbol=BTC-USD"); !errors.Is(err, ErrRateLimited) {
		t.Fatalf("err = %v, want ErrRateLimited", err)
	}
	if got := l.classRate(wire.ClassMarketData); got >= 99*adaptive.Beta {
		t.Fatalf("market data at %.2f/min after a 429, want cut", got)
	}
	clock.Advance(time.Second) // past the 429 pause
	if _, err := c.Get(ctx, pathOrders); err != nil {
		t.Fatal(err)
	}
	if got := l.classRate(wire.ClassOrderReads); math.Abs(got-99) > 1e-9 {
		t.Fatalf("order reads at %.2f/min", got)
	}
	// Control: the default client's bucket learns nothing.
	d, err := New("https://venue.example", testSigner(t), WithClock(clock), WithRoundTripper(venue))
	if err != nil {
		t.Fatal(err)
	}
	if d.AdaptiveRateLimit() || d.adaptive != nil {
		t.Fatal("the default client's limiter is adaptive")
	}
}
