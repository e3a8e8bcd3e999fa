package cli

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/jonboulle/clockwork"

	"github.com/tradewire/tradewire/broker/brokertest"
	"github.com/tradewire/tradewire/venue"
)

const pathCreate = "/api/v2/crypto/trading/orders/"

// placeVenue starts a simulated venue on loopback with faults, and returns
// it with an environment that points the CLI at it and at a store file.
func placeVenue(t *testing.T, faults ...venue.Fault) (*brokertest.Server, map[string]string) {
	t.Helper()
	srv := brokertest.NewServer(venue.Config{Seed: simSeed, Faults: venue.FaultPlan{Faults: faults}})
	t.Cleanup(srv.Close)
	return srv, map[string]string{
		envBaseURL: srv.URL, envAPIKey: srv.APIKey, envPrivateKey: srv.PrivateKeyBase64,
		envStore: filepath.Join(t.TempDir(), "intents.db"),
	}
}

func creates(srv *brokertest.Server) int {
	n := 0
	for _, r := range srv.Ledger().Requests() {
		if r.Method == "POST" && strings.HasPrefix(r.Target, pathCreate+"?") {
			n++
		}
	}
	return n
}

var placeArgs = []string{"order", "place", "--symbol", "BTC-USD", "--side", "buy", "--type", "limit",
	"--quantity", "0.001", "--limit-price", "1000", "-o", "json"}

func TestOrderPlace_KeyMakesItIdempotent(t *testing.T) {
	t.Parallel()
	srv, env := placeVenue(t)
	args := append(append([]string{}, placeArgs...), "--idempotency-key", "entry-1", "--namespace", "momentum")
	first := runCLI(t, env, "", args...)
	ok(t, first)
	var o map[string]any
	decodeJSON(t, first.stdout, &o)
	second := runCLI(t, env, "", args...)
	ok(t, second)
	if second.stdout != first.stdout {
		t.Errorf("the second run printed a different order:\n%s\nvs\n%s", second.stdout, first.stdout)
	}
	if n := creates(srv); n != 1 {
		t.Fatalf("two runs with one key sent %d creates", n)
	}
	// The same key with another request is refused offline.
	other := append(append([]string{}, args...), "--quantity", "0.002")
	r := runCLI(t, env, "", other...)
	if r.code != exitUsage || !strings.Contains(r.stderr, "already names a different request") {
		t.Errorf("exit %d, stderr %q; want 2 and the conflict", r.code, r.stderr)
	}
	// intents shows it, acknowledged, with the venue's order id.
	r = runCLI(t, env, "", "intents", "-o", "json", "--state", "acknowledged")
	ok(t, r)
	var intents []map[string]any
	decodeJSON(t, r.stdout, &intents)
	if len(intents) != 1 || intents[0]["order_id"] != o["id"] || intents[0]["key"] != "entry-1" || intents[0]["namespace"] != "momentum" {
		t.Errorf("intents = %v", intents)
	}
}

func TestOrderPlace_WithoutKeyWarnsAndUnknownExits5(t *testing.T) {
	t.Parallel()
	srv, env := placeVenue(t, venue.Fault{Kind: "respond", Method: "POST", Path: pathCreate, Status: 503})
	r := runCLI(t, env, "", placeArgs...)
	if r.code != exitUnknown {
		t.Fatalf("exit %d, stderr %q; want 5", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "will not be retried") {
		t.Errorf("stderr %q does not say the create will not be retried", r.stderr)
	}
	intents := runCLI(t, env, "", "intents", "-o", "json")
	var list []map[string]any
	decodeJSON(t, intents.stdout, &list)
	if len(list) != 1 || list[0]["state"] != "unknown" {
		t.Fatalf("intents = %v", list)
	}
	if cid, _ := list[0]["client_order_id"].(string); cid == "" || !strings.Contains(r.stderr, cid) {
		t.Errorf("the unknown outcome's line %q does not name the client_order_id %q", r.stderr, cid)
	}
	if n := creates(srv); n != 1 {
		t.Fatalf("a create without a key was sent %d times", n)
	}
}

// A keyed create whose outcome cannot be learned before the command is
// stopped exits 5 and names the client_order_id.
func TestOrderPlace_KeyedUnknownWhenStopped(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClock()
	srv := brokertest.NewServer(venue.Config{Seed: simSeed, Clock: clock, Faults: venue.FaultPlan{Faults: []venue.Fault{{Kind: "respond", Method: "POST", Path: pathCreate, Status: 503}}}})
	t.Cleanup(srv.Close)
	env := map[string]string{envBaseURL: srv.URL, envAPIKey: srv.APIKey, envPrivateKey: srv.PrivateKeyBase64,
		envStore: filepath.Join(t.TempDir(), "intents.db")}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan result, 1)
	go func() {
		var out, errb strings.Builder
		code := Run(ctx, append(append([]string{}, placeArgs...), "--idempotency-key", "k"), Options{
			Getenv: func(k string) string { return env[k] }, Clock: clock, Stdout: &out, Stderr: &errb})
		done <- result{code: code, stdout: out.String(), stderr: errb.String()}
	}()
	// The create was refused with a 503 and not found: Place now waits for
	// its signature to expire. Stop the command there.
	for creates(srv) == 0 || !lookedUp(srv) {
		if err := clock.BlockUntilContext(context.Background(), 1); err != nil {
			t.Fatal(err)
		}
		select {
		case r := <-done:
			t.Fatalf("ended early: %+v", r)
		default:
			runtime.Gosched() // let the request finish on loopback
		}
	}
	cancel()
	r := <-done
	if r.code != exitUnknown || !strings.Contains(r.stderr, "client_order_id") || r.stdout != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q; want 5 naming the client_order_id", r.code, r.stdout, r.stderr)
	}
	if n := creates(srv); n != 1 {
		t.Fatalf("sent %d creates before the signature expired", n)
	}
}

