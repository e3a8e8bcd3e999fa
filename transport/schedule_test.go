package transport

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tradewire/tradewire/internal/wire"
	simvenue "github.com/tradewire/tradewire/venue"
)

// capacity is what the fake venue allows on one endpoint.
type capacity struct {
	perMinute float64
	burst     float64
}

// scheduleVenue is a venue whose per-endpoint token bucket follows a
// capacity schedule on the shared clock: the test's model of a venue whose
// limits "fluctuate depending on the availability of our service". It
// answers 200 when the endpoint's bucket holds a token and 429 otherwise.
type scheduleVenue struct {
	clock    simvenue.Clock
	start    time.Time
	schedule func(elapsed time.Duration) capacity

	mu       sync.Mutex
	buckets  map[string]*venueBucket
	arrivals []arrival
}

type venueBucket struct {
	tokens float64
	last   time.Time
}

type arrival struct {
	at     time.Duration // since start
	path   string
	status int
}

func (v *scheduleVenue) RoundTrip(req *http.Request) (*http.Response, error) {
	v.mu.Lock()
	now := v.clock.Now()
	cp := v.schedule(now.Sub(v.start))
	b := v.buckets[req.URL.Path]
	if b == nil {
		b = &venueBucket{tokens: cp.burst, last: now}
		v.buckets[req.URL.Path] = b
	}
	b.tokens = math.Min(cp.burst, b.tokens+now.Sub(b.last).Seconds()*cp.perMinute/60)
	b.last = now
	status := http.StatusTooManyRequests
	if b.tokens >= 1 {
		b.tokens--
		status = http.StatusOK
	}
	v.arrivals = append(v.arrivals, arrival{at: now.Sub(v.start), path: req.URL.Path, status: status})
	v.mu.Unlock()
	return &http.Response{StatusCode: status, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("{}")), Request: req}, nil
}

// phase is one stretch of the schedule.
type phase struct {
	from, to time.Duration
	cap      capacity
}

// phaseFigures is what one phase measured: 429s, 429s in its first
// minute, requests answered 200, and throughput as a share of the
// capacity's sustained rate over the phase and over the phase less its
// first minute.
type phaseFigures struct {
	throttled, throttledFirstMinute, ok int
	share, steadyShare                  float64
}

func measure(arrivals []arrival, ph phase) phaseFigures {
	var f phaseFigures
	steadyOK := 0
	for _, a := range arrivals {
		if a.at < ph.from || a.at >= ph.to {
			continue
		}
		switch a.status {
		case http.StatusTooManyRequests:
			f.throttled++
			if a.at < ph.from+time.Minute {
				f.throttledFirstMinute++
			}
		case http.StatusOK:
			f.ok++
			if a.at >= ph.from+time.Minute {
				steadyOK++
			}
		}
	}
	minutes := (ph.to - ph.from).Minutes()
	f.share = float64(f.ok) / (ph.cap.perMinute * minutes)
	f.steadyShare = float64(steadyOK) / (ph.cap.perMinute * (minutes - 1))
	return f
}

// simulate runs one saturated caller of best bid/ask for the schedule's
// length on a skipping clock, through a Client with the Limiter limiter
// builds, and returns the venue's arrivals and, each simulated second,
// the adaptive limiter's market-data rate (nil for another Limiter).
func simulate(t *testing.T, phases []phase, limiter func(simvenue.Clock) Limiter) ([]arrival, []float64) {
	t.Helper()
	clock := simvenue.NewClock(t0)
	clock.SkipWaits(1)
	venue := &scheduleVenue{clock: clock, start: t0, buckets: map[string]*venueBucket{}, schedule: func(el time.Duration) capacity {
		for _, ph := range phases {
			if el < ph.to {
				return ph.cap
			}
		}
		return phases[len(phases)-1].cap
	}}
	l := limiter(clock)
	c, err := New("https://venue.example", testSigner(t), Config{Clock: clock, RoundTripper: venue, Limiter: l})
	if err != nil {
		t.Fatal(err)
	}
	al, _ := l.(*adaptiveLimiter)
	var rates []float64
	end := phases[len(phases)-1].to
	for clock.Since(t0) < end {
		c.Get(context.Background(), pathBBA+"?symbol=BTC-USD") // a 429 after 4 attempts is counted at the venue
		for al != nil && time.Duration(len(rates))*time.Second <= clock.Since(t0) {
			rates = append(rates, al.classRate(wire.ClassMarketData))
		}
	}
	return venue.arrivals, rates
}

