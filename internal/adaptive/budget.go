package adaptive

import (
	"fmt"
	"math"
	"sync"
	"time"
)

// The venue's documented rate budget for an account, the one every
// client-side budget (transport's and package redisbudget's) keeps to
// unless configured otherwise: PerMinute requests a minute sustained, in
// bursts of Burst.
const (
	PerMinute = 100
	Burst     = 300
)

// Defaults returns perMinute and burst with a zero one replaced by the
// venue's (PerMinute, Burst): what zero means in every client-side
// budget's configuration. A negative rate (off) stays as it is.
func Defaults(perMinute float64, burst int) (float64, int) {
	if perMinute == 0 {
		perMinute = PerMinute
	}
	if burst == 0 {
		burst = Burst
	}
	return perMinute, burst
}

// SharedSettings fills a shared budget's settings (redisbudget's and
// pgbudget's Config) with their defaults — Defaults, and maxPause's
// defaultMaxPause when zero — and refuses ones that cannot be meant, in
// errors that begin with pkg. It returns the rate a minute, 0 when the
// throttle is off (a negative rate), the burst and the longest pause.
func SharedSettings(pkg string, perMinute float64, burst int, maxPause, defaultMaxPause time.Duration) (float64, int, time.Duration, error) {
	perMinute, burst = Defaults(perMinute, burst)
	if maxPause == 0 {
		maxPause = defaultMaxPause
	}
	if math.IsNaN(perMinute) || math.IsInf(perMinute, 1) {
		return 0, 0, 0, fmt.Errorf("%s: rate %v a minute: want a finite number", pkg, perMinute)
	}
	perMinute = max(0, perMinute) // negative: off
	if perMinute > 0 && burst < 1 {
		return 0, 0, 0, fmt.Errorf("%s: burst %d: want at least 1", pkg, burst)
	}
	if maxPause < 0 {
		return 0, 0, 0, fmt.Errorf("%s: max pause %v: want 0 or more", pkg, maxPause)
	}
	return perMinute, burst, maxPause, nil
}

// RateMargin is how far below its configured rate a client-side budget
// refills: 1 %. Refilling at exactly the venue's rate would spend each
// token the instant the venue's own bucket regains it, so floating-point
// rounding or the slightest arrival jitter would draw a 429; 1 % under, the
// venue's bucket gains a token every hundred requests to absorb them.
const RateMargin = 0.01

// MaxGrantDelay is the longest a request may take from the moment a budget
// grants its token to its arrival at the venue without risking a 429 from
// a venue whose own bucket is exactly as large as the one configured: the
// signature, the dial, a TLS handshake, a loaded event loop or a fleet
// member's Redis round trip all sit in between. Headroom holds that much
// of the venue's refill back from the burst.
const MaxGrantDelay = 250 * time.Millisecond

// Headroom returns the rate and burst a client-side budget keeps to so
// that a venue allowing perMinute requests a minute in bursts of burst
// never answers 429, however its requests are spread: RateMargin under the
// rate, and the burst less the tokens the venue regains in MaxGrantDelay
// at that rate, rounded up (at least 1). A request granted early and
// delayed by up to MaxGrantDelay then still finds a token at the venue:
// in any span, what arrives was granted in that span or up to
// MaxGrantDelay before it, at most burst − MaxGrantDelay × rate more than
// the venue regained. At the venue's 100 a minute and 300, it is 99 a
// minute and 299. A venue whose burst is not a token more than it regains
// in MaxGrantDelay leaves no burst that guarantees it; Headroom then
// gives 1.
func Headroom(perMinute float64, burst int) (float64, int) {
	rate := perMinute * (1 - RateMargin)
	held := int(math.Ceil(rate * MaxGrantDelay.Minutes()))
	return rate, max(1, burst-held)
}

// Pause is the pause every rate budget keeps after a 429: until it ends,
// no caller may be granted a token. Extend never shortens it. The zero
// Pause is not paused; it is safe for concurrent use.
type Pause struct {
	mu    sync.Mutex
	until time.Time
}

// Extend pauses until now+d, unless the pause already lasts longer, and
// reports whether d was positive (a pause was asked for).
func (p *Pause) Extend(now time.Time, d time.Duration) bool {
	if d <= 0 {
		return false
	}
	p.mu.Lock()
	if until := now.Add(d); until.After(p.until) {
		p.until = until
	}
	p.mu.Unlock()
	return true
}

// Left is how long after now the pause lasts, 0 or less when it is over.
func (p *Pause) Left(now time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.until.Sub(now)
}
