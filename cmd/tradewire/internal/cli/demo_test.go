package cli

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/tradewire/tradewire/broker/brokertest"
	"github.com/tradewire/tradewire/internal/skipclock"
)

// withoutWallTime drops the one line that differs between runs.
func withoutWallTime(out string) string {
	var keep []string
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, demoWallTimeTag) {
			keep = append(keep, line)
		}
	}
	return strings.Join(keep, "\n")
}

// chapter returns the text of the chapter titled title.
func chapter(t *testing.T, out, title string) string {
	t.Helper()
	_, rest, ok := strings.Cut(out, ". "+title+" ==\n")
	if !ok {
		t.Fatalf("no chapter %q in:\n%s", title, out)
	}
	body, _, _ := strings.Cut(rest, "\n== ")
	return body
}

func TestDemo(t *testing.T) {
	t.Parallel()
	r := runCLI(t, nil, "", "demo")
	if r.code != 0 {
		t.Fatalf("exit %d, stderr %q\n%s", r.code, r.stderr, r.stdout)
	}
	if r.stderr != "" {
		t.Errorf("stderr = %q, want nothing", r.stderr)
	}
	out := r.stdout
	for i, ch := range demoChapters() {
		if !strings.Contains(out, "== "+string(rune('1'+i))+". "+ch.title+" ==") {
			t.Errorf("no heading for chapter %d, %q", i+1, ch.title)
		}
	}

	reads := chapter(t, out, "Signed reads")
	for _, want := range []string{"account TW0000000001: buying power", "holdings: BTC 0.5", "BTC-USD: bid "} {
		if !strings.Contains(reads, want) {
			t.Errorf("chapter 1 lacks %q:\n%s", want, reads)
		}
	}

	storm := chapter(t, out, "A 5xx storm, ridden out by retries")
	for _, want := range []string{"-> 503, retry in 500ms", "-> 503, retry in 1s", "attempt 3: GET", "succeeded on attempt 3, 1.5s after"} {
		if !strings.Contains(storm, want) {
			t.Errorf("chapter 2 lacks %q:\n%s", want, storm)
		}
	}

	throttle := chapter(t, out, "A 429 storm, absorbed by the throttle")
	for _, want := range []string{
		"venue: 25 requests received, answered 200 ×25; 429 answers: 0\n",
		"retry in 8s (retry-after clamped to cap)",
	} {
		if !strings.Contains(throttle, want) {
			t.Errorf("chapter 3 lacks %q:\n%s", want, throttle)
		}
	}
	if strings.Contains(throttle, "for the same 25 reads, answered 200 ×25; 429 answers: 0") {
		t.Errorf("chapter 3: the unthrottled contrast drew no 429s, so it shows nothing:\n%s", throttle)
	}

	create := chapter(t, out, "A create that is never sent twice")
	for _, want := range []string{"unknown outcome", "sends of the POST: 1\n", "state open", "exists exactly once"} {
		if !strings.Contains(create, want) {
			t.Errorf("chapter 4 lacks %q:\n%s", want, create)
		}
	}

	fees := chapter(t, out, "A fee summary over the seeded history")
	for _, want := range []string{
		"updated_at_start = now - 30 days and no state filter",
		"fee tier: fee ratio 0.0095, 30-day volume 12480.55\n",
		" on 41 orders; filled notional ", "effective fee rate 0.0095\n",
		"  BTC-USD  ", "  SOL-USD  ",
		"GET /api/v2/crypto/trading/accounts/ -> 200\n",
		"GET /api/v2/crypto/trading/orders/?...updated_at_start=2026-01-31T14:30:",
		"requests: 2 = 1 accounts read + 1 page of orders (progress reported 1); answered 200 ×2; 429 answers: 0\n",
		"Here N is 1", "no 429",
	} {
		if !strings.Contains(fees, want) {
			t.Errorf("chapter 5 lacks %q:\n%s", want, fees)
		}
	}

	previews := chapter(t, out, "Previews: estimates, and refusals made offline")
	for _, want := range []string{
		"market buy 0.0001 BTC-USD: ESTIMATE price ", "; violations: 0\n",
		"market buy 0.000000015 BTC-USD: ESTIMATE notional ", "; violations: 2\n",
		"not_a_multiple_of_increment on market_order_config.asset_quantity: 0.000000015 is not a multiple of 0.00000001\n",
		"below_min_order_amount on market_order_config.asset_quantity: ",
		"suggested quantity: none",
		"the request afterwards: asset_quantity 0.000000015, as asked\n",
		"suggested quantity: 0.00012345 (rounded down to the increment)\n",
		"requests: 4 (trading pair 1, estimated price 3); orders created: 0\n",
		"never changes what the caller asked",
	} {
		if !strings.Contains(previews, want) {
			t.Errorf("chapter 6 lacks %q:\n%s", want, previews)
		}
	}

	placement := chapter(t, out, "Idempotent placement: exactly one order, whatever the venue does")
	for _, want := range []string{
		"creates sent: 1; lookups: 2; orders with client_order_id ",
		"creates sent: 2 (at +2.02s and +42.02s); lookups: 3; orders with client_order_id ",
		"again -> order ", "; creates sent: 0\n",
	} {
		if !strings.Contains(placement, want) {
			t.Errorf("chapter 7 lacks %q:\n%s", want, placement)
		}
	}
	if strings.Contains(placement, ": 2\n") {
		t.Errorf("chapter 7 shows a client_order_id with two orders:\n%s", placement)
	}

	_, ledger, ok := strings.Cut(out, "== The venue's ledger ==\n")
	if !ok {
		t.Fatalf("no ledger in:\n%s", out)
	}
	for _, want := range []string{
		"requests: 49\n", "by status: 200 ×42, 201 ×1, 429 ×1, 503 ×5\n", "401 answers (bad signatures): 0\n",
		"429 answers: 1 (1 injected, 0 from running out of budget)\n", "orders created: 3\n", ": 1\n",
		"client_order_ids used twice: none\n", "simulated time: ", demoWallTimeTag,
	} {
		if !strings.Contains(ledger, want) {
			t.Errorf("ledger lacks %q:\n%s", want, ledger)
		}
	}
}

