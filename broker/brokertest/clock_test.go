package brokertest_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/tradewire/tradewire/broker"
	"github.com/tradewire/tradewire/broker/brokertest"
	"github.com/tradewire/tradewire/signing"
	"github.com/tradewire/tradewire/transport"
	"github.com/tradewire/tradewire/venue"
)

var clockStart = time.Date(2026, 8, 20, 18, 0, 0, 0, time.UTC)

func TestClockCountsWaitsNotBounds(t *testing.T) {
	clk := venue.NewClock(clockStart)
	bound := make(chan struct{})
	clk.AfterFunc(time.Second, func() { close(bound) })
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if err := clk.BlockUntilContext(ctx, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("BlockUntilContext with only a bound pending = %v, want it to wait", err)
	}

	timer := clk.NewTimer(2 * time.Second)
	if err := clk.BlockUntilContext(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second) // fires the bound, before Advance returns
	select {
	case <-bound:
	default:
		t.Fatal("Advance past a bound did not fire it")
	}
	select {
	case <-timer.Chan():
		t.Fatal("a timer fired early")
	default:
	}
	clk.Advance(time.Second)
	if got := <-timer.Chan(); !got.Equal(clockStart.Add(2 * time.Second)) {
		t.Fatalf("timer fired at %v", got)
	}
	if timer.Stop() {
		t.Error("Stop of a fired timer reported it pending")
	}
}

func TestClockFiresInOrderAtEachDeadline(t *testing.T) {
	clk := venue.NewClock(clockStart)
	var order []string
	at := func(name string) func() {
		return func() { order = append(order, fmt.Sprintf("%s@%v", name, clk.Since(clockStart))) }
	}
	clk.AfterFunc(3*time.Second, at("c"))
	clk.AfterFunc(time.Second, at("a"))
	clk.AfterFunc(time.Second, at("b")) // same instant: creation order
	stopped := clk.AfterFunc(2*time.Second, at("never"))
	if !stopped.Stop() {
		t.Fatal("Stop of a pending bound reported it fired")
	}
	tick := clk.NewTicker(2 * time.Second)
	defer tick.Stop()
	clk.Advance(5 * time.Second)
	want := "[a@1s b@1s c@3s]"
	if got := fmt.Sprint(order); got != want {
		t.Fatalf("fired %s, want %s", got, want)
	}
	if got := <-tick.Chan(); !got.Equal(clockStart.Add(2 * time.Second)) {
		t.Fatalf("tick at %v, want the first at 2s (the channel holds one)", got)
	}
	if clk.Since(clockStart) != 5*time.Second {
		t.Fatalf("clock at %v", clk.Since(clockStart))
	}
}

func TestWithTimeoutIsOnTheClock(t *testing.T) {
	clk := venue.NewClock(clockStart)
	ctx, cancel := venue.WithTimeout(t.Context(), clk, time.Minute)
	defer cancel()
	if dl, ok := ctx.Deadline(); !ok || !dl.Equal(clockStart.Add(time.Minute)) {
		t.Fatalf("deadline %v %v, want the clock's now + 1m", dl, ok)
	}
	if err := ctx.Err(); err != nil { // does not block
		t.Fatal(err)
	}
	ctx2, cancel2 := context.WithCancel(ctx) // children see the deadline's error
	defer cancel2()
	clk.Advance(59 * time.Second)
	if ctx.Err() != nil {
		t.Fatal("done before its deadline")
	}
	clk.Advance(time.Second)
	<-ctx2.Done()
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) || !errors.Is(ctx2.Err(), context.DeadlineExceeded) {
		t.Fatalf("Err = %v, child %v; want DeadlineExceeded", ctx.Err(), ctx2.Err())
	}

	parent, stop := context.WithCancel(t.Context())
	ctx3, cancel3 := venue.WithTimeout(parent, clk, time.Hour)
	defer cancel3()
	stop()
	<-ctx3.Done()
	if !errors.Is(ctx3.Err(), context.Canceled) {
		t.Fatalf("Err after the parent's cancel = %v", ctx3.Err())
	}
	cancel4 := func() {}
	_, cancel4 = venue.WithTimeout(t.Context(), clk, time.Hour)
	cancel4()
	if err := clk.BlockUntilContext(expired(t), 0); err != nil {
		t.Fatal(err)
	}
}

