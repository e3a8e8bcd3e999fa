package simulation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/jonboulle/clockwork"

	"github.com/tradewire/tradewire/transport"
)

// Step is one kind of thing a bot does, such as reading holdings or placing
// an order. A bot draws a step with probability proportional to Weight,
// runs it, pauses (Scenario.Think), and draws again until the scenario's
// Duration has passed.
//
// Run should make its venue calls through the Bot (Bot.Do), which records
// them in the run's history and tags their requests on the wire. A failed
// call is not an error of the step: it is in the history for the
// invariants to judge. Run returns an error only when the workload itself
// is broken; that ends the run.
type Step struct {
	Name   string
	Weight int
	Run    func(ctx context.Context, b *Bot) error
}

// Bot is one simulated trading bot. It is driven by one goroutine, in
// lockstep with the other bots, so its fields need no locking.
type Bot struct {
	// ID numbers the bots of a run from 0.
	ID int
	// Rand is the bot's own seeded random source: draw every choice from
	// it, so the run stays deterministic.
	Rand *rand.Rand
	// Account is the venue account number the bot trades.
	Account string
	// Orders holds ids of resting orders this bot created and has not
	// cancelled, oldest first, for later steps to look up or cancel.
	Orders []string

	clock  clockwork.Clock
	caller Caller
	hist   *history
	src    *rand.ChaCha8
	step   string
	// badBodies: the venue may answer a committed create 2xx with a bad
	// body (a hostile mode's create faults).
	badBodies bool
}

// Now returns the simulated time.
func (b *Bot) Now() time.Time { return b.clock.Now() }

// Sleep pauses the bot for d of simulated time, or until ctx ends.
func (b *Bot) Sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := b.clock.NewTimer(d)
	select {
	case <-ctx.Done():
		t.Stop()
	case <-t.Chan():
	}
}

// NewClientOrderID returns a fresh UUID drawn from the bot's seeded source.
func (b *Bot) NewClientOrderID() string {
	id, err := uuid.NewRandomFromReader(b.src)
	if err != nil { // ChaCha8 never fails to read
		panic(err)
	}
	return id.String()
}

// Do makes one call through the run's Caller and records it in the
// history; its requests carry the call's ID on the wire.
func (b *Bot) Do(ctx context.Context, method, target string, body []byte) (*transport.Response, error) {
	id := b.hist.begin()
	c := Call{ID: id, Bot: b.ID, Step: b.step, Method: method, Target: target, Start: b.clock.Now()}
	if body != nil {
		c.ClientOrderID = clientOrderID(body)
	}
	resp, err := b.caller.Do(withCaller(context.WithValue(ctx, callKey{}, id)), method, target, body)
	c.End, c.Err = b.clock.Now(), err
	c.Attempts, c.Status = reported(resp, err)
	b.hist.end(c)
	return resp, err
}

// reported is the attempt count and final status the client reported: a
// Response's or a *transport.StatusError's; for a write whose outcome is
// unknown, one attempt (a write is sent once) and the status of the 2xx
// that comes with it, if any; for a read that failed below HTTP on every
// attempt, the count its message gives ("failed after N attempts").
func reported(resp *transport.Response, err error) (attempts, status int) {
	var se *transport.StatusError
	switch {
	case err == nil && resp != nil:
		return resp.Attempts, resp.StatusCode
	case errors.Is(err, transport.ErrUnknownOutcome):
		if resp != nil {
			return 1, resp.StatusCode
		}
		return 1, 0
	case errors.As(err, &se):
		return se.Attempts, se.StatusCode
	case errors.Is(err, transport.ErrUnavailable):
		if m := failedAfter.FindStringSubmatch(err.Error()); m != nil {
			n, _ := strconv.Atoi(m[1])
			return n, 0
		}
	}
	return 0, 0
}

// failedAfter is how the transport's message for a read that failed below
// HTTP on every attempt counts them.
var failedAfter = regexp.MustCompile(`^\S+ \S+: failed after (\d+) attempts: `)

// The v2 paths the default workload calls.
const (
	pathAccounts = "/api/v2/crypto/trading/accounts/"
	pathHoldings = "/api/v2/crypto/trading/holdings/"
	pathPairs    = "/api/v2/crypto/trading/trading_pairs/"
	pathBBA      = "/api/v2/crypto/marketdata/best_bid_ask/"
	pathOrders   = "/api/v2/crypto/trading/orders/"
)

// maxOpen bounds the resting orders a bot keeps: at the bound, placing a
// limit order cancels the oldest instead. Every open order costs the venue
// work on each request, so an unbounded book would slow the run down.
const maxOpen = 1

