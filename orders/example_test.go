package orders_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/shopspring/decimal"

	"github.com/tradewire/tradewire/broker/brokertest"
	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/orders"
	"github.com/tradewire/tradewire/signing"
	"github.com/tradewire/tradewire/transport"
)

// A bot places an order under an idempotency key. Calling Place again with
// the same key — after a crash, a timeout, anything — returns the same
// order and sends nothing.
func Example() {
	venue, err := brokertest.New() // an in-memory simulated venue
	if err != nil {
		panic(err)
	}
	defer venue.Close()
	key, _ := signing.ParsePrivateKey(venue.PrivateKeyBase64)
	signer, _ := signing.New(venue.APIKey, key)
	tc, err := transport.New(venue.URL, signer, transport.WithRoundTripper(venue.Transport()))
	if err != nil {
		panic(err)
	}
	// In production, idempotency.Open(path) keeps intents across restarts.
	placer, err := orders.New(tc, idempotency.NewMemoryStore(), venue.AccountNumber, orders.WithNamespace("momentum"))
	if err != nil {
		panic(err)
	}

	req := orders.Request{
		Symbol:        "BTC-USD",
		Side:          orders.SideBuy,
		Type:          orders.TypeLimit,
		AssetQuantity: decimal.RequireFromString("0.0001"),
		LimitPrice:    decimal.RequireFromString("1000.00"),
	}
	ctx := context.Background()
	first, err := placer.Place(ctx, "2026-11-29#BTC-USD#entry", req)
	if err != nil {
		panic(err)
	}
	again, err := placer.Place(ctx, "2026-11-29#BTC-USD#entry", req)
	if err != nil {
		panic(err)
	}
	fmt.Println(first.ClientOrderID == placer.ClientOrderID("2026-11-29#BTC-USD#entry"))
	fmt.Println(first.State, again.ID == first.ID)
	fmt.Println("orders at the venue:", len(venue.Ledger().OrdersByClientID(first.ClientOrderID)))
	// Output:
	// true
	// open true
	// orders at the venue: 1
}

// A bot branches on what Place returns with the switch the package
// documentation gives, in its order. Here the venue answers the create
// 503: it may have taken effect, so the bot must not place it again under
// a new key.
func ExamplePlacer_Place_errors() {
	venue, err := brokertest.New(brokertest.WithFaults(brokertest.Fault{
		Kind: brokertest.FaultRespond, Method: "POST", Path: "/api/v2/crypto/trading/orders/", Status: 503}))
	if err != nil {
		panic(err)
	}
	defer venue.Close()
	key, _ := signing.ParsePrivateKey(venue.PrivateKeyBase64)
	signer, _ := signing.New(venue.APIKey, key)
	tc, err := transport.New(venue.URL, signer, transport.WithRoundTripper(venue.Transport()))
	if err != nil {
		panic(err)
	}
	placer, err := orders.New(tc, idempotency.NewMemoryStore(), venue.AccountNumber)
	if err != nil {
		panic(err)
	}
	req := orders.Request{Symbol: "BTC-USD", Side: orders.SideBuy, Type: orders.TypeLimit,
		AssetQuantity: decimal.RequireFromString("0.0001"), LimitPrice: decimal.RequireFromString("1000.00")}

	// An empty key: sent once under a random id, never again.
	_, err = placer.Place(context.Background(), "", req)
	switch {
	case err == nil:
		fmt.Println("placed")
	case errors.Is(err, orders.ErrInProgress):
		fmt.Println("in progress elsewhere: Place again later with the same key")
	case errors.Is(err, orders.ErrUnknownOutcome):
		fmt.Println("unknown: it may exist; never place it under a new key")
	case errors.Is(err, orders.ErrRejected):
		fmt.Println("rejected: nothing is live")
	case errors.Is(err, orders.ErrNotPlaced):
		fmt.Println("not placed: the same key again is safe")
	case errors.Is(err, transport.ErrInvalidRequest):
		fmt.Println("invalid: nothing was sent")
	default:
		fmt.Println("unknown")
	}
	// Output:
	// unknown: it may exist; never place it under a new key
}
