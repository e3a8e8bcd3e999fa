package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	neturl "net/url"
	"strings"
	"testing"

	"github.com/tradewire/tradewire/broker/brokertest"
	"github.com/tradewire/tradewire/internal/pgtest"
	"github.com/tradewire/tradewire/internal/redistest"
	"github.com/tradewire/tradewire/signing"
	"github.com/tradewire/tradewire/venue"
)

// An unreachable Redis exits 4 ("unavailable, try later"), not 2: a
// wrapper that treats 2 as permanent would otherwise give up on a
// passing outage. Nothing is sent to the venue.
func TestRedisURL_UnreachableExits4(t *testing.T) {
	t.Parallel()
	srv, env := placeVenue(t)
	env[envRedisURL] = "redis://:hunter22@127.0.0.1:1/0"
	for _, args := range [][]string{{"account"}, {"api", "GET", "/api/v2/crypto/trading/accounts/"}, {"intents"},
		append(append([]string{}, placeArgs...), "--idempotency-key", "k"),
		append(append([]string{"--account-number", "AB1234"}, placeArgs...), "--idempotency-key", "k")} {
		r := runCLI(t, env, "", args...)
		if r.code != exitGaveUp || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, "cannot be reached") {
			t.Errorf("%v: exit %d, stderr %q; want 4 and one line saying Redis cannot be reached", args, r.code, r.stderr)
		}
		if strings.Contains(r.stderr, "hunter22") {
			t.Fatalf("stderr %q shows the Redis password", r.stderr)
		}
	}
	if n := len(srv.Ledger().Requests()); n != 0 {
		t.Fatalf("%d requests sent without the shared budget", n)
	}
}

// Two runs of order place with one key, through one Redis: the intent
// lives in Redis, so the second run finds it acknowledged and sends
// nothing; intents reads it back from Redis.
func TestRedisURL_SharedIntentStore(t *testing.T) {
	t.Parallel()
	url := redistest.URL(t)
	srv := brokertest.NewServer(venue.Config{Seed: simSeed})
	t.Cleanup(srv.Close)
	env := map[string]string{envBaseURL: srv.URL, envAPIKey: srv.APIKey, envPrivateKey: srv.PrivateKeyBase64, envRedisURL: url}
	placeTwiceInFleet(t, srv, env, "Redis")
}

// placeTwiceInFleet runs order place twice with one new key through the
// fleet's server that env names (server names it in messages): the
// second run finds the intent acknowledged there and sends nothing, and
// intents reads it back. It returns the first run and intents' output.
func placeTwiceInFleet(t *testing.T, srv *brokertest.Server, env map[string]string, server string) (first, intents result) {
	t.Helper()
	b := make([]byte, 8)
	rand.Read(b)
	key := "fleet-" + hex.EncodeToString(b)
	args := append(append([]string{}, placeArgs...), "--idempotency-key", key)
	first = runCLI(t, env, "", args...)
	ok(t, first)
	second := runCLI(t, env, "", args...)
	ok(t, second)
	if first.stdout != second.stdout {
		t.Errorf("the second run printed another order:\n%s\n%s", first.stdout, second.stdout)
	}
	if n := creates(srv); n != 1 {
		t.Fatalf("%d creates for one key through one %s", n, server)
	}
	intents = runCLI(t, env, "", "intents", "-o", "json", "--state", "acknowledged")
	ok(t, intents)
	if !strings.Contains(intents.stdout, `"key": "`+key+`"`) {
		t.Errorf("intents from %s lack the key %s:\n%s", server, key, intents.stdout)
	}
	return first, intents
}