func TestDemo_SameSeedSameOutput(t *testing.T) {
	t.Parallel()
	first := runCLI(t, nil, "", "demo", "--seed", "7")
	second := runCLI(t, nil, "", "demo", "--seed", "7")
	other := runCLI(t, nil, "", "demo", "--seed", "8")
	for _, r := range []result{first, second, other} {
		if r.code != 0 {
			t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
		}
	}
	if a, b := withoutWallTime(first.stdout), withoutWallTime(second.stdout); a != b {
		t.Errorf("two runs with seed 7 differ:\n--- first\n%s\n--- second\n%s", a, b)
	}
	if withoutWallTime(first.stdout) == withoutWallTime(other.stdout) {
		t.Error("seeds 7 and 8 print the same demo: the seed is not used")
	}
}

func TestDemo_UsageErrors(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"demo", "extra"}, {"demo", "--seed", "x"}} {
		if r := runCLI(t, nil, "", args...); r.code != 2 || r.stdout != "" {
			t.Errorf("%q: exit %d, stdout %q; want 2 and nothing", args, r.code, r.stdout)
		}
	}
}

func TestDecimalText(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{`"0.000000000000000001"`, "0.000000000000000001"},
		{`0.0095`, "0.0095"},
		{`12480.550000000000000000`, "12480.550000000000000000"},
		{`null`, ""},
	}
	for _, tt := range tests {
		var got decimalText
		if err := json.Unmarshal([]byte(tt.in), &got); err != nil || string(got) != tt.want {
			t.Errorf("decode %s = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	var bad decimalText
	if err := json.Unmarshal([]byte(`true`), &bad); err == nil {
		t.Error("decode true: want an error")
	}
}

func TestSkipClock_WaitsMoveTheClockAtOnce(t *testing.T) {
	t.Parallel()
	start := time.Unix(1_700_000_000, 0)
	c := skipclock.New(start)
	select {
	case <-c.NewTimer(1500 * time.Millisecond).Chan():
	default:
		t.Fatal("a timer did not fire at once")
	}
	<-c.After(500 * time.Millisecond)
	c.Sleep(time.Second)
	// A deadline is not a wait: it must not move the clock.
	fired := false
	c.AfterFunc(time.Hour, func() { fired = true }).Stop()
	if got := c.Since(start); got != 3*time.Second || fired {
		t.Errorf("clock moved %v (deadline fired: %v), want 3s and no", got, fired)
	}
}

// A latency fault on the demo's shared clock moves it instead of hanging.
func TestDemo_LatencyMovesTheSharedClock(t *testing.T) {
	t.Parallel()
	d, err := newDemoRun(io.Discard, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.venue.Inject(brokertest.Fault{Kind: brokertest.FaultLatency, Path: pathAccounts, Delay: 2 * time.Second}); err != nil {
		t.Fatal(err)
	}
	before := d.clock.Now()
	if _, err := d.client.Get(context.Background(), pathAccounts); err != nil {
		t.Fatal(err)
	}
	if got := d.clock.Since(before); got != 2*time.Second {
		t.Errorf("clock moved %v, want the 2s latency", got)
	}
}
