package broker_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/shopspring/decimal"

	"github.com/tradewire/tradewire/broker"
	"github.com/tradewire/tradewire/broker/brokertest" // the simulated venue only
	"github.com/tradewire/tradewire/transport"
	"github.com/tradewire/tradewire/venue"
)

// A whole bot in one import: read the account and the book, preview a
// buy, place it under an idempotency key, find it again by that key,
// cancel it and wait until the cancel settles. Against the real venue the
// environment is os.Getenv and the clock the real one; here they are the
// simulated venue's, on a simulation clock the example advances itself.
func Example_bot() {
	clk := venue.NewClock(time.Date(2026, 8, 20, 14, 0, 0, 0, time.UTC)) // clockwork.NewRealClock() in production
	srv := brokertest.NewServer(venue.Config{Clock: clk})
	defer srv.Close()
	dir, _ := os.MkdirTemp("", "bot")
	defer os.RemoveAll(dir)
	env := map[string]string{"TRADEWIRE_BASE_URL": srv.URL, "TRADEWIRE_API_KEY": srv.APIKey, "TRADEWIRE_PRIVATE_KEY": srv.PrivateKeyBase64}

	c, err := broker.New(broker.Config{
		Getenv:          func(k string) string { return env[k] },
		IntentStoreFile: filepath.Join(dir, "intents.db"),
		Transport:       transport.Config{RoundTripper: srv.Client().Transport, Clock: clk},
	})
	if err != nil {
		fmt.Println("setup:", err)
		return
	}
	defer c.Close()
	ctx, cancel := venue.WithTimeout(context.Background(), clk, time.Minute)
	defer cancel()
	go func() { // the simulation's time: it moves whenever the bot waits
		for clk.BlockUntilContext(ctx, 1) == nil {
			clk.Advance(100 * time.Millisecond)
		}
	}()

	acct, err := c.Account(ctx)
	if err != nil {
		fmt.Println("account:", err)
		return
	}
	q, err := c.BestBidAsk(ctx, "BTC-USD")
	if err != nil || len(q) == 0 {
		fmt.Println("quote:", err)
		return
	}
	req := broker.OrderRequest{Symbol: "BTC-USD", Side: broker.SideBuy, Type: broker.TypeLimit,
		AssetQuantity: decimal.RequireFromString("0.001"), LimitPrice: q[0].Bid.Mul(decimal.RequireFromString("0.9")).Round(2)}
	p, err := c.Preview(ctx, req) // an *broker.ArgumentError names a field Place would refuse too
	if err != nil {
		fmt.Println("preview:", err) // p is nil
		return
	}
	if !p.OK() || p.Total.GreaterThan(acct.BuyingPower) {
		fmt.Println("preview:", p.Violations, p.Total)
		return
	}
	fmt.Println("account active:", acct.Status == "active", "preview ok:", p.OK())

	const key = "dip-2026-08-20" // the same key after any failure: never two orders
	o, err := c.Place(ctx, key, req)
	if err != nil && !errors.Is(err, broker.ErrRecordedOrder) { // ErrRecordedOrder: o is as acknowledged
		fmt.Println(whatNow(err))
		return
	}
	fmt.Println("placed:", o.State)

	found, err := c.OrderByKey(ctx, key)
	if err != nil {
		fmt.Println("by key:", err) // errors.Is(err, broker.ErrNoSuchOrder): not found
		return
	}
	fmt.Println("found by key:", found.ID == o.ID, found.ClientOrderID == c.ClientOrderID(key))

	if _, err := c.CancelOrder(ctx, o.ID); err != nil {
		// ErrRejected: already final, in the venue's words; or ErrNoSuchOrder, ErrUnknownOutcome, …
		fmt.Println("cancel:", err, errors.Is(err, broker.ErrRejected))
		return
	}
	for o.State != broker.StateCanceled {
		select {
		case <-ctx.Done():
			fmt.Println("gave up waiting:", ctx.Err())
			return
		case <-clk.After(100 * time.Millisecond):
		}
		if o, err = c.Order(ctx, o.ID); err != nil {
			fmt.Println("read:", err)
			return
		}
	}
	fmt.Println("state:", o.State)
	// Output:
	// account active: true preview ok: true
	// placed: open
	// found by key: true true
	// state: canceled
}

// whatNow is the bot's switch over Place's errors, in the documented order.
func whatNow(err error) string {
	switch {
	case errors.Is(err, broker.ErrInProgress):
		return "another process places this key: try again later, same key"
	case errors.Is(err, broker.ErrUnknownOutcome):
		return "it may exist: Place again later with the same key, or Recover; never a new key"
	case errors.Is(err, broker.ErrRejected):
		return "the venue said no; nothing is live: " + err.Error()
	case errors.Is(err, broker.ErrNotPlaced):
		return "nothing placed: the same key again is safe"
	case errors.Is(err, broker.ErrNotSent):
		return "nothing sent this time: retry later, same key only"
	case errors.Is(err, broker.ErrInvalidRequest):
		return "fix the request: " + err.Error()
	}
	return "treat as unknown: " + err.Error()
}
