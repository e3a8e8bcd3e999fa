package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/tradewire/tradewire/broker"
	"github.com/tradewire/tradewire/broker/brokertest"
	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/signing"
	"github.com/tradewire/tradewire/transport"
	"github.com/tradewire/tradewire/venue"
)

const envWatchProcessArgs = "TRADEWIRE_TEST_WATCH_ARGS"

// overlap is the watch processes' --overlap: longer than the venue's
// Date (whole seconds) can put the watch's reading of its clock off.
const overlap = 2 * time.Second

// TestWatchProcess is not a test: started by startWatchProcess, it is the
// tradewire command as main runs it (SIGINT and SIGTERM end its context),
// with the arguments in TRADEWIRE_TEST_WATCH_ARGS.
func TestWatchProcess(t *testing.T) {
	raw := os.Getenv(envWatchProcessArgs)
	if raw == "" {
		t.Skip("helper process for startWatchProcess")
	}
	var args []string
	if err := json.Unmarshal([]byte(raw), &args); err != nil {
		os.Exit(99)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Run(ctx, args, Options{Getenv: os.Getenv, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr})
	stop()
	os.Exit(code)
}

// watchProcess is a running tradewire watch and the events it printed.
type watchProcess struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	evs  []watchEvent
	done chan struct{} // stdout closed
}

func startWatchProcess(t *testing.T, env map[string]string, args ...string) *watchProcess {
	t.Helper()
	raw, err := json.Marshal(append([]string{"watch", "-o", "json", "--interval", "50ms", "--overlap", overlap.String(), "--rate-per-minute", "0"}, args...))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestWatchProcess$")
	cmd.Env = []string{envWatchProcessArgs + "=" + string(raw), "HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &watchProcess{cmd: cmd, done: make(chan struct{})}
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-p.done; _ = cmd.Wait() })
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var ev watchEvent
			if json.Unmarshal(sc.Bytes(), &ev) != nil {
				continue // a line cut short by the kill
			}
			p.mu.Lock()
			p.evs = append(p.evs, ev)
			p.mu.Unlock()
		}
	}()
	return p
}

func (p *watchProcess) events() []watchEvent {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]watchEvent(nil), p.evs...)
}

// stop signals the process and returns its exit code (-1: killed).
func (p *watchProcess) stop(t *testing.T, sig os.Signal) int {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	<-p.done
	_ = p.cmd.Wait()
	return p.cmd.ProcessState.ExitCode()
}

// until polls cond (reading the processes' output) until it holds or a
// 20 s deadline passes.
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting: %s", what)
		}
		time.Sleep(10 * time.Millisecond) // waiting on the subprocess's output
	}
}

