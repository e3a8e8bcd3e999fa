package cli

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/schollz/progressbar/v3"

	"github.com/tradewire/tradewire/broker"
	"github.com/tradewire/tradewire/transport"
)

// sweepProgress draws a progress bar on stderr while a long sweep (fees,
// orders) reads page after page: pages and items read, and the waits for
// the rate budget. It draws only when stderr is a terminal; otherwise it
// is inert and stderr gets nothing but the one error line, if any.
//
// Everything it hears comes from the sweep's goroutine (broker's
// OnProgress, the limiter's Wait); the mutex makes the limiter side safe
// for the concurrent use the Limiter interface promises.
type sweepProgress struct {
	bar   *progressbar.ProgressBar // nil when stderr is not a terminal
	title string
	noun  string // what the items are: "orders"
	clock clockwork.Clock

	mu     sync.Mutex
	pages  int
	items  int
	waits  int
	waited time.Duration
}

// newSweepProgress returns the progress of a sweep titled title ("fees")
// over items called noun ("orders"): a bar on stderr when it is a
// terminal, inert otherwise.
func (a *app) newSweepProgress(title, noun string) *sweepProgress {
	var w io.Writer
	if isTerminal(a.opts.Stderr) {
		w = a.opts.Stderr
	}
	return newSweepProgressTo(w, title, noun, a.clock())
}

// newSweepProgressTo draws on w, or nowhere when w is nil.
func newSweepProgressTo(w io.Writer, title, noun string, clk clockwork.Clock) *sweepProgress {
	p := &sweepProgress{title: title, noun: noun, clock: clk}
	if w == nil {
		return p
	}
	p.bar = progressbar.NewOptions(-1,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(p.describeLocked()),
		// A spinner interval of 0 renders on updates only: the bar starts no
		// goroutine of its own.
		progressbar.OptionSetSpinnerChangeInterval(0),
		progressbar.OptionSpinnerType(14),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionSetItsString("pages"),
		progressbar.OptionThrottle(50*time.Millisecond),
		progressbar.OptionClearOnFinish(),
	)
	_ = p.bar.RenderBlank()
	return p
}

// callOption feeds the bar from broker's per-page progress.
func (p *sweepProgress) callOption() broker.Paging {
	return broker.Paging{OnProgress: p.page}
}

// page records broker's running totals after a page.
func (p *sweepProgress) page(pr broker.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pages, p.items = pr.Pages, pr.Items
	p.redrawLocked()
}

// transportOptions returns the transport settings that let the bar see
// the waits for the rate budget: a token bucket of the same rate and burst
// as the one the transport would build, behind a limiter that reports each
// wait. No Limiter when nothing is drawn.
func (p *sweepProgress) transportOptions(perMinute float64, burst int) transport.Config {
	if p.bar == nil {
		return transport.Config{}
	}
	inner := transport.NewTokenBucket(p.clock, perMinute, burst)
	return transport.Config{Limiter: &watchedLimiter{inner: inner, clock: p.clock, progress: p}}
}

// done clears the bar, so that what follows on the terminal (the output,
// or the error line) starts on a clean line.
// It is safe to call more than once; the bar draws nothing after it.
func (p *sweepProgress) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar == nil {
		return
	}
	_ = p.bar.Finish()
	_ = p.bar.Exit()
	p.bar = nil
}

func (p *sweepProgress) waitedFor(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.waits++
	p.waited += d
	p.redrawLocked()
}

func (p *sweepProgress) redrawLocked() {
	if p.bar == nil {
		return
	}
	p.bar.Describe(p.describeLocked())
	_ = p.bar.Set(p.pages)
}

// describeLocked is the bar's text: "fees: 12 pages, 1200 orders; waited
// 3 times for the rate budget (1.8s)".
func (p *sweepProgress) describeLocked() string {
	s := fmt.Sprintf("%s: %d %s, %d %s", p.title, p.pages, plural(p.pages, "page", "pages"), p.items, p.noun)
	if p.waits > 0 {
		s += fmt.Sprintf("; waited %d %s for the rate budget (%v)", p.waits, plural(p.waits, "time", "times"), p.waited.Round(time.Millisecond))
	}
	return s
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// minBudgetWait is the shortest Wait the bar counts as a wait for the
// rate budget: on the real clock a token taken at once still reads a few
// microseconds.
const minBudgetWait = time.Millisecond

// watchedLimiter is a Limiter that reports to the progress bar how long
// each Wait blocked.
type watchedLimiter struct {
	inner    transport.Limiter
	clock    clockwork.Clock
	progress *sweepProgress
}

func (l *watchedLimiter) Wait(ctx context.Context) error {
	start := l.clock.Now()
	err := l.inner.Wait(ctx)
	if d := l.clock.Since(start); d >= minBudgetWait {
		l.progress.waitedFor(d)
	}
	return err
}

func (l *watchedLimiter) Pause(d time.Duration) { l.inner.Pause(d) }
