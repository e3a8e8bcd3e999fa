package cli

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
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

func containsAll(t *testing.T, name, text string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(text, want) {
			t.Errorf("%s lacks %q:\n%s", name, want, text)
		}
	}
}

// perClientOrderID matches what the demo prints of the venue's orders for
// one client_order_id.
var perClientOrderID = regexp.MustCompile(`client_order_id ([0-9a-f-]{36})(?:: |, orders with it: )(\d+)\n`)

func TestDemo(t *testing.T) {
	t.Parallel()
	r := runCLI(t, nil, "", "demo")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("exit %d, stderr %q\n%s", r.code, r.stderr, r.stdout)
	}
	out := r.stdout
	titles := []string{
		"Signed reads", "A 5xx storm, ridden out by retries", "A 429 storm, absorbed by the throttle",
		"A create whose answer is lost, never sent twice", "A refused create, sent again only once it cannot land",
		"A fee summary over the seeded history", "Previews: estimates, and refusals made offline",
	}
	if len(titles) != len(demoChapters) {
		t.Fatalf("%d titles for %d chapters", len(titles), len(demoChapters))
	}
	for i, title := range titles {
		if !strings.Contains(out, "\n== "+strconv.Itoa(i+1)+". "+title+" ==\n") {
			t.Errorf("no heading for chapter %d, %q", i+1, title)
		}
	}

	containsAll(t, "chapter 1", chapter(t, out, titles[0]),
		"attempt 1: GET /api/v2/crypto/trading/accounts/ -> 200 over HTTP/2.0\n",
		"attempt 1: GET /api/v2/crypto/trading/holdings/ -> 200 over HTTP/2.0\n",
		"account TW0000000001: buying power 99152.52 USD, fee ratio 0.0095, 30-day volume 12480.55\n",
		"holdings: BTC 0.5, DOGE 10000, ETH 4, SOL 20\n", "BTC-USD: bid ")

	containsAll(t, "chapter 2", chapter(t, out, titles[1]),
		"attempt 1: GET /api/v2/crypto/marketdata/best_bid_ask/ -> 503 over HTTP/2.0\n",
		"attempt 2, after waiting 500ms: GET /api/v2/crypto/marketdata/best_bid_ask/ -> 503\n",
		"attempt 3, after waiting 1s: GET /api/v2/crypto/marketdata/best_bid_ask/ -> 200\n",
		"returned the quote on attempt 3, 1.5s after the first")

	throttle := chapter(t, out, titles[2])
	containsAll(t, "chapter 3", throttle,
		"client: 25 reads, 4 sent at once, 21 held back by its token bucket for 20.722s in all; attempts: 25, answered 429: 0\n",
		"attempt 1: GET /api/v2/crypto/trading/accounts/ -> 429 over HTTP/2.0\n",
		"attempt 2, after waiting 8s: GET /api/v2/crypto/trading/accounts/ -> 200\n",
		"succeeded on attempt 2, 8s later")
	m := regexp.MustCompile(`25 reads took (\d+) attempts, (\d+) answered 429`).FindStringSubmatch(throttle)
	if m == nil {
		t.Fatalf("chapter 3 has no unthrottled burst:\n%s", throttle)
	}
	if attempts, throttled := atoi(t, m[1]), atoi(t, m[2]); throttled == 0 || attempts != 25+throttled {
		t.Errorf("unthrottled burst: %d attempts, %d answered 429; want some 429s, each retried once", attempts, throttled)
	}

	lost := chapter(t, out, titles[3])
	containsAll(t, "chapter 4", lost,
		"POST /api/v2/crypto/trading/orders/ -> 503 over HTTP/2.0\n",
		"Place(key \"entry-1\") -> order ", ", state open\n    creates sent: 1; lookups: 1; orders at the venue",
		"Place(key \"entry-2\") -> unknown outcome: true; ",
		"attempt 4, after waiting 2s: GET /api/v2/crypto/trading/orders/ -> 503\n",
		"Recover -> acknowledged 1, not placed 0, unresolved 0\n    creates sent: 0; lookups: 1; ",
		"OrderByKey(\"entry-2\") -> order ")
	if n := strings.Count(lost, "creates sent: 1;"); n != 2 {
		t.Errorf("chapter 4: %d places sent one create, want 2:\n%s", n, lost)
	}

	refused := chapter(t, out, titles[4])
	containsAll(t, "chapter 5", refused,
		"Place(key \"entry-3\") -> order ", ", state open\n    creates sent: 2; lookups: 2; ",
		"valid for 30s", "plus 10s", "41s after the first",
		"/cancel/ -> 200 over HTTP/2.0\n", "Place(key \"entry-3\") again, 2s later -> order ",
		", state canceled\n    creates sent: 0; lookups: 0; ")

	// Every client_order_id the placing chapters name has one order at the
	// venue, and the ledger names the same ones.
	placedIDs := map[string]bool{}
	for _, m := range perClientOrderID.FindAllStringSubmatch(lost+refused, -1) {
		placedIDs[m[1]] = true
		if m[2] != "1" {
			t.Errorf("client_order_id %s has %s orders at the venue, want 1", m[1], m[2])
		}
	}
	if len(placedIDs) != 3 {
		t.Errorf("the placing chapters name %d client_order_ids, want 3 (entry-1, entry-2, entry-3)", len(placedIDs))
	}

	containsAll(t, "chapter 6", chapter(t, out, titles[5]),
		"updated in the last 30 days (no state filter", "then catches up with the orders that changed or appeared meanwhile",
		"; fee ratio 0.0095, 30-day volume 12480.55\n", " on 43 orders; filled notional ", "effective fee rate 0.0095\n",
		"  BTC-USD  14 orders", "  SOL-USD  10 orders",
		"requests: 4 = 1 accounts read + 3 pages of orders with the catch-up read; 429 answers: 0\n", "The 43 orders")

	containsAll(t, "chapter 7", chapter(t, out, titles[6]),
		"market buy 0.0001 BTC-USD: ESTIMATE price ", "; violations: 0\n",
		"market buy 0.000000015 BTC-USD: ESTIMATE ", "; violations: 2\n",
		"not_a_multiple_of_increment on market_order_config.asset_quantity: 0.000000015 is not a multiple of 0.00000001\n",
		"below_min_order_amount on market_order_config.asset_quantity: ",
		"suggested quantity: none", "market buy 0.000123456789 BTC-USD: ", "; violations: 1\n",
		"suggested quantity: 0.00012345\n",
		"requests: 3, of which trading-pair reads: 0 (the pair is cached)\n",
		"Preview and Place of btc-usd: ErrInvalidRequest: true and true; requests: 0; ")

	_, ledger, ok := strings.Cut(out, "== The venue's ledger ==\n")
	if !ok {
		t.Fatalf("no ledger in:\n%s", out)
	}
	containsAll(t, "the ledger", ledger,
		"requests: 57; by status: 200 ×46, 201 ×1, 429 ×1, 503 ×9\n",
		"401 answers (bad signatures): 0; 429 answers: 1; dropped connections: 0\n",
		"orders created: 3; client_order_ids used twice: 0\n", "simulated time: 1m32.465s\n", demoWallTimeTag)
	ledgerIDs := perClientOrderID.FindAllStringSubmatch(ledger, -1)
	if len(ledgerIDs) != 3 {
		t.Errorf("the ledger lists %d orders, want 3:\n%s", len(ledgerIDs), ledger)
	}
	for _, m := range ledgerIDs {
		if m[2] != "1" || !placedIDs[m[1]] {
			t.Errorf("ledger: client_order_id %s has %s orders (placed by the demo: %v), want 1 and placed", m[1], m[2], placedIDs[m[1]])
		}
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
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

// TestDemo_Wires: the demo runs over HTTPS + HTTP/2 unless told
// otherwise, and over plain HTTP/1.1 with --wire http tells the same tour:
// the two outputs differ only in how they name the wire.
func TestDemo_Wires(t *testing.T) {
	t.Parallel()
	byDefault := runCLI(t, nil, "", "demo")
	tls := runCLI(t, nil, "", "demo", "--wire", "tls")
	plain := runCLI(t, nil, "", "demo", "--wire", "http")
	for _, r := range []result{byDefault, tls, plain} {
		if r.code != 0 || r.stderr != "" {
			t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
		}
	}
	if a, b := withoutWallTime(byDefault.stdout), withoutWallTime(tls.stdout); a != b {
		t.Errorf("the default wire is not --wire tls:\n--- default\n%s\n--- tls\n%s", a, b)
	}
	over := func(out string) (h2, h1 int) {
		return strings.Count(out, " over HTTP/2.0\n"), strings.Count(out, " over HTTP/1.1\n")
	}
	if h2, h1 := over(tls.stdout); h2 < 10 || h1 != 0 || !strings.Contains(tls.stdout, "over HTTPS + HTTP/2 on loopback") {
		t.Errorf("--wire tls: %d attempts over HTTP/2, %d over HTTP/1.1:\n%s", h2, h1, tls.stdout)
	}
	if h2, h1 := over(plain.stdout); h1 < 10 || h2 != 0 || !strings.Contains(plain.stdout, "over plain HTTP/1.1 on loopback") {
		t.Errorf("--wire http: %d attempts over HTTP/2, %d over HTTP/1.1:\n%s", h2, h1, plain.stdout)
	}
	same := strings.NewReplacer(" over HTTP/1.1\n", " over HTTP/2.0\n", "over plain HTTP/1.1 on", "over HTTPS + HTTP/2 on")
	if a, b := withoutWallTime(tls.stdout), same.Replace(withoutWallTime(plain.stdout)); a != b {
		t.Errorf("the tour differs between the wires:\n--- tls\n%s\n--- http\n%s", a, b)
	}
}

func TestDemo_UsageErrors(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"demo", "extra"}, {"demo", "--seed", "x"}, {"demo", "--wire", "h2"}, {"demo", "--wire", ""}} {
		if r := runCLI(t, nil, "", args...); r.code != 2 || r.stdout != "" {
			t.Errorf("%q: exit %d, stdout %q; want 2 and nothing", args, r.code, r.stdout)
		}
	}
}