// TestWatchKilledAndRestartedAsProcesses runs tradewire watch as a
// process against a loopback venue while orders are placed, filled and
// canceled; kills it (SIGKILL) mid-run and starts it again on the same
// --store: every order of the venue's ledger is reported with its final
// state and cumulative fill (0 missed). Then it stops it with SIGINT
// (exit 0) and starts it again: it repeats nothing.
func TestWatchKilledAndRestartedAsProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	t.Parallel()
	srv := brokertest.NewServer(venue.Config{Seed: simSeed,
		RateLimits:  venue.RateLimits{Account: venue.RateLimit{PerMinute: math.Inf(1)}},
		BuyingPower: decimal.New(1, 12)})
	t.Cleanup(srv.Close)
	env := map[string]string{envBaseURL: srv.URL, envAPIKey: srv.APIKey, envPrivateKey: srv.PrivateKeyBase64,
		envStore: filepath.Join(t.TempDir(), "intents.db")}
	key, err := signing.ParsePrivateKey(srv.PrivateKeyBase64)
	if err != nil {
		t.Fatal(err)
	}
	traderStore := idempotency.NewMemoryStore()
	trader, err := broker.New(broker.Config{APIKey: srv.APIKey, PrivateKey: key, BaseURL: srv.URL,
		IntentStore: traderStore, Transport: transport.Config{RatePerMinute: -1}})
	if err != nil {
		t.Fatal(err)
	}
	defer trader.Close()
	ctx := context.Background()
	n := 0
	trade := func(orders int) {
		t.Helper()
		for range orders {
			n++
			req := broker.OrderRequest{Symbol: "BTC-USD", Side: broker.SideBuy, Type: broker.TypeMarket, AssetQuantity: decimal.New(int64(100+n), -5)}
			if n%2 == 0 { // resting far below the market, then canceled
				req.Type, req.LimitPrice = broker.TypeLimit, decimal.NewFromInt(1000)
			}
			o, err := trader.Place(ctx, fmt.Sprintf("k%d", n), req)
			if err != nil {
				t.Fatalf("place %d: %v", n, err)
			}
			if req.Type == broker.TypeLimit {
				if _, err := trader.CancelOrder(ctx, o.ID); err != nil {
					t.Fatalf("cancel %s: %v", o.ID, err)
				}
			}
		}
	}
	var runs []*watchProcess
	seen := func() map[string]watchEvent { // each order's last event, over every run
		last := map[string]watchEvent{}
		for _, p := range runs {
			for _, ev := range p.events() {
				last[ev.ID] = ev
			}
		}
		return last
	}
	missed := func() (int, string) { // orders of the ledger whose final state or fill was not reported
		truth, err := broker.Collect(trader.Orders(ctx, broker.OrderFilter{}, broker.Paging{MaxPages: 1000}))
		if err != nil {
			t.Fatal(err)
		}
		byID := map[string]broker.Order{}
		for _, o := range truth {
			byID[o.ID] = o
		}
		last, count, first := seen(), 0, ""
		for _, rec := range srv.Ledger().Orders() {
			o, ev := byID[rec.ID], last[rec.ID]
			if !o.State.Final() || ev.State != string(o.State) || ev.FilledAssetQuantity != o.FilledAssetQuantity.String() {
				if count++; first == "" {
					first = fmt.Sprintf("order %s: venue %s filled %s, last event %q filled %q", rec.ID, o.State, o.FilledAssetQuantity, ev.State, ev.FilledAssetQuantity)
				}
			}
		}
		return count, first
	}

	// An order whose intent the watch's store holds as unknown, as a
	// process killed after the create's send leaves it: the watch
	// settles it acknowledged.
	crashed, err := trader.Place(ctx, "crashed", broker.OrderRequest{Symbol: "BTC-USD", Side: broker.SideBuy, Type: broker.TypeLimit,
		AssetQuantity: decimal.RequireFromString("0.001"), LimitPrice: decimal.NewFromInt(1000)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := trader.CancelOrder(ctx, crashed.ID); err != nil {
		t.Fatal(err)
	}
	rec, err := traderStore.Get(ctx, crashed.ClientOrderID)
	if err != nil {
		t.Fatal(err)
	}
	rec.State, rec.OrderID, rec.Order, rec.Holder = idempotency.Unknown, "", nil, ""
	bolt, err := idempotency.Open(env[envStore], idempotency.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := bolt.Create(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if err := bolt.Close(); err != nil {
		t.Fatal(err)
	}

	runs = append(runs, startWatchProcess(t, env, "--since", "10m"))
	until(t, "the crashed intent settled", func() bool {
		for _, ev := range runs[0].events() {
			if ev.Event == string(broker.EventSettled) && ev.ClientOrderID == crashed.ClientOrderID {
				if ev.Intent != string(idempotency.Acknowledged) || ev.ID != crashed.ID {
					t.Fatalf("the crashed intent's event: %+v; want settled acknowledged, order %s", ev, crashed.ID)
				}
				return true
			}
		}
		return false
	})
	trade(10)
	until(t, "the first run's events", func() bool { return len(runs[0].events()) >= 5 })
	trade(10)
	if code := runs[0].stop(t, syscall.SIGKILL); code != -1 {
		t.Fatalf("the killed watch exited %d", code)
	}
	killedAt := len(runs[0].events())
	trade(10) // while no watch runs
	// and for longer than the overlap (on the venue's real clock): only
	// the saved cursor reaches back to what changed since the last poll
	// the killed run finished.
	dead := time.Now().Add(overlap + 2*time.Second)
	until(t, "the overlap to pass", func() bool { return time.Now().After(dead) })
	runs = append(runs, startWatchProcess(t, env))
	trade(10)
	var why string
	defer func() {
		if t.Failed() && why != "" {
			t.Log(why)
		}
	}()
	until(t, "every order's final state reported", func() bool {
		var m int
		m, why = missed()
		return m == 0
	})
	if code := runs[1].stop(t, os.Interrupt); code != 0 {
		t.Fatalf("the watch stopped by SIGINT exited %d, want 0", code)
	}
	t.Logf("%d orders; %d events before the kill, %d after the restart; 0 missed", len(srv.Ledger().Orders()), killedAt, len(runs[1].events()))

	// After a clean stop, a restart prints only what changed since: the
	// one order placed now.
	third := startWatchProcess(t, env)
	runs = append(runs, third)
	trade(1)
	until(t, "the new order's event after the clean restart", func() bool {
		for _, ev := range third.events() {
			if ev.State == string(broker.StateFilled) {
				return true
			}
		}
		return false
	})
	if code := third.stop(t, os.Interrupt); code != 0 {
		t.Fatalf("the third watch exited %d", code)
	}
	if evs := third.events(); len(evs) != 1 {
		t.Errorf("after a clean stop the restart printed %d events, want 1 (the new order): %+v", len(evs), evs)
	}
	if m, first := missed(); m != 0 {
		t.Errorf("%d orders missed: %s", m, first)
	}
}
