package cli

import (
	"strings"
	"testing"
)

// TestLimits_PlaceRefusesAndSendsNothing: a limit from a flag or its
// variable refuses the order with exit 2, naming the limit, and sends
// nothing (with --account-number: else the account is read first); within
// the limits the order is placed.
func TestLimits_PlaceRefusesAndSendsNothing(t *testing.T) {
	t.Parallel()
	srv, env := placeVenue(t)
	env[envMaxOpenOrders] = "1"
	env[envAccountNumber] = srv.AccountNumber // else the account is read first
	for _, tc := range []struct {
		args  []string
		limit string
	}{
		{[]string{"--max-order-notional", "0.99"}, "max_order_notional"}, // 0.001 × 1000 = 1
		{[]string{"--max-order-quantity", "0.0001"}, "max_order_quantity"},
		{[]string{"--symbols", "ETH-USD, sol-usd"}, "symbols"},
	} {
		r := runCLI(t, env, "", append(append([]string{}, placeArgs...), tc.args...)...)
		if r.code != exitUsage || !strings.Contains(r.stderr, tc.limit) || !strings.Contains(r.stderr, "not placed") {
			t.Errorf("%v: exit %d, stderr %q; want 2 and the %s limit", tc.args, r.code, r.stderr, tc.limit)
		}
	}
	if n := len(srv.Ledger().Requests()); n != 0 {
		t.Fatalf("the refusals sent %d requests", n)
	}
	ok(t, runCLI(t, env, "", append(append([]string{}, placeArgs...), "--idempotency-key", "a", "--max-order-notional", "1")...))
	// TRADEWIRE_MAX_OPEN_ORDERS=1: the second open order is refused.
	r := runCLI(t, env, "", append(append([]string{}, placeArgs...), "--idempotency-key", "b")...)
	if r.code != exitUsage || !strings.Contains(r.stderr, "max_open_orders") {
		t.Errorf("exit %d, stderr %q; want 2 and max_open_orders", r.code, r.stderr)
	}
	if n := creates(srv); n != 1 {
		t.Fatalf("%d creates; want 1", n)
	}
	// preview reports it, exit 6.
	r = runCLI(t, env, "", "preview", "--symbol", "BTC-USD", "--side", "buy", "--type", "limit", "--quantity", "0.001", "--limit-price", "1000", "-o", "json")
	if r.code != exitRejected || !strings.Contains(r.stdout, "max_open_orders") {
		t.Errorf("preview: exit %d, stdout %q; want 6 and max_open_orders", r.code, r.stdout)
	}
}

// TestLimits_BadValuesAreUsageErrors: a limit that is not a number, is
// negative, or names no pair exits 2 before anything is sent.
func TestLimits_BadValuesAreUsageErrors(t *testing.T) {
	t.Parallel()
	srv, env := placeVenue(t)
	for _, bad := range [][]string{
		{"--max-order-notional", "ten"}, {"--max-order-notional", "-1"}, {"--max-order-quantity", "1e400"},
		{"--max-daily-notional", "NaN"}, {"--max-open-orders", "1.5"}, {"--max-open-orders", "-2"}, {"--symbols", "BTC"},
	} {
		for _, cmd := range [][]string{placeArgs, {"preview", "--symbol", "BTC-USD", "--side", "buy", "--type", "market", "--quantity", "0.001"}} {
			r := runCLI(t, env, "", append(append([]string{}, cmd...), bad...)...)
			if r.code != exitUsage || !strings.Contains(r.stderr, bad[0]) {
				t.Errorf("%s %v: exit %d, stderr %q; want 2 naming the flag", cmd[0], bad, r.code, r.stderr)
			}
		}
	}
	bad := map[string]string{}
	for k, v := range env {
		bad[k] = v
	}
	bad[envMaxDailyNotional] = "lots"
	if r := runCLI(t, bad, "", placeArgs...); r.code != exitUsage || !strings.Contains(r.stderr, envMaxDailyNotional) {
		t.Errorf("exit %d, stderr %q; want 2 naming %s", r.code, r.stderr, envMaxDailyNotional)
	}
	if n := len(srv.Ledger().Requests()); n != 0 {
		t.Fatalf("bad limits sent %d requests", n)
	}
}
