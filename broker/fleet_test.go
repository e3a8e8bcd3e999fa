package broker_test

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/tradewire/tradewire/broker"
	"github.com/tradewire/tradewire/broker/brokertest"
	"github.com/tradewire/tradewire/internal/redistest"
	"github.com/tradewire/tradewire/signing"
)

func fleetClient(t *testing.T, srv *brokertest.Server, redisURL string, opts ...broker.Option) (*broker.Client, error) {
	t.Helper()
	key, err := signing.ParsePrivateKey(srv.PrivateKeyBase64)
	if err != nil {
		t.Fatal(err)
	}
	return broker.New(append([]broker.Option{
		broker.WithCredentials(srv.APIKey, key), broker.WithBaseURL(srv.URL),
		broker.WithRoundTripper(srv.Transport()), broker.WithRedisURL(redisURL),
	}, opts...)...)
}

func accountReads(srv *brokertest.Server) int {
	n := 0
	for _, r := range srv.Ledger().Requests() {
		if strings.HasPrefix(r.Target, "/api/v2/crypto/trading/accounts/") {
			n++
		}
	}
	return n
}

// A Redis that cannot be reached is an error at start-up, never a silent
// fallback to a private budget; nothing is sent to the venue.
func TestRedisUnreachableRefusesToStart(t *testing.T) {
	srv, err := brokertest.New()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	_, err = fleetClient(t, srv, "redis://:s3cret@127.0.0.1:1/0")
	if err == nil || !strings.Contains(err.Error(), "cannot be reached") {
		t.Fatalf("err = %v, want a clear refusal", err)
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("error %q shows the Redis password", err)
	}
	if n := len(srv.Ledger().Requests()); n != 0 {
		t.Fatalf("%d requests sent with no budget", n)
	}
	var ae *broker.ArgumentError
	if _, err := fleetClient(t, srv, "http://not-redis"); !errors.As(err, &ae) {
		t.Fatalf("a bad URL: err = %v", err)
	}
}

// The first process resolves the account that keys the shared budget and
// leaves it in Redis; the next one does not read it again.
func TestFleetSharesTheAccountAndBudget(t *testing.T) {
	url := redistest.URL(t)
	// A key of its own, so that no earlier run left its account in Redis.
	_, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := brokertest.New(brokertest.WithCredentials("rh-api-fleet-"+hex.EncodeToString(priv[:8]), priv))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx := context.Background()
	first, err := fleetClient(t, srv, url)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	second, err := fleetClient(t, srv, url)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	if n := accountReads(srv); n != 1 {
		t.Fatalf("two processes read the accounts list %d times to key their budget, want once", n)
	}
	for _, c := range []*broker.Client{first, second} {
		if _, err := c.BestBidAsk(ctx, "BTC-USD"); err != nil {
			t.Fatal(err)
		}
	}
	if c := srv.Ledger().Counts(); c.Throttled != 0 || c.Unauthorized != 0 {
		t.Fatalf("ledger %+v", c)
	}
}
