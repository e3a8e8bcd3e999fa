package transport

import (
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
	simvenue "github.com/tradewire/tradewire/venue"
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

// next takes a token of class c and returns how long it is away.
func next(l *adaptiveLimiter, c wire.Class) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	d, _ := l.reserve(&l.classes[c], l.clock.Now())
	return d
}

// sendAtCeiling takes tokens of class c one interval of the ceiling
// apart for d and returns how many it took.
func sendAtCeiling(t *testing.T, clock *clockwork.FakeClock, l *adaptiveLimiter, c wire.Class, d time.Duration) int {
	t.Helper()
	interval := time.Duration(math.Ceil(float64(time.Second) / l.ceiling))
	n := 0
	for end := clock.Now().Add(d); clock.Now().Before(end); n++ {
		clock.Advance(interval)
		l.mu.Lock()
		d, _ := l.reserve(&l.classes[c], clock.Now())
		l.classes[c].granted++ // as wait counts a grant
		l.mu.Unlock()
		if d > 0 {
			t.Fatalf("token %d at the ceiling is %v away", n+1, d)
		}
	}
	return n
}

// The first 429 holds the class at nothing for adaptive.Measure; the next
// one measures the venue's rate from what was granted between the two,
// and the class holds under it until its probe, adaptive.Every later,
// when it is back at the ceiling.
func TestAdaptiveMeasuresTheVenueBetweenTwo429s(t *testing.T) {
	clock := clockwork.NewFakeClockAt(t0)
	l := newAdaptiveLimiter(clock, 100, 300)
	if got := l.classRate(wire.ClassMarketData); math.Abs(got-99) > 1e-9 {
		t.Fatalf("starting rate %v/min, want Headroom's 99", got)
	}
	spend(t, l, wire.ClassMarketData, 100)
	first := clock.Now()
	l.Answered("GET", pathBBA, first, 429)
	if got := l.classRate(wire.ClassMarketData); got != 0 {
		t.Fatalf("after a first 429 the class sends at %.2f/min, want nothing", got)
	}
	// The bucket is empty and stays so until Measure: then one interval of
	// the ceiling.
	if d, want := next(l, wire.ClassMarketData), adaptive.Measure+time.Duration(float64(time.Second)/l.ceiling); d < want-time.Millisecond || d > want+time.Millisecond {
		t.Fatalf("after a first 429 the next token is %v away, want %v", d, want)
	}
	l.unreserve(&l.classes[wire.ClassMarketData], l.classes[wire.ClassMarketData].gen)
	// 429s to requests granted before the cut are the same congestion,
	// whenever they come.
	clock.Advance(adaptive.Measure)
	l.Answered("GET", pathBBA, first, 429)
	if got := l.classRate(wire.ClassMarketData); math.Abs(got-99) > 1e-9 {
		t.Fatalf("at its probe the class is at %.2f/min, want the ceiling", got)
	}
	// At the ceiling for 20 s (the venue's bucket, empty at the first 429,
	// gained 10 s of its rate and is being spent), then a 429: the venue
	// admitted all but the last of granted in the 30 s between.
	granted := sendAtCeiling(t, clock, l, wire.ClassMarketData, 20*time.Second)
	interval := clock.Since(first).Seconds()
	second := clock.Now()
	l.Answered("GET", pathBBA, second, 429)
	want, ok := adaptive.Hold(l.ceiling, float64(granted), interval)
	if !ok {
		t.Fatalf("%.1f s between 429s does not measure", interval)
	}
	if got := l.classRate(wire.ClassMarketData); math.Abs(got-want*60) > 1e-6 || got < 50 || got > 70 {
		t.Fatalf("after %d granted in %.1f s the class holds at %.2f/min, want %.2f", granted, interval, got, want*60)
	}
	// Empty again, then one interval of the hold's rate per token.
	if d := next(l, wire.ClassMarketData); math.Abs(d.Seconds()-1/want) > 0.01 {
		t.Fatalf("the next token is %v away, want %.3fs", d, 1/want)
	}
	// Other answers never cut; the hold lasts until Every, and then the
	// class is back at the ceiling, and never above it.
	for _, status := range []int{200, 404, 500, 503} {
		l.Answered("GET", pathBBA, clock.Now(), status)
	}
	clock.Advance(adaptive.Every - time.Millisecond)
	if got := l.classRate(wire.ClassMarketData); math.Abs(got-want*60) > 1e-6 {
		t.Fatalf("just before its probe the class is at %.2f/min, want the hold's %.2f", got, want*60)
	}
	clock.Advance(time.Millisecond)
	if got := l.classRate(wire.ClassMarketData); math.Abs(got-99) > 1e-9 {
		t.Fatalf("at its probe the class is at %.2f/min, want the ceiling", got)
	}
	clock.Advance(time.Hour)
	if got := l.classRate(wire.ClassMarketData); math.Abs(got-99) > 1e-9 {
		t.Fatalf("an hour on the class is at %.2f/min, want the ceiling", got)
	}
}