func lookedUp(srv *brokertest.Server) bool {
	for _, r := range srv.Ledger().Requests() {
		if r.Method == "GET" && strings.Contains(r.Target, "created_at_start=") {
			return true
		}
	}
	return false
}

func TestRecover_SettlesByLookup(t *testing.T) {
	t.Parallel()
	srv, env := placeVenue(t, venue.Fault{Kind: "lose_response", Method: "POST", Path: pathCreate, Status: 502})
	if r := runCLI(t, env, "", placeArgs...); r.code != exitUnknown {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	r := runCLI(t, env, "", "recover", "-o", "json")
	ok(t, r)
	var settled []map[string]any
	decodeJSON(t, r.stdout, &settled)
	if len(settled) != 1 || settled[0]["state"] != "acknowledged" || settled[0]["order_id"] == "" {
		t.Fatalf("recover = %v", settled)
	}
	if n := creates(srv); n != 1 {
		t.Fatalf("recover placed something: %d creates", n)
	}
	if r := runCLI(t, env, "", "intents", "--state", "bogus"); r.code != exitUsage {
		t.Errorf("a bad --state exits %d", r.code)
	}
}

func TestOrderCancel(t *testing.T) {
	t.Parallel()
	_, env := placeVenue(t)
	r := runCLI(t, env, "", append(append([]string{}, placeArgs...), "--idempotency-key", "c")...)
	ok(t, r)
	var o map[string]any
	decodeJSON(t, r.stdout, &o)
	r = runCLI(t, env, "", "order", "cancel", o["id"].(string), "-o", "json")
	ok(t, r)
	var c map[string]any
	decodeJSON(t, r.stdout, &c)
	if c["id"] != o["id"] || c["state"] != "open" {
		t.Errorf("cancel answered %v", c)
	}
	if r := runCLI(t, env, "", "order", "cancel", "00000000-0000-4000-8000-000000000000"); r.code != exitNotFound {
		t.Errorf("cancel of an unknown order exits %d, stderr %q", r.code, r.stderr)
	}
}

func TestOrderPlace_InvalidSendsNothing(t *testing.T) {
	t.Parallel()
	srv, env := placeVenue(t)
	for _, args := range [][]string{
		{"order", "place", "--symbol", "BTC-USD", "--side", "buy", "--type", "market", "--quote-amount", "10"},
		{"order", "place", "--symbol", "BTC-USD", "--side", "buy", "--type", "limit", "--quantity", "0.001"},
		{"order", "place", "--symbol", "BTC-USD", "--side", "hold", "--type", "market", "--quantity", "1"},
		{"order", "place", "--symbol", "BTC-USD", "--side", "buy", "--type", "market", "--quantity", "1e400000"},
	} {
		if r := runCLI(t, env, "", args...); r.code != exitUsage || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line", args, r.code, r.stderr)
		}
	}
	if n := len(srv.Ledger().Requests()); n != 0 {
		t.Fatalf("invalid orders sent %d requests", n)
	}
}

