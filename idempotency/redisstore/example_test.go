package redisstore_test

import (
	"context"
	"errors"
	"log"

	"github.com/tradewire/tradewire/broker"
	"github.com/tradewire/tradewire/idempotency/redisstore"
	"github.com/tradewire/tradewire/transport"
)

// Every bot process of a fleet places through one Redis intent store. A
// key another process is placing right now comes back as
// broker.ErrInProgress: nothing was sent; ask again later for the settled
// order.
func Example() {
	ctx := context.Background()
	store, err := redisstore.Open(ctx, "redis://127.0.0.1:6379/0", "AB1234567890", redisstore.Config{})
	if err != nil {
		log.Fatal(err) // unreachable, not appendonly yes + appendfsync always, or reset
	}
	defer store.Close()
	var tc *transport.Client // transport.New(…), with the fleet's budget
	placer, err := broker.NewFromTransport(tc, broker.Config{AccountNumber: "AB1234567890", IntentStore: store})
	if err != nil {
		log.Fatal(err)
	}
	order, err := placer.Place(ctx, "rebalance-2026-05-01", broker.OrderRequest{ /* … */ })
	switch {
	case errors.Is(err, broker.ErrInProgress):
		log.Printf("another process is placing it: %v", err) // the message names it
	case errors.Is(err, redisstore.ErrStoreReset):
		// Redis lost intents: nothing was sent, and this Store refuses
		// from now on. Reconcile the account's orders before restarting.
		log.Fatal(err)
	case errors.Is(err, transport.ErrUnknownOutcome):
		log.Printf("the order may exist: Place again with the same key, never a new one: %v", err)
	case errors.Is(err, transport.ErrUnavailable):
		log.Printf("Redis or the venue is unavailable; nothing was sent for this key, try it again later: %v", err)
	case err != nil:
		log.Fatal(err)
	default:
		log.Printf("order %s", order.ID)
	}
}
