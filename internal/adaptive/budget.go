package adaptive

import (
	"sync"
	"time"
)

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
