package broker_test

import (
	"context"
	"fmt"
	"time"

	"github.com/shopspring/decimal"

	"github.com/tradewire/tradewire/broker"
	"github.com/tradewire/tradewire/broker/brokertest"
	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/signing"
	"github.com/tradewire/tradewire/transport"
	"github.com/tradewire/tradewire/venue"
)

// A bot places a resting order and a market order, follows the account's
// orders with Watch until the market order is filled, then cancels the
// resting one and waits for the cancel to settle with WaitFinal. The
// simulated venue's clock moves only when the client waits.
func ExampleClient_Watch() {
	clk := venue.NewClock(time.Date(2026, 8, 20, 18, 0, 0, 0, time.UTC))
	clk.SkipWaits(1)
	srv, err := brokertest.New(venue.Config{Seed: 1, Clock: clk})
	if err != nil {
		panic(err)
	}
	key, err := signing.ParsePrivateKey(srv.PrivateKeyBase64)
	if err != nil {
		panic(err)
	}
	c, err := broker.New(broker.Config{APIKey: srv.APIKey, PrivateKey: key, BaseURL: srv.URL,
		IntentStore: idempotency.NewMemoryStore(),
		Transport:   transport.Config{RoundTripper: srv.Client().Transport, Clock: clk}})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	ctx := context.Background()

	resting, err := c.Place(ctx, "rest-1", broker.OrderRequest{Symbol: "BTC-USD", Side: broker.SideBuy, Type: broker.TypeLimit,
		AssetQuantity: decimal.RequireFromString("0.001"), LimitPrice: decimal.RequireFromString("1000")})
	if err != nil {
		panic(err)
	}
	entry, err := c.Place(ctx, "entry-1", broker.OrderRequest{Symbol: "BTC-USD", Side: broker.SideBuy, Type: broker.TypeMarket,
		AssetQuantity: decimal.RequireFromString("0.001")})
	if err != nil {
		panic(err)
	}
	for ev, err := range c.Watch(ctx, broker.WatchConfig{}) {
		if err != nil {
			fmt.Println("poll failed:", err) // the watch polls again
			continue
		}
		fmt.Println(ev.Kind, ev.Order.Symbol, ev.Order.FilledAssetQuantity, "external:", ev.External)
		if ev.Order.ID == entry.ID && ev.Kind == broker.EventFilled {
			break // the cursor is saved where the store keeps one
			// (the list is newest first: the resting order comes after)
		}
	}

	if _, err := c.CancelOrder(ctx, resting.ID); err != nil {
		panic(err)
	}
	o, err := c.WaitFinal(ctx, resting.ID)
	if err != nil {
		panic(err)
	}
	fmt.Println("resting order:", o.State)
	// Output:
	// filled BTC-USD 0.001 external: false
	// resting order: canceled
}
