package orders_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/tradewire/tradewire/broker/brokertest"
	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/orders"
	"github.com/tradewire/tradewire/signing"
	"github.com/tradewire/tradewire/transport"
	"github.com/tradewire/tradewire/venue"
)

// codec reads the three facts the engine needs of the venue's order JSON.
// Package broker, which owns the order vocabulary, is the real one.
type codec struct{}

func (codec) Facts(raw []byte) (orders.Facts, error) {
	var o order
	err := json.Unmarshal(raw, &o)
	return orders.Facts{ID: o.ID, ClientOrderID: o.ClientOrderID, Failed: o.State == "failed", Order: o}, err
}

// order is the codec's decoding of an order, which Place hands back in
// Facts.Order.
type order struct {
	ID            string `json:"id"`
	ClientOrderID string `json:"client_order_id"`
	State         string `json:"state"`
}

// handBuy is a create the caller built and validated: here by hand; a
// bot uses broker.Client.Place, which builds it from a broker.OrderRequest.
var handBuy = orders.Create{Symbol: "BTC-USD", Body: func(cid string) ([]byte, error) {
	return fmt.Appendf(nil, `{"client_order_id":%q,"side":"buy","type":"limit","symbol":"BTC-USD",`+
		`"limit_order_config":{"asset_quantity":"0.0001","limit_price":"1000.00","time_in_force":"gtc"}}`, cid), nil
}}

// The engine alone places a create under an idempotency key. Calling Place
// again with the same key — after a crash, a timeout, anything — returns
// the same order and sends nothing. Bots use broker.Client.Place instead.
func Example() {
	venue, err := brokertest.New(venue.Config{}) // an in-memory simulated venue
	if err != nil {
		panic(err)
	}
	defer venue.Close()
	key, _ := signing.ParsePrivateKey(venue.PrivateKeyBase64)
	signer, _ := signing.New(venue.APIKey, key)
	tc, err := transport.New(venue.URL, signer, transport.Config{RoundTripper: venue.Client().Transport})
	if err != nil {
		panic(err)
	}
	// In production, idempotency.Open(path, idempotency.Config{}) keeps intents across restarts.
	placer, err := orders.New(tc, idempotency.NewMemoryStore(), venue.AccountNumber, codec{}, orders.Config{Namespace: "momentum"})
	if err != nil {
		panic(err)
	}

	ctx := context.Background()
	placed, err := placer.Place(ctx, "2026-11-29#BTC-USD#entry", handBuy)
	if err != nil {
		panic(err)
	}
	placedAgain, err := placer.Place(ctx, "2026-11-29#BTC-USD#entry", handBuy)
	if err != nil {
		panic(err)
	}
	first, again := placed.Order.(order), placedAgain.Order.(order)
	fmt.Println(first.ClientOrderID == placer.ClientOrderID("2026-11-29#BTC-USD#entry"))
	fmt.Println(first.State, again.ID == first.ID, placedAgain.Recorded)
	fmt.Println("orders at the venue:", len(venue.Ledger().OrdersByClientID(first.ClientOrderID)))
	// Output:
	// true
	// open true true
	// orders at the venue: 1
}

// A bot branches on what Place returns with the switch the package
// documentation gives, in its order. Here the venue answers the create
// 503: it may have taken effect, so the bot must not place it again under
// a new key.
func ExamplePlacer_Place_errors() {
	venue, err := brokertest.New(venue.Config{Faults: venue.FaultPlan{Faults: []venue.Fault{{
		Kind: "respond", Method: "POST", Path: "/api/v2/crypto/trading/orders/", Status: 503}}}})
	if err != nil {
		panic(err)
	}
	defer venue.Close()
	key, _ := signing.ParsePrivateKey(venue.PrivateKeyBase64)
	signer, _ := signing.New(venue.APIKey, key)
	tc, err := transport.New(venue.URL, signer, transport.Config{RoundTripper: venue.Client().Transport})
	if err != nil {
		panic(err)
	}
	placer, err := orders.New(tc, idempotency.NewMemoryStore(), venue.AccountNumber, codec{}, orders.Config{})
	if err != nil {
		panic(err)
	}
	// An empty key: sent once under a random id, never again.
	_, err = placer.Place(context.Background(), "", handBuy)
	switch {
	case err == nil:
		fmt.Println("placed")
	case errors.Is(err, idempotency.ErrInProgress):
		fmt.Println("in progress elsewhere: Place again later with the same key")
	case errors.Is(err, transport.ErrUnknownOutcome):
		fmt.Println("unknown: it may exist; never place it under a new key")
	case errors.Is(err, transport.ErrRejected):
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