// An interval too short or too long to measure holds at nothing for
// Measure again; a hold never goes under the floor.
func TestAdaptiveMeasuresOnlyWithinTheWindow(t *testing.T) {
	for _, tc := range []struct {
		name     string
		after    time.Duration
		measured bool
	}{
		{"too soon", adaptive.Measure - time.Second, false},
		{"within", adaptive.Measure + time.Second, true},
		{"too late", adaptive.Window + time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := clockwork.NewFakeClockAt(t0)
			l := newAdaptiveLimiter(clock, 100, 300)
			l.Answered("GET", pathOrders, clock.Now(), 429)
			clock.Advance(tc.after)
			l.Answered("GET", pathOrders, clock.Now(), 429) // nothing granted between
			got := l.classRate(wire.ClassOrderReads)
			if tc.measured {
				if floor := 99 * adaptive.Floor; math.Abs(got-floor) > 1e-9 {
					t.Fatalf("nothing admitted in %v: %.3f/min, want the floor %.3f", tc.after, got, floor)
				}
				return
			}
			if got != 0 {
				t.Fatalf("a 429 %v after the last: %.3f/min, want nothing until Measure", tc.after, got)
			}
			clock.Advance(adaptive.Measure)
			if got := l.classRate(wire.ClassOrderReads); math.Abs(got-99) > 1e-9 {
				t.Fatalf("Measure on: %.3f/min, want the ceiling", got)
			}
		})
	}
}

func TestAdaptiveClassesLearnApart(t *testing.T) {
	clock := clockwork.NewFakeClockAt(t0)
	l := newAdaptiveLimiter(clock, 100, 300)
	spend(t, l, wire.ClassMarketData, 299)
	l.Answered("GET", pathBBA, clock.Now(), 429)
	l.Answered("GET", "/api/v1/crypto/marketdata/best_bid_ask/", clock.Now().Add(time.Millisecond), 429)
	if got := l.classRate(wire.ClassMarketData); got != 0 {
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
	if d := next(l, wire.ClassOrderWrites); d < time.Second {
		t.Fatalf("a pause held order writes for %v, want 1s", d)
	}
}

// A waiter queued before a cut queues again at the new rate instead of
// taking the token it was promised at the old one.
func TestAdaptiveWaitersRequeueAfterACut(t *testing.T) {
	ctx := testContext(t)
	clock := clockwork.NewFakeClockAt(t0)
	l := newAdaptiveLimiter(clock, 60, 2) // ceiling 59.4/min, burst 1
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
	clock.Advance(1100 * time.Millisecond) // the old promise: ~1.01 s
	if err := clock.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal(err)
	}
	select {
	case at := <-done:
		t.Fatalf("the waiter took its token at +%v, at the old rate", at.Sub(t0))
	default:
	}
	clock.Advance(adaptive.Measure) // the hold at nothing, then an interval of the ceiling
	if at := <-done; at.Sub(t0) < adaptive.Measure+time.Second {
		t.Fatalf("token at +%v; want after the hold", at.Sub(t0))
	}
}

func TestAdaptiveOffStillPauses(t *testing.T) {
	clock := clockwork.NewFakeClockAt(t0)
	l := newAdaptiveLimiter(clock, 0, 0)
	spend(t, l, wire.ClassMarketData, 10000)
	l.Answered("GET", pathBBA, clock.Now(), 429)
	spend(t, l, wire.ClassMarketData, 10)
	l.Pause(time.Second)
	if d := next(l, wire.ClassMarketData); d != time.Second {
		t.Fatalf("a pause of an unlimited limiter held for %v", d)
	}
}

// restoreFigures is what one drop and restore of the schedule venue
// drew: 429s in the drop's first minute and after it, throughput after
// its first minute, and how long after the restore the adaptive rate
// was back above 90 % of the capacity (-1: never).
type restoreFigures struct {
	transition, probing int
	steadyShare         float64
	recovered           time.Duration
}

