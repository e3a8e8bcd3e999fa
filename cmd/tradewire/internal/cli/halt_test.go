package cli

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tradewire/tradewire/broker/brokertest"
	"github.com/tradewire/tradewire/internal/redistest"
	"github.com/tradewire/tradewire/transport"
	"github.com/tradewire/tradewire/venue"
)

// haltVenue is a simulated venue on a clock that skips every wait (a
// creates-twice venue: a reused client_order_id makes a second order), and
// the options and environment that point the CLI at it with a store file.
func haltVenue(t *testing.T, faults ...venue.Fault) (*brokertest.Server, Options, map[string]string) {
	return haltVenueOn(t, "", faults...)
}

// haltVenueOn is haltVenue for the account named (the demo account's
// when empty).
func haltVenueOn(t *testing.T, account string, faults ...venue.Fault) (*brokertest.Server, Options, map[string]string) {
	t.Helper()
	clk := venue.NewClock(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	clk.SkipWaits(1)
	srv, err := brokertest.New(venue.Config{Seed: simSeed, Clock: clk, AccountNumber: account, Faults: venue.FaultPlan{Duplicate: venue.CreateSecond, Faults: faults}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	env := map[string]string{
		envBaseURL: srv.URL, envAPIKey: srv.APIKey, envPrivateKey: srv.PrivateKeyBase64,
		envStore: filepath.Join(t.TempDir(), "intents.db"),
	}
	opts := Options{
		Getenv:          func(k string) string { return env[k] },
		Clock:           clk,
		TransportConfig: transport.Config{RoundTripper: srv.Client().Transport, Retry: fastRetries},
	}
	return srv, opts, env
}

// TestHaltAndResume: "halt" cancels the open orders and exits 0; "order
// place" on the halted store then exits non-zero with nothing sent, in a
// later process too; "resume" lets it place again.
func TestHaltAndResume(t *testing.T) {
	srv, opts, _ := haltVenue(t)
	place := func(key string) result {
		return runWith(t, opts, append(append([]string{}, placeArgs...), "--idempotency-key", key)...)
	}
	ok(t, place("a"))
	ok(t, place("b"))
	res := runWith(t, opts, "halt", "-o", "json")
	ok(t, res)
	var rows []map[string]any
	decodeJSON(t, res.stdout, &rows)
	if len(rows) != 2 || rows[0]["result"] != "canceled" || rows[1]["result"] != "canceled" {
		t.Fatalf("halt printed %s; want both orders canceled", res.stdout)
	}
	before := len(srv.Ledger().Requests())
	res = place("c")
	if res.code == exitOK || !strings.Contains(res.stderr, "halted") {
		t.Fatalf("order place on a halted store: exit %d, %q; want a failure saying it is halted", res.code, res.stderr)
	}
	for _, r := range srv.Ledger().Requests()[before:] {
		if r.Method == "POST" {
			t.Fatalf("order place on a halted store sent %s %s", r.Method, r.Target)
		}
	}
	res = runWith(t, opts, "resume")
	ok(t, res)
	if !strings.Contains(res.stdout, "resumed") {
		t.Errorf("resume printed %q", res.stdout)
	}
	ok(t, place("c"))
	if n := creates(srv); n != 3 {
		t.Fatalf("%d creates; want 3 (a, b, and c after resume)", n)
	}
}

// TestHaltOnTheFleetsRedis: "halt --redis-url" halts every process placing
// through that Redis: a later "order place" there sends nothing, until
// "resume".
func TestHaltOnTheFleetsRedis(t *testing.T) {
	url := redistest.URL(t)
	srv, opts, env := haltVenueOn(t, redistest.Account(t, url)) // an account of its own: a halt stops no other test
	delete(env, envStore)
	env[envRedisURL] = url
	// The account named, not discovered: a discovered account is recorded
	// in the shared Redis for the demo API key, and other tests' fleets on
	// the demo account would take it.
	env[envAccountNumber] = srv.AccountNumber
	place := func(key string) result {
		return runWith(t, opts, append(append([]string{}, placeArgs...), "--idempotency-key", key)...)
	}
	ok(t, place("a"))
	res := runWith(t, opts, "halt", "-o", "json")
	ok(t, res)
	if !strings.Contains(res.stdout, `"result": "canceled"`) {
		t.Fatalf("halt printed %s; want the order canceled", res.stdout)
	}
	if res = place("b"); res.code == exitOK || !strings.Contains(res.stderr, "halted") {
		t.Fatalf("order place through a halted Redis: exit %d, %q", res.code, res.stderr)
	}
	if n := creates(srv); n != 1 {
		t.Fatalf("%d creates; want 1, none after the halt", n)
	}
	ok(t, runWith(t, opts, "resume"))
	ok(t, place("b"))
}

// TestHaltExitsNonZeroWhenAnOrderStaysOpen: an order whose cancels all
// fail is printed open, and halt exits 1.
func TestHaltExitsNonZeroWhenAnOrderStaysOpen(t *testing.T) {
	_, opts, _ := haltVenue(t, venue.Fault{Kind: "respond", Method: "POST", Path: "/api/v2/crypto/trading/orders/*/cancel/", Status: 400,
		Body: `{"type":"validation_error","errors":[{"detail":"This order cannot be canceled.","attr":"non_field_errors"}]}`, Times: 10})
	ok(t, runWith(t, opts, append(append([]string{}, placeArgs...), "--idempotency-key", "a")...))
	res := runWith(t, opts, "halt", "-o", "csv")
	if res.code != exitFailure || !strings.Contains(res.stderr, "1 order(s) stayed open") {
		t.Fatalf("halt: exit %d, %q; want 1, naming the order left open", res.code, res.stderr)
	}
	if !strings.Contains(res.stdout, ",open,") || !strings.Contains(res.stdout, "cannot be canceled") {
		t.Errorf("halt printed %q; want the order open, with the venue's refusal", res.stdout)
	}
}

func TestHaltHelp(t *testing.T) {
	for _, cmd := range []string{"halt", "resume"} {
		res := runCLI(t, nil, "", cmd, "--help")
		ok(t, res)
		if !strings.Contains(res.stdout, "intent store") || !strings.Contains(res.stdout, "--redis-url") {
			t.Errorf("%s --help: %q", cmd, res.stdout)
		}
	}
}