// TestOrderPlace_RefusesKeysNotMeant: a key (or namespace) that looks
// like another but has other bytes would derive another client_order_id;
// it is refused before the store is opened or anything is sent.
func TestOrderPlace_RefusesKeysNotMeant(t *testing.T) {
	t.Parallel()
	srv, env := placeVenue(t)
	for _, tc := range []struct{ flag, value, want string }{
		{"--idempotency-key", "entry-1 ", "trailing whitespace U+0020 at byte 7"},
		{"--idempotency-key", " entry-1", "leading whitespace U+0020 at byte 0"},
		{"--idempotency-key", "entry-1\x00", "control character U+0000 at byte 7"},
		{"--idempotency-key", "entry\n1", "control character U+000A at byte 5"},
		{"--idempotency-key", "cafe\u0301", "not in Unicode NFC"},
		{"--idempotency-key", "k\xff", "not valid UTF-8"},
		{"--namespace", "momentum\t", "control character U+0009"},
	} {
		args := append(append([]string{}, placeArgs...), tc.flag, tc.value)
		if tc.flag != "--idempotency-key" {
			args = append(args, "--idempotency-key", "k")
		}
		r := runCLI(t, env, "", args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, tc.flag+": ") || !strings.Contains(r.stderr, tc.want) ||
			!strings.Contains(r.stderr, "nothing was sent") || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("%s %+q: exit %d, stderr %q; want 2 and one line with %q", tc.flag, tc.value, r.code, r.stderr, tc.want)
		}
	}
	if n := len(srv.Ledger().Requests()); n != 0 {
		t.Errorf("refused keys sent %d requests", n)
	}
	if _, err := os.Stat(env[envStore]); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused key opened the store: %v", err)
	}
	// The key as meant is placed.
	if r := runCLI(t, env, "", append(append([]string{}, placeArgs...), "--idempotency-key", "caf\u00e9")...); r.code != exitOK {
		t.Errorf("NFC key: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestOrderPlace_RefusesWhatThePairRefuses: an order that breaks its
// pair's increments or maximum order size (what preview reports) is
// refused before the create is sent, naming the flag; one that breaks none
// is placed.
func TestOrderPlace_RefusesWhatThePairRefuses(t *testing.T) {
	t.Parallel()
	srv, env := placeVenue(t)
	order := func(qty, price string) []string {
		return []string{"order", "place", "--symbol", "BTC-USD", "--side", "buy", "--type", "limit",
			"--quantity", qty, "--limit-price", price, "--idempotency-key", "k-" + qty + "-" + price}
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{order("0.000000001", "1000"), []string{"--quantity: 0.000000001 is not a multiple of 0.00000001", "not_a_multiple_of_increment"}},
		{order("0.001", "1000.001"), []string{"--limit-price: 1000.001 is not a multiple of 0.01"}},
		{order("21", "1000"), []string{"--quantity: 21 BTC is above the maximum order size 20", "above_max_order_size"}},
		{[]string{"order", "place", "--symbol", "BTC-USD", "--side", "sell", "--type", "stop_loss",
			"--quantity", "0.001", "--stop-price", "999.999", "--idempotency-key", "s"}, []string{"--stop-price: 999.999 is not a multiple of 0.01"}},
	} {
		r := runCLI(t, env, "", tc.args...)
		if r.code != exitUsage || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, "the create was not sent") {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line", tc.args, r.code, r.stderr)
		}
		for _, w := range tc.want {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("%v: stderr %q lacks %q", tc.args, r.stderr, w)
			}
		}
	}
	if n := creates(srv); n != 0 {
		t.Fatalf("%d creates sent for orders the pair refuses", n)
	}
	placed := order("20", "1000")
	if r := runCLI(t, env, "", placed...); r.code != exitOK || creates(srv) != 1 {
		t.Errorf("the maximum itself: exit %d, stderr %q, %d creates", r.code, r.stderr, creates(srv))
	}
	// A key the store holds names its order: Place answers for it, and no
	// pair rule is read as if nothing had been placed under it.
	again := append(append([]string{}, order("21", "1000")...), "--idempotency-key", placed[len(placed)-1])
	if r := runCLI(t, env, "", again...); r.code == exitOK || strings.Contains(r.stderr, "the create was not sent") || creates(srv) != 1 {
		t.Errorf("a placed key with another size: exit %d, stderr %q, %d creates; want the key's order named", r.code, r.stderr, creates(srv))
	}
}

// TestOrderFlags_AmountMessages: an amount flag's spaces around the value
// are trimmed (as every flag's are) and its message says so; a zero is
// refused as not positive, not read as a size never given.
func TestOrderFlags_AmountMessages(t *testing.T) {
	t.Parallel()
	srv, env := placeVenue(t)
	limit := func(qty, price string) []string {
		return []string{"order", "place", "--symbol", "BTC-USD", "--side", "buy", "--type", "limit", "--quantity", qty, "--limit-price", price}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{limit("0", "1000"), "--quantity: 0: must be positive"},
		{limit("0.000", "1000"), "--quantity: 0: must be positive"},
		{limit(" 0 ", "1000"), "--quantity: 0: must be positive"},
		{limit("0.001", "0"), "--limit-price: 0: must be positive"},
		{[]string{"order", "place", "--symbol", "BTC-USD", "--side", "buy", "--type", "limit", "--quote-amount", "0", "--limit-price", "1000"},
			"--quote-amount: 0: must be positive"},
		{[]string{"preview", "--symbol", "BTC-USD", "--side", "buy", "--type", "market", "--quantity", "0"}, "--quantity: 0: must be positive"},
		{limit("0.0 01", "1000"), `--quantity: "0.0 01" is not a decimal number`},
		{limit(" 0.0 01 ", "1000"), "spaces around the value are trimmed"},
	} {
		r := runCLI(t, env, "", tc.args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, tc.want) || strings.Contains(r.stderr, "exactly one of") {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
	if n := len(srv.Ledger().Requests()); n != 0 {
		t.Fatalf("refused amounts sent %d requests", n)
	}
	// Trimmed as the message says: placed.
	if r := runCLI(t, env, "", append(limit(" 0.001 ", "1000 "), "--idempotency-key", "trimmed")...); r.code != exitOK || creates(srv) != 1 {
		t.Errorf("spaces around the amounts: exit %d, stderr %q", r.code, r.stderr)
	}
}