// In a fleet whose Redis does not know the account yet, building the
// client reads the accounts list: a bad filter is refused before that.
func TestRedisURL_BadFilterSendsNothing(t *testing.T) {
	t.Parallel()
	url := redistest.URL(t)
	srv := brokertest.NewServer(venue.Config{Seed: simSeed})
	t.Cleanup(srv.Close)
	key, err := signing.ParsePrivateKey(srv.PrivateKeyBase64)
	if err != nil {
		t.Fatal(err)
	}
	s, err := signing.New(srv.APIKey, key)
	if err != nil {
		t.Fatal(err)
	}
	redistest.Client(t).Del(context.Background(), "tradewire:apikey:"+s.KeyID()+":account")
	env := map[string]string{envBaseURL: srv.URL, envAPIKey: srv.APIKey, envPrivateKey: srv.PrivateKeyBase64, envRedisURL: url}
	for _, args := range [][]string{{"orders", "--state", "bogus"}, {"orders", "--type", "twap"}} {
		r := runCLI(t, env, "", args...)
		if r.code != exitUsage {
			t.Errorf("%v: exit %d, stderr %q; want 2", args, r.code, r.stderr)
		}
	}
	if n := len(srv.Ledger().Requests()); n != 0 {
		t.Errorf("%d requests sent for a bad filter", n)
	}
}

// An unreachable PostgreSQL exits 4 with one line, as an unreachable
// Redis does, and never shows the password; nothing is sent.
func TestPostgresURL_UnreachableExits4(t *testing.T) {
	t.Parallel()
	srv, env := placeVenue(t)
	env[envPostgresURL] = "postgres://bot:hunter22@127.0.0.1:1/trade?sslmode=disable"
	for _, args := range [][]string{{"account"}, {"intents"}, {"halt"},
		append(append([]string{}, placeArgs...), "--idempotency-key", "k"),
		append(append([]string{"--account-number", "AB1234"}, placeArgs...), "--idempotency-key", "k")} {
		r := runCLI(t, env, "", args...)
		if r.code != exitGaveUp || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, "PostgreSQL") {
			t.Errorf("%v: exit %d, stderr %q; want 4 and one line saying PostgreSQL cannot be reached", args, r.code, r.stderr)
		}
		if strings.Contains(r.stderr+r.stdout, "hunter22") {
			t.Fatalf("output %q shows the PostgreSQL password", r.stderr)
		}
	}
	if n := len(srv.Ledger().Requests()); n != 0 {
		t.Fatalf("%d requests sent without the shared budget", n)
	}
	env[envRedisURL] = "redis://127.0.0.1:1/0"
	if r := runCLI(t, env, "", "account"); r.code != exitUsage {
		t.Errorf("both --redis-url and --postgres-url: exit %d (%q); want a usage error", r.code, r.stderr)
	}
}

// Two runs of order place with one key on the fleet's PostgreSQL: the
// second finds the intent there and sends nothing; intents reads it back,
// and doctor reports the server's guarantee.
func TestPostgresURL_SharedIntentStore(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	srv := brokertest.NewServer(venue.Config{Seed: simSeed, AccountNumber: pgtest.Account(t)})
	t.Cleanup(srv.Close)
	env := map[string]string{envBaseURL: srv.URL, envAPIKey: srv.APIKey, envPrivateKey: srv.PrivateKeyBase64, envPostgresURL: url}
	first, r := placeTwiceInFleet(t, srv, env, "PostgreSQL")
	ok(t, runCLI(t, env, "", "recover"))
	if n := creates(srv); n != 1 {
		t.Fatalf("%d creates after recover; want the one", n)
	}
	d := runCLI(t, env, "", "doctor")
	checkLine(t, d.stdout, "ok", "postgres", "synchronous standby")
	if pw := passwordOf(url); pw != "" && strings.Contains(d.stdout+d.stderr+r.stdout+first.stderr, pw) {
		t.Fatal("the output shows the PostgreSQL password")
	}
}

// passwordOf returns the password in a postgres:// URL.
func passwordOf(raw string) string {
	u, err := neturl.Parse(raw)
	if err != nil || u.User == nil {
		return ""
	}
	pw, _ := u.User.Password()
	return pw
}
