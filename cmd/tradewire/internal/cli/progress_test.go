package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jonboulle/clockwork"

	"github.com/tradewire/tradewire/broker"
	"github.com/tradewire/tradewire/transport"
)

// Off a terminal the sweeps draw nothing: stderr stays empty on success.
func TestProgress_NothingOffATerminal(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"fees"}, {"orders"}, {"fees", "--allow-partial", "--max-pages", "1"}} {
		r := runSim(t, args...)
		ok(t, r)
	}
	env := pagedVenue(t)
	for _, args := range [][]string{{"fees", "--max-pages", "100"}, {"orders", "--max-pages", "100"}} {
		r := runCLI(t, env, "", args...)
		ok(t, r)
	}
}

// The bar counts pages, items and the waits for the rate budget, and
// clears its line when done.
func TestProgress_Bar(t *testing.T) {
	t.Parallel()
	clk := skippingClock(simNow)
	var buf bytes.Buffer
	p := newSweepProgressTo(&buf, "fees", "orders", clk)
	opts := p.transportOptions(100, 1)
	if _, ok := opts.Limiter.(*watchedLimiter); !ok {
		t.Fatalf("transport limiter %T, want the watched limiter", opts.Limiter)
	}
	// The same bucket as the transport's own: a burst of 1, then one token
	// every 606ms (600ms, refilled 1% under), taken on the skipping clock.
	l := &watchedLimiter{inner: transport.NewTokenBucket(clk, 100, 1), clock: clk, progress: p}
	for range 3 {
		if err := l.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	p.page(broker.Progress{Pages: 3, Items: 300})

	p.mu.Lock()
	got := p.describeLocked()
	p.mu.Unlock()
	if want := "fees: 3 pages, 300 orders; waited 2 times for the rate budget (1.212s)"; got != want {
		t.Errorf("description %q, want %q", got, want)
	}
	if !strings.Contains(buf.String(), "fees: 0 pages, 0 orders") {
		t.Errorf("the bar drew nothing at the start: %q", buf.String())
	}
	p.done()
	p.done() // twice is harmless
	p.page(broker.Progress{Pages: 4, Items: 400})
	out := buf.String()
	if !strings.HasSuffix(out, "\r") {
		t.Errorf("the bar did not clear its line when done: %q", out)
	}
}

// An inert progress (stderr not a terminal) adds no transport option and
// draws nowhere.
func TestProgress_Inert(t *testing.T) {
	t.Parallel()
	p := newSweepProgressTo(nil, "orders", "orders", clockwork.NewFakeClock())
	if opts := p.transportOptions(100, 300); opts.Limiter != nil {
		t.Errorf("inert progress returned a limiter %T", opts.Limiter)
	}
	p.page(broker.Progress{Pages: 1, Items: 1})
	p.done()
}

// The new commands' errors map to the documented exit codes.
func TestExitCode_BrokerErrors(t *testing.T) {
	t.Parallel()
	notFound := &transport.StatusError{Method: "GET", Path: "/o/", StatusCode: 404}
	rejected := &transport.StatusError{Method: "POST", Path: "/o/x/cancel/", StatusCode: 400}
	tests := []struct {
		name string
		err  error
		want int
	}{
		{"ErrNoSuchOrder", fmt.Errorf("broker: order x: %w: %w", broker.ErrNoSuchOrder, notFound), exitNotFound},
		{"ArgumentError", &broker.ArgumentError{Field: "symbol", Reason: "bad"}, exitUsage},
		{"cancel rejected", fmt.Errorf("broker: cancel order x rejected: %w", rejected), exitRejected},
		{"preview with violations", &previewRefusedError{violations: []broker.Violation{{Field: "symbol", Code: "pair_not_tradable"}}}, exitRejected},
		{"page cap", &pageCapError{msg: "x", err: &broker.PageCapError{Path: "/o/", Pages: 2}}, exitFailure},
		{"wrapped page cap", fmt.Errorf("broker: fee summary: %w", &broker.PageCapError{}), exitFailure},
		{"unknown symbol", fmt.Errorf("broker: %w: X-Y", broker.ErrUnknownSymbol), exitFailure},
	}
	for _, tt := range tests {
		if got := exitCode(tt.err); got != tt.want {
			t.Errorf("%s: exit %d, want %d", tt.name, got, tt.want)
		}
	}
	var pc *broker.PageCapError
	if !errors.As(&pageCapError{err: &broker.PageCapError{Pages: 3}}, &pc) || pc.Pages != 3 {
		t.Error("pageCapError does not unwrap to the *broker.PageCapError")
	}
}