// TestAdaptiveUnderAFluctuatingVenue is the schedule simulation: the
// venue's best bid/ask endpoint allows 100 a minute in bursts of 300,
// drops to 30 a minute in bursts of 90 at 10 min and is back at 20 min;
// one caller asks as fast as its client lets it. It reports 429s per
// phase (and in the minute after each change), throughput as a share of
// the phase's capacity, and how long after the restore the adaptive rate
// is back above 90 % of the capacity; the fixed bucket is the control.
//
//	go test -run TestAdaptiveUnderAFluctuatingVenue -v ./transport/
func TestAdaptiveUnderAFluctuatingVenue(t *testing.T) {
	full, low := capacity{100, 300}, capacity{30, 90}
	phases := []phase{
		{0, 10 * time.Minute, full},
		{10 * time.Minute, 20 * time.Minute, low},
		{20 * time.Minute, 30 * time.Minute, full},
	}
	arrivals, rates := simulate(t, phases, func(c simvenue.Clock) Limiter { return newAdaptiveLimiter(c, 100, 300) })
	// The control, the fixed bucket, has a minute at full capacity and
	// three lowered: it draws a 429 on most requests from the first
	// lowered minute on, and under the race detector every simulated
	// request costs.
	controlPhases := []phase{{0, time.Minute, full}, {time.Minute, 4 * time.Minute, low}}
	fixed, _ := simulate(t, controlPhases, func(c simvenue.Clock) Limiter { return NewTokenBucket(c, 100, 300) })

	recovered := time.Duration(-1)
	for s := int(phases[2].from.Seconds()); s < len(rates); s++ {
		if rates[s] >= 0.9*full.perMinute {
			recovered = time.Duration(s)*time.Second - phases[2].from
			break
		}
	}
	var report strings.Builder
	fmt.Fprintf(&report, "phase            limiter   429s  (1st min)  200s  throughput  (after 1st min)\n")
	var af [3]phaseFigures
	row := func(who string, ph phase, f phaseFigures) {
		name := fmt.Sprintf("%2.0f-%2.0f min %3.0f/min", ph.from.Minutes(), ph.to.Minutes(), ph.cap.perMinute)
		fmt.Fprintf(&report, "%-16s %-9s %4d  %9d  %4d  %9.1f%%  %14.1f%%\n", name, who, f.throttled, f.throttledFirstMinute, f.ok, 100*f.share, 100*f.steadyShare)
	}
	for i, ph := range phases {
		af[i] = measure(arrivals, ph)
		row("adaptive", ph, af[i])
	}
	row("fixed", controlPhases[1], measure(fixed, controlPhases[1]))
	fmt.Fprintf(&report, "adaptive rate back at >= 90/min %v after the restore", recovered)
	t.Log("\n" + report.String())

	// What must hold whatever the tuning: the adaptive limiter draws far
	// fewer 429s than the fixed bucket while capacity is low, never a
	// 429 at full capacity, and recovers.
	lowFixed := measure(fixed, controlPhases[1])
	if af[1].throttled*4 > lowFixed.throttled {
		t.Errorf("capacity lowered: %d 429s adaptive in 10 minutes vs %d fixed in 3", af[1].throttled, lowFixed.throttled)
	}
	if af[0].throttled != 0 {
		t.Errorf("full capacity: %d 429s", af[0].throttled)
	}
	if recovered < 0 || recovered > 2*time.Minute {
		t.Errorf("not back above 90/min within 2 minutes of the restore (%v)", recovered)
	}
	if af[1].steadyShare < 0.8 || af[2].steadyShare < 0.8 {
		t.Errorf("throughput under 80%% of capacity: lowered %.2f, restored %.2f", af[1].steadyShare, af[2].steadyShare)
	}
}
