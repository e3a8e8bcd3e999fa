package cli

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tradewire/tradewire/broker/brokertest"
	"github.com/tradewire/tradewire/transport"
	"github.com/tradewire/tradewire/venue"
)

// TestOrderPlace_GoodForDayExpiresAtVenueEndOfDay: "order place
// --time-in-force gfd" on the simulated venue places an order that, not
// filling, is open 1 ns before the venue's end of day (00:00 UTC) and
// canceled at it, updated_at the expiry, as "order get" shows. The venue
// and the CLI share one clock the test advances.
func TestOrderPlace_GoodForDayExpiresAtVenueEndOfDay(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 8, 20, 17, 30, 0, 0, time.UTC)
	endOfDay := time.Date(2026, 8, 21, 0, 0, 0, 0, time.UTC)
	clk := venue.NewClock(start)
	srv := brokertest.NewServer(venue.Config{Seed: simSeed, Clock: clk})
	t.Cleanup(srv.Close)
	env := map[string]string{envBaseURL: srv.URL, envAPIKey: srv.APIKey, envPrivateKey: srv.PrivateKeyBase64,
		envStore: filepath.Join(t.TempDir(), "intents.db")}
	run := func(args ...string) result {
		t.Helper()
		return runWith(t, Options{Getenv: func(k string) string { return env[k] }, Clock: clk,
			Stdin: strings.NewReader(""), TransportConfig: transport.Config{Retry: fastRetries}}, args...)
	}
	r := run(append(append([]string{}, placeArgs...), "--time-in-force", "gfd", "--idempotency-key", "day")...)
	ok(t, r)
	var placed map[string]any
	decodeJSON(t, r.stdout, &placed)
	id, _ := placed["id"].(string)
	if placed["state"] != "open" || id == "" {
		t.Fatalf("placed %v, want open", placed)
	}
	get := func() map[string]any {
		t.Helper()
		r := run("order", "get", id, "-o", "json")
		ok(t, r)
		var o map[string]any
		decodeJSON(t, r.stdout, &o)
		return o
	}
	clk.Advance(endOfDay.Add(-time.Nanosecond).Sub(clk.Now()))
	if o := get(); o["state"] != "open" {
		t.Fatalf("1 ns before the end of day: %v, want open", o["state"])
	}
	clk.Advance(time.Nanosecond)
	o := get()
	if o["state"] != "canceled" {
		t.Fatalf("at the end of day: %v, want canceled", o["state"])
	}
	if at, err := time.Parse(time.RFC3339Nano, o["updated_at"].(string)); err != nil || !at.Equal(endOfDay) {
		t.Errorf("updated_at %v, want %v", o["updated_at"], endOfDay)
	}
}

// TestOrderPlace_TimeInForceFlag: the flag is checked offline, names
// itself in the error, and a market order takes the default gtc as none.
func TestOrderPlace_TimeInForceFlag(t *testing.T) {
	t.Parallel()
	srv, env := placeVenue(t)
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{append(append([]string{}, placeArgs...), "--time-in-force", "ioc"), exitUsage, "--time-in-force"},
		{[]string{"order", "place", "--symbol", "BTC-USD", "--side", "buy", "--type", "market", "--quantity", "0.0001", "--time-in-force", "gtc"}, exitUsage, "--time-in-force"},
	} {
		if r := runCLI(t, env, "", tc.args...); r.code != tc.code || !strings.Contains(r.stderr, tc.msg) {
			t.Errorf("%v: exit %d, stderr %q; want %d naming %s", tc.args, r.code, r.stderr, tc.code, tc.msg)
		}
	}
	if n := len(srv.Ledger().Requests()); n != 0 {
		t.Fatalf("refused orders sent %d requests", n)
	}
	r := runCLI(t, env, "", "order", "place", "--symbol", "BTC-USD", "--side", "buy", "--type", "market", "--quantity", "0.0001", "-o", "json", "--idempotency-key", "m")
	ok(t, r)
	r = runCLI(t, env, "", append(append([]string{}, placeArgs...), "--time-in-force", "GFM", "--idempotency-key", "l")...)
	ok(t, r)
	if n := creates(srv); n != 2 {
		t.Errorf("%d creates, want 2", n)
	}
}