// dropAndRestore runs the schedule venue at 100/min in bursts of 100,
// then 30/min in bursts of 30 from 1 min, restored at restore, for 70 s
// more, through the limiter newL builds (bursts of 100 keep it short).
func dropAndRestore(t *testing.T, restore time.Duration, newL func(simvenue.Clock) Limiter) restoreFigures {
	t.Helper()
	full, low := capacity{100, 100}, capacity{30, 30}
	phases := []phase{{0, time.Minute, full}, {time.Minute, restore, low}, {restore, restore + 70*time.Second, full}}
	arrivals, rates := simulate(t, phases, newL)
	f := measure(arrivals, phases[1])
	rf := restoreFigures{transition: f.throttledFirstMinute, probing: f.throttled - f.throttledFirstMinute, steadyShare: f.steadyShare, recovered: -1}
	for s := int(restore.Seconds()); s < len(rates); s++ {
		if rates[s] >= 0.9*full.perMinute {
			rf.recovered = time.Duration(s)*time.Second - restore
			break
		}
	}
	return rf
}

// sweepRestores runs dropAndRestore at each restore time, in parallel.
func sweepRestores(t *testing.T, name string, restores []time.Duration, newL func(simvenue.Clock) Limiter) []restoreFigures {
	t.Helper()
	out := make([]restoreFigures, len(restores))
	t.Run(name, func(t *testing.T) {
		for i, r := range restores {
			t.Run(r.String(), func(t *testing.T) {
				t.Parallel()
				out[i] = dropAndRestore(t, r, newL)
			})
		}
	})
	return out
}

// Over restore times spread across more than one probe cycle, a drop
// costs at most 2 429s in its first minute and one per probe after, keeps
// 90 % of the lowered capacity, and the rate is back above 90 % of the
// restored one within a minute of every restore. The control, the same
// limiter probing only every 3 minutes, misses that minute.
func TestAdaptiveFindsEveryRestoreWithinAMinute(t *testing.T) {
	var restores []time.Duration
	for k := 0; k < 12; k++ { // 5 s apart over 55 s, past a cycle of Every and its probe
		restores = append(restores, 4*time.Minute+time.Duration(k)*5*time.Second)
	}
	figures := sweepRestores(t, "adaptive", restores, func(c simvenue.Clock) Limiter { return newAdaptiveLimiter(c, 100, 100) })
	worst := time.Duration(0)
	for i, f := range figures {
		restore := restores[i]
		probes := int((restore-time.Minute)/adaptive.Every) + 1
		if f.transition > 2 || f.probing > probes {
			t.Errorf("restored at %v: %d 429s in the drop's first minute and %d after, want at most 2 and %d", restore, f.transition, f.probing, probes)
		}
		if f.steadyShare < 0.9 {
			t.Errorf("restored at %v: %.1f%% of the lowered capacity, want 90%%", restore, 100*f.steadyShare)
		}
		if f.recovered < 0 || f.recovered > time.Minute {
			t.Errorf("restored at %v: back above 90/min after %v, want within a minute", restore, f.recovered)
		}
		worst = max(worst, f.recovered)
	}
	t.Logf("worst recovery over %d restore times 5 s apart: %v", len(restores), worst)
	// Control: probing every 3 minutes, some restore is found late.
	late := 0
	for _, f := range sweepRestores(t, "control", []time.Duration{restores[2], restores[6], restores[10]}, func(c simvenue.Clock) Limiter {
		l := newAdaptiveLimiter(c, 100, 100)
		l.every = 3 * time.Minute
		return l
	}) {
		if f.recovered < 0 || f.recovered > time.Minute {
			late++
		}
	}
	if late == 0 {
		t.Error("control: probing every 3 minutes found every restore within a minute; the test shows nothing")
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
	c, err := New("https://venue.example", testSigner(t), Config{Clock: clock, RoundTripper: venue, RatePerMinute: 100, Burst: 300, Adaptive: true, Retry: &RetryPolicy{}})
	if err != nil {
		t.Fatal(err)
	}
	if !c.Config().Adaptive {
		t.Fatal("Config().Adaptive = false with Adaptive set")
	}
	l := c.limiter.(*adaptiveLimiter)
	if _, err := c.Get(ctx, pathBBA+"?symbol=BTC-USD"); !errors.Is(err, ErrRateLimited) {
		t.Fatalf("err = %v, want ErrRateLimited", err)
	}
	if got := l.classRate(wire.ClassMarketData); got != 0 {
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
	d, err := New("https://venue.example", testSigner(t), Config{Clock: clock, RoundTripper: venue})
	if err != nil {
		t.Fatal(err)
	}
	if d.Config().Adaptive || d.adaptive != nil {
		t.Fatal("the default client's limiter is adaptive")
	}
}