func expired(t *testing.T) context.Context {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	return ctx
}

// botRun is what one run of the bot saw.
type botRun struct {
	account string
	quotes  int
	elapsed time.Duration // on the simulated clock
}

// bot is a small trading bot's read loop: the account, a quote, a wait,
// another quote and the holdings. It waits on its clock like any bot.
func bot(ctx context.Context, c *broker.Client, clk clockwork.Clock) (botRun, error) {
	start := clk.Now()
	var run botRun
	a, err := c.Account(ctx)
	if err != nil {
		return run, fmt.Errorf("account: %w", err)
	}
	run.account = a.AccountNumber
	for i := range 2 {
		if i > 0 {
			select {
			case <-ctx.Done():
				return run, ctx.Err()
			case <-clk.After(2 * time.Second):
			}
		}
		q, err := c.BestBidAsk(ctx, "BTC-USD")
		if err != nil {
			return run, fmt.Errorf("quote %d: %w", i, err)
		}
		if len(q) != 1 || !q[0].Ask.IsPositive() {
			return run, fmt.Errorf("quote %d: %+v", i, q)
		}
		run.quotes++
	}
	if _, err := broker.Collect(c.Holdings(ctx, nil)); err != nil {
		return run, fmt.Errorf("holdings: %w", err)
	}
	run.elapsed = clk.Since(start)
	return run, nil
}

// TestBotOnClockWithTheUsualIdiom drives the bot 1,000 times with the
// usual clockwork idiom — a goroutine doing BlockUntilContext(ctx, 1) then
// Advance(100ms) — over an in-memory venue that answers the holdings read
// 503 once (a retry backoff to wait out) and holds every quote 1.5 s (a
// wait inside a request in flight, under its 10 s attempt timeout), with
// the bot's context deadline on the clock (WithTimeout). Every run must
// succeed and take the same simulated time: the advancing never times a
// request out.
func TestBotOnClockWithTheUsualIdiom(t *testing.T) {
	const reps = 1000
	var first botRun
	wall := time.Now()
	for i := range reps {
		run, err := oneBotRun(t)
		if err != nil {
			t.Fatalf("run %d of %d: %v", i+1, reps, err)
		}
		if i == 0 {
			first = run
		} else if run != first {
			t.Fatalf("run %d = %+v, run 1 = %+v: the simulated time depends on the scheduling", i+1, run, first)
		}
	}
	t.Logf("%d of %d runs passed, each %v on the simulated clock; %v of wall time in all", reps, reps, first.elapsed, time.Since(wall))
	// 2 s between the quotes, 2 × 1.5 s held quotes, the 503's backoff.
	if first.elapsed <= 5*time.Second || first.quotes != 2 {
		t.Fatalf("run = %+v", first)
	}
}

// botVenue is the bot's venue and client on clk.
func botVenue(clk clockwork.Clock) (*brokertest.Server, *broker.Client, error) {
	srv, err := brokertest.New(venue.Config{Clock: clk, Faults: venue.FaultPlan{Faults: []venue.Fault{
		{Kind: "respond", Method: "GET", Path: "/api/v2/crypto/trading/holdings/", Status: 503},
		{Kind: "latency", Path: "/api/v2/crypto/marketdata/best_bid_ask/", Delay: 1500 * time.Millisecond, Times: 2},
	}}})
	if err != nil {
		return nil, nil, err
	}
	key, err := signing.ParsePrivateKey(srv.PrivateKeyBase64)
	if err != nil {
		return nil, nil, err
	}
	c, err := broker.New(broker.Config{
		APIKey:     srv.APIKey,
		PrivateKey: key,
		BaseURL:    srv.URL,
		Transport:  transport.Config{RoundTripper: srv.Client().Transport, Clock: clk},
	})
	return srv, c, err
}

