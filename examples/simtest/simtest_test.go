// Package simtest is a simulation test: a bot places under a key on the
// simulated venue, on a fake clock the test advances, against a venue that
// loses the answer to the first create and creates a second order for a
// reused client_order_id (the dangerous venue). Waits cost no wall time.
package simtest

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/shopspring/decimal"

	"github.com/tradewire/tradewire/broker"
	"github.com/tradewire/tradewire/broker/brokertest"
	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/signing"
	"github.com/tradewire/tradewire/transport"
	"github.com/tradewire/tradewire/venue"
)

func TestBotPlacesOnce(t *testing.T) {
	clk := venue.NewClock(time.Date(2026, 8, 20, 12, 0, 0, 0, time.UTC))
	srv, err := brokertest.New(venue.Config{Clock: clk, Faults: venue.FaultPlan{
		Duplicate: venue.CreateSecond, // a reused client_order_id makes a second order
		Faults: []venue.Fault{{Kind: "lose_response", // committed, answer lost
			Method: "POST", Path: "/api/v2/crypto/trading/orders/", Status: 503}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	key, err := signing.ParsePrivateKey(srv.PrivateKeyBase64)
	if err != nil {
		t.Fatal(err)
	}
	c, err := broker.New(broker.Config{
		APIKey:          srv.APIKey,
		PrivateKey:      key,
		BaseURL:         srv.URL,
		IntentStoreFile: t.TempDir() + "/intents.db",
		Transport:       transport.Config{RoundTripper: srv.Client().Transport, Clock: clk},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	ctx, cancel := venue.WithTimeout(t.Context(), clk, 10*time.Minute) // a deadline on clk
	defer cancel()
	go func() { // move time whenever the bot waits
		for clk.BlockUntilContext(ctx, 1) == nil { // 1: one goroutine (the bot) waits
			clk.Advance(100 * time.Millisecond)
		}
	}()

	if err := placeUntilKnown(ctx, c, clk, "job-1"); err != nil {
		t.Fatal(err)
	}
	if dups := srv.Ledger().DuplicateClientIDs(); len(dups) > 0 {
		t.Fatalf("orders placed twice: %v", dups)
	}
	if n, left := len(srv.Ledger().Orders()), srv.PendingFaults(); n != 1 || left != 0 {
		t.Fatalf("%d orders at the venue, %d faults not played; want 1 and 0", n, left)
	}
}

// placeUntilKnown is the bot under test: it places under key until the
// outcome is known, waiting on clk (never time.Sleep) between attempts.
func placeUntilKnown(ctx context.Context, c *broker.Client, clk clockwork.Clock, key string) error {
	req := broker.OrderRequest{Symbol: "BTC-USD", Side: broker.SideBuy, Type: broker.TypeMarket,
		AssetQuantity: decimal.RequireFromString("0.0001")}
	for {
		_, err := c.Place(ctx, key, req)
		switch {
		case err == nil, errors.Is(err, broker.ErrRecordedOrder):
			return nil
		case errors.Is(err, broker.ErrInProgress), errors.Is(err, broker.ErrUnknownOutcome),
			errors.Is(err, broker.ErrNotPlaced), errors.Is(err, broker.ErrNotSent):
			select { // the same key again, later
			case <-ctx.Done():
				return ctx.Err()
			case <-clk.After(5 * time.Second):
			}
		default:
			return err
		}
	}
}

// TestBotPlacesOnceInABubble is the same test in a testing/synctest bubble:
// both sides stay on the default real clock, and the bubble's time advances
// by itself whenever every goroutine in it waits.
func TestBotPlacesOnceInABubble(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, err := brokertest.New(venue.Config{Faults: venue.FaultPlan{
			Duplicate: venue.CreateSecond,
			Faults: []venue.Fault{{Kind: "lose_response",
				Method: "POST", Path: "/api/v2/crypto/trading/orders/", Status: 503}},
		}})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		key, err := signing.ParsePrivateKey(srv.PrivateKeyBase64)
		if err != nil {
			t.Fatal(err)
		}
		c, err := broker.New(broker.Config{
			APIKey:      srv.APIKey,
			PrivateKey:  key,
			BaseURL:     srv.URL,
			IntentStore: idempotency.NewMemoryStore(),
			Transport:   transport.Config{RoundTripper: srv.Client().Transport},
		})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute) // bubble time
		defer cancel()

		if err := placeUntilKnown(ctx, c, clockwork.NewRealClock(), "job-1"); err != nil {
			t.Fatal(err)
		}
		if n, left := len(srv.Ledger().Orders()), srv.PendingFaults(); n != 1 || left != 0 {
			t.Fatalf("%d orders at the venue, %d faults not played; want 1 and 0", n, left)
		}
	})
}