// DefaultSteps returns the default workload: reads of accounts, holdings,
// trading pairs, best bid/ask, recent orders and single orders (a quarter
// of them unknown ids, answered 404), creates of resting limit orders and
// small market orders with a fresh client_order_id each, cancels of
// orders the bot created, and sweeps that list the account's open orders
// and cancel them (creates whose answer was lost leave orders the bot does
// not know of). About a third of the calls are POSTs.
func DefaultSteps() []Step {
	get := func(target func(b *Bot) string) func(context.Context, *Bot) error {
		return func(ctx context.Context, b *Bot) error {
			b.Do(ctx, http.MethodGet, target(b), nil)
			return nil
		}
	}
	return []Step{
		{Name: "accounts", Weight: 2, Run: get(func(*Bot) string { return pathAccounts })},
		{Name: "holdings", Weight: 2, Run: get(func(b *Bot) string {
			return pathHoldings + "?" + url.Values{"account_number": {b.Account}}.Encode()
		})},
		{Name: "trading_pairs", Weight: 1, Run: get(func(*Bot) string { return pathPairs })},
		{Name: "best_bid_ask", Weight: 4, Run: get(func(*Bot) string {
			return pathBBA + "?symbol=BTC-USD&symbol=ETH-USD"
		})},
		{Name: "list_orders", Weight: 2, Run: get(func(b *Bot) string {
			return pathOrders + "?" + url.Values{"account_number": {b.Account}, "symbol": {"BTC-USD"},
				"created_at_start": {b.Now().Add(-time.Minute).UTC().Format(time.RFC3339)}}.Encode()
		})},
		{Name: "get_order", Weight: 2, Run: get(func(b *Bot) string {
			id := b.NewClientOrderID() // unknown: answered 404
			if len(b.Orders) > 0 && b.Rand.IntN(4) != 0 {
				id = b.Orders[b.Rand.IntN(len(b.Orders))]
			}
			return pathOrders + id + "/?" + url.Values{"account_number": {b.Account}}.Encode()
		})},
		{Name: "place_limit", Weight: 2, Run: placeLimit},
		{Name: "place_market", Weight: 1, Run: placeMarket},
		{Name: "cancel", Weight: 3, Run: cancelOrder},
		{Name: "sweep", Weight: 1, Run: sweep},
	}
}

type orderConfig struct {
	AssetQuantity string `json:"asset_quantity"`
	LimitPrice    string `json:"limit_price,omitempty"`
	TimeInForce   string `json:"time_in_force,omitempty"`
}

type orderBody struct {
	ClientOrderID string       `json:"client_order_id"`
	Side          string       `json:"side"`
	Type          string       `json:"type"`
	Symbol        string       `json:"symbol"`
	Market        *orderConfig `json:"market_order_config,omitempty"`
	Limit         *orderConfig `json:"limit_order_config,omitempty"`
}

// placeLimit creates a buy limit order far below the market, so that it
// rests until cancelled; with maxOpen resting already, it cancels one.
func placeLimit(ctx context.Context, b *Bot) error {
	if len(b.Orders) >= maxOpen {
		return cancelOrder(ctx, b)
	}
	body := orderBody{ClientOrderID: b.NewClientOrderID(), Side: "buy", Type: "limit", Symbol: "BTC-USD",
		Limit: &orderConfig{AssetQuantity: "0.001", LimitPrice: "1000.00", TimeInForce: "gtc"}}
	if b.Rand.IntN(2) == 0 {
		body.Symbol, body.Limit.AssetQuantity, body.Limit.LimitPrice = "ETH-USD", "0.01", "100.00"
	}
	return place(ctx, b, body)
}

// placeMarket creates a small market order, a buy or a sell.
func placeMarket(ctx context.Context, b *Bot) error {
	body := orderBody{ClientOrderID: b.NewClientOrderID(), Side: "buy", Type: "market", Symbol: "BTC-USD",
		Market: &orderConfig{AssetQuantity: "0.00001"}}
	if b.Rand.IntN(2) == 0 {
		body.Side = "sell"
	}
	return place(ctx, b, body)
}

func place(ctx context.Context, b *Bot, body orderBody) error {
	raw, err := json.Marshal(body)
	if err != nil {
		return err
	}
	target := pathOrders + "?" + url.Values{"account_number": {b.Account}}.Encode()
	resp, err := b.Do(ctx, http.MethodPost, target, raw)
	if err != nil {
		return nil
	}
	var o struct {
		ID            string `json:"id"`
		State         string `json:"state"`
		ClientOrderID string `json:"client_order_id"`
	}
	if err := json.Unmarshal(resp.Body, &o); err != nil || o.ID == "" || o.ClientOrderID != body.ClientOrderID {
		if b.badBodies {
			// A hostile venue answered a committed create 2xx with a bad
			// body: the bot cannot know the order's id to cancel it.
			return nil
		}
		return fmt.Errorf("create answered %d without its order: %v", resp.StatusCode, err)
	}
	if body.Type == "limit" && o.State != "failed" {
		b.Orders = append(b.Orders, o.ID)
	}
	return nil
}

// cancelOrder cancels the oldest order the bot keeps resting, or places a
// limit order when it has none.
func cancelOrder(ctx context.Context, b *Bot) error {
	if len(b.Orders) == 0 {
		return placeLimit(ctx, b)
	}
	id := b.Orders[0]
	b.Orders = b.Orders[1:]
	b.Do(ctx, http.MethodPost, pathOrders+id+"/cancel/", nil)
	return nil
}

// sweepMax bounds the cancels of one sweep.
const sweepMax = 3

// sweep lists the account's open orders of the last hour and cancels up to
// sweepMax of them: resting orders whose create answer was lost would
// otherwise stay open for the rest of the run.
func sweep(ctx context.Context, b *Bot) error {
	target := pathOrders + "?" + url.Values{"account_number": {b.Account}, "state": {"open"},
		"created_at_start": {b.Now().Add(-time.Hour).UTC().Format(time.RFC3339)}}.Encode()
	resp, err := b.Do(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil
	}
	var page struct {
		Results []struct {
			ID string `json:"id"`
		} `json:"results"`
	}
	if err := json.Unmarshal(resp.Body, &page); err != nil {
		return fmt.Errorf("orders page: %w", err)
	}
	for i, o := range page.Results {
		if i == sweepMax || ctx.Err() != nil {
			break
		}
		b.Do(ctx, http.MethodPost, pathOrders+o.ID+"/cancel/", nil)
		b.Orders = slices.DeleteFunc(b.Orders, func(id string) bool { return id == o.ID })
	}
	return nil
}