func oneBotRun(t *testing.T) (botRun, error) {
	clk := venue.NewClock(clockStart)
	srv, c, err := botVenue(clk)
	if err != nil {
		return botRun{}, err
	}
	defer c.Close()

	ctx, cancel := venue.WithTimeout(t.Context(), clk, time.Minute)
	defer cancel()
	advanced := make(chan struct{})
	go func() {
		defer close(advanced)
		for clk.BlockUntilContext(ctx, 1) == nil {
			clk.Advance(100 * time.Millisecond)
		}
	}()
	run, err := bot(ctx, c, clk)
	cancel()
	<-advanced
	if err == nil && srv.PendingFaults() != 0 {
		err = fmt.Errorf("%d fault activations unused", srv.PendingFaults())
	}
	return run, err
}

// TestBotInSynctestBubble runs the same bot on the real clock inside a
// testing/synctest bubble, where the bubble's time does the advancing: the
// same simulated time as on a Clock.
func TestBotInSynctestBubble(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := clockwork.NewRealClock()
		srv, c, err := botVenue(clk)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		ctx, cancel := venue.WithTimeout(t.Context(), clk, time.Minute)
		defer cancel()
		run, err := bot(ctx, c, clk)
		if err != nil {
			t.Fatal(err)
		}
		if run.elapsed != 5500*time.Millisecond || run.quotes != 2 || srv.PendingFaults() != 0 {
			t.Fatalf("run = %+v, %d faults unused", run, srv.PendingFaults())
		}
	})
}

// With SkipWaits(1) a wait moves the clock by exactly the time waited, at
// once, firing the bounds it passes and no other.
func TestClockSkipWaitsSequential(t *testing.T) {
	clk := venue.NewClock(clockStart)
	clk.SkipWaits(1)
	fired := make(chan struct{})
	clk.AfterFunc(time.Second, func() { close(fired) }) // a bound, not a wait
	select {
	case <-clk.NewTimer(500 * time.Millisecond).Chan():
	default:
		t.Fatal("a timer did not fire at once")
	}
	<-clk.After(250 * time.Millisecond)
	clk.Sleep(100 * time.Millisecond)
	if got := clk.Since(clockStart); got != 850*time.Millisecond {
		t.Fatalf("clock moved %v, want 850ms", got)
	}
	select {
	case <-fired:
		t.Fatal("a bound further out fired")
	default:
	}
	tick := clk.NewTicker(100 * time.Millisecond) // not a wait to skip to
	defer tick.Stop()
	if got := clk.Since(clockStart); got != 850*time.Millisecond {
		t.Fatalf("a ticker moved the clock to %v", got)
	}
	clk.Sleep(200 * time.Millisecond) // past the bound: it fires
	<-fired
	<-tick.Chan()
	if got := clk.Since(clockStart); got != 1050*time.Millisecond {
		t.Fatalf("clock at %v, want 1.05s", got)
	}
	clk.SkipWaits(0)
	timer := clk.NewTimer(time.Second)
	select {
	case <-timer.Chan():
		t.Fatal("SkipWaits(0) did not stop the skipping")
	default:
	}
}

// With SkipWaits(n) the clock waits for n goroutines to wait, then fires
// the earliest wait: the order of events is the order of the deadlines,
// whatever the goroutines' scheduling, and no wall time passes.
func TestClockSkipWaitsGoroutines(t *testing.T) {
	for range 20 {
		clk := venue.NewClock(clockStart)
		clk.SkipWaits(2)
		events := make(chan string, 8)
		done := make(chan struct{})
		bot := func(name string, every time.Duration) {
			defer func() { done <- struct{}{} }()
			for range 3 {
				clk.Sleep(every)
				events <- fmt.Sprintf("%s@%v", name, clk.Since(clockStart))
			}
		}
		go bot("a", 2*time.Second)
		go bot("b", 3*time.Second)
		<-done
		clk.SkipWaits(1) // one goroutine left
		<-done
		close(events)
		var got []string
		for e := range events {
			got = append(got, e)
		}
		// a waits at 2, 4, 6; b at 3, 6, 9; at 6 the wait made first (b's, at
		// 3s) fires first, alone.
		if want := "[a@2s b@3s a@4s b@6s a@6s b@9s]"; fmt.Sprint(got) != want {
			t.Fatalf("events %v, want %s", got, want)
		}
	}
}
