// Command bot places one limit buy under an idempotency key, finds it again
// by that key, cancels it and waits until the cancel settles (WaitFinal),
// then follows the account's orders with the watch until it reports the
// order final, handling every error Place can return. It runs on the
// simulated venue in memory (package brokertest) on a simulation clock
// that skips each wait: no credentials, no network, no real waiting.
// Against the real venue, build the client with
// broker.Config{Getenv: os.Getenv} and leave out Transport.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/shopspring/decimal"

	"github.com/tradewire/tradewire/broker"
	"github.com/tradewire/tradewire/broker/brokertest"
	"github.com/tradewire/tradewire/transport"
	"github.com/tradewire/tradewire/venue"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bot:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out io.Writer) error {
	clk := venue.NewClock(time.Date(2026, 11, 29, 14, 0, 0, 0, time.UTC))
	clk.SkipWaits(1)                                     // each wait of the bot ends at once, its time skipped
	srv, err := brokertest.New(venue.Config{Clock: clk}) // the simulated venue, in memory
	if err != nil {
		return err
	}
	defer srv.Close()
	dir, err := os.MkdirTemp("", "bot")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	env := map[string]string{"TRADEWIRE_BASE_URL": srv.URL, "TRADEWIRE_API_KEY": srv.APIKey,
		"TRADEWIRE_PRIVATE_KEY": srv.PrivateKeyBase64}

	c, err := broker.New(broker.Config{
		Getenv:          func(k string) string { return env[k] },                            // os.Getenv for real
		Transport:       transport.Config{RoundTripper: srv.Client().Transport, Clock: clk}, // the in-memory venue; leave out for the real one
		IntentStoreFile: filepath.Join(dir, "intents.db"),                                   // default: $XDG_STATE_HOME/tradewire
	})
	if err != nil {
		return err // names the missing variable, never a secret
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()

	if _, err := c.Recover(ctx); err != nil { // settle what a previous run left open
		return fmt.Errorf("recover: %w", err)
	}
	q, err := c.BestBidAsk(ctx, "BTC-USD")
	if err != nil {
		return fmt.Errorf("quote: %w", err)
	}
	req := broker.OrderRequest{Symbol: "BTC-USD", Side: broker.SideBuy, Type: broker.TypeLimit,
		AssetQuantity: decimal.RequireFromString("0.001"),
		LimitPrice:    q[0].Bid.Mul(decimal.RequireFromString("0.9")).Round(2)}
	p, err := c.Preview(ctx, req) // the same offline checks as Place, and an estimate
	if err != nil {
		return fmt.Errorf("preview: %w", err)
	}
	if !p.OK() {
		return fmt.Errorf("preview: the order breaks %v", p.Violations)
	}

	const key = "2026-11-29#BTC-USD#entry" // one key per job; the same key after any failure
	o, err := c.Place(ctx, key, req)
	switch { // in this order (go doc broker, "# Errors")
	case err == nil, errors.Is(err, broker.ErrRecordedOrder): // placed (o may be the recorded copy)
		fmt.Fprintln(out, "placed:", o.State)
	case errors.Is(err, broker.ErrInProgress):
		return fmt.Errorf("another holder places this key: Place again later, same key: %w", err)
	case errors.Is(err, broker.ErrUnknownOutcome):
		return fmt.Errorf("it may exist: Place again later with the same key, never a new one: %w", err)
	case errors.Is(err, broker.ErrRejected):
		return fmt.Errorf("the venue said no; nothing is live: %w", err)
	case errors.Is(err, broker.ErrNotPlaced):
		return fmt.Errorf("nothing was placed: the same key again is safe: %w", err)
	case errors.Is(err, broker.ErrNotSent):
		return fmt.Errorf("nothing was sent this time: retry later, same key only: %w", err)
	case errors.Is(err, broker.ErrInvalidRequest):
		return fmt.Errorf("refused offline, nothing sent: %w", err)
	default:
		return fmt.Errorf("treat as unknown: %w", err)
	}

	rec, err := c.Intent(ctx, key) // the intent store alone: what became of the key
	if err != nil {
		return fmt.Errorf("intent: %w", err)
	}
	found, err := c.OrderByKey(ctx, key) // the intent store first, then the venue
	if err != nil {
		return fmt.Errorf("by key: %w", err)
	}
	fmt.Fprintln(out, "intent:", rec.State, "same order:", rec.OrderID == o.ID && found.ID == o.ID)

	if _, err := c.CancelOrder(ctx, o.ID); err != nil {
		return fmt.Errorf("cancel: %w", err) // ErrRejected: already final, in the venue's words
	}
	final, err := c.WaitFinal(ctx, o.ID) // reads the order, on the client's clock, until it is final
	if err != nil {
		return fmt.Errorf("wait: %w", err) // ctx's error if it was still open at the deadline
	}
	fmt.Fprintln(out, "final:", final.State)

	// The watch: every change of the account's orders, polled by updated_at.
	for ev, err := range c.Watch(ctx, broker.WatchConfig{}) {
		if err != nil {
			fmt.Fprintln(out, "poll failed:", err) // the watch polls again
			continue
		}
		fmt.Fprintln(out, "event:", ev.Kind, ev.Order.Symbol, "filled:", ev.Order.FilledAssetQuantity, "external:", ev.External)
		if ev.Order.ID == o.ID && ev.Order.State.Final() {
			break // a clean stop: the cursor is saved in the intent store, and a restart repeats nothing
		}
	}
	return nil
}
