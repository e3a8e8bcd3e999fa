package cli

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/tradewire/tradewire/broker"
	"github.com/tradewire/tradewire/broker/brokertest"
	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/orders"
	"github.com/tradewire/tradewire/signing"
)

// ---- Chapter 7 ----

// demoIdempotentPlacement: a create whose answer is lost, reconciled into
// exactly one order by lookup; and a create refused before commit on a
// venue that would naively create a second order, sent again only once its
// signature expired.
func demoIdempotentPlacement(ctx context.Context, d *demoRun) error {
	placer, err := broker.NewFromTransport(d.client, broker.WithClock(d.client.Clock()), broker.WithAccountNumber(d.account),
		broker.WithIntentStore(idempotency.NewMemoryStore()), broker.WithNamespace("demo"))
	if err != nil {
		return err
	}
	bid, err := decimal.NewFromString(d.bid)
	if err != nil {
		return fmt.Errorf("bid %q: %w", d.bid, err)
	}
	req := broker.OrderRequest{
		Symbol: demoSymbol, Side: broker.SideBuy, Type: broker.TypeLimit,
		AssetQuantity: decimal.RequireFromString("0.0001"), LimitPrice: bid.Div(decimal.NewFromInt(2)).Round(2),
	}
	d.w.say("Order placement sits above the transport. Place records the intent before the first byte is sent, " +
		"derives the client_order_id from the caller's idempotency key, and after an ambiguous answer looks the " +
		"order up before it would ever send the create again.")

	// A: the answer is lost after the venue committed the order.
	d.w.say("First, the venue commits the create and loses its answer (503), as in chapter 4.")
	if err := d.venue.Inject(brokertest.Fault{Kind: brokertest.FaultLoseResponse, Method: http.MethodPost, Path: pathOrders, Status: http.StatusServiceUnavailable}); err != nil {
		return err
	}
	o, sends, lookups, err := d.place(ctx, placer, "entry-1", req)
	if err != nil {
		return err
	}
	d.w.detail("Place(key %q) -> order %s, state %s", "entry-1", o.ID, o.State)
	d.w.detail("creates sent: %d; lookups: %d; orders with client_order_id %s: %d", sends, lookups, o.ClientOrderID,
		len(d.venue.Ledger().OrdersByClientID(o.ClientOrderID)))
	d.w.say("The lookup found the order, so nothing was sent again: one order, and the bot has it.")

	// B: refused before commit, on the dangerous venue.
	d.w.say("Next, the venue refuses a create with 503 before committing it, and is switched to the dangerous " +
		"behaviour on a duplicate client_order_id: it would naively create a second order.")
	if err := d.venue.SetDuplicateMode(brokertest.CreateSecond); err != nil {
		return err
	}
	defer d.venue.SetDuplicateMode(brokertest.ReturnOriginal)
	if err := d.venue.Inject(brokertest.Fault{Kind: brokertest.FaultRespond, Method: http.MethodPost, Path: pathOrders, Status: http.StatusServiceUnavailable,
		Body: `{"type":"server_error","errors":[{"detail":"Service temporarily unavailable.","attr":null}]}`}); err != nil {
		return err
	}
	before := d.clock.Now()
	start := len(d.venue.Ledger().Requests())
	o, sends, lookups, err = d.place(ctx, placer, "entry-2", req)
	if err != nil {
		return err
	}
	var createTimes []string
	var first, last = before, before
	for _, r := range d.venue.Ledger().Requests()[start:] {
		if r.Method == http.MethodPost {
			if len(createTimes) == 0 {
				first = r.Time
			}
			last = r.Time
			createTimes = append(createTimes, r.Time.Sub(before).Round(time.Millisecond).String())
		}
	}
	d.w.detail("Place(key %q) -> order %s, state %s", "entry-2", o.ID, o.State)
	d.w.detail("creates sent: %d (at +%s); lookups: %d; orders with client_order_id %s: %d", sends,
		strings.Join(createTimes, " and +"), lookups, o.ClientOrderID, len(d.venue.Ledger().OrdersByClientID(o.ClientOrderID)))
	off, _ := d.client.ClockOffset()
	d.w.say(fmt.Sprintf("The first lookup found nothing. A signature is valid for %v, so the first create could still "+
		"have landed: Place waited until it had expired on the venue's clock (which the transport reads from the Date "+
		"header of every answer: %v from this machine's here), plus a margin of %v, looked again, and only then sent "+
		"the same bytes with the same client_order_id, %v after the first. Even this venue holds one order.",
		signing.ValidFor, off, orders.DefaultSkewMargin, last.Sub(first)))

	// C: the same key again.
	start = len(d.venue.Ledger().Requests())
	again, err := placer.Place(ctx, "entry-2", req)
	if err != nil {
		return err
	}
	creates := 0
	for _, r := range d.venue.Ledger().Requests()[start:] {
		if r.Method == http.MethodPost {
			creates++
		}
	}
	d.w.detail("Place(key %q) again -> order %s, state %s; creates sent: %d", "entry-2", again.ID, again.State, creates)
	d.w.say("Calling Place again with an acknowledged key sends no create: it returns the order read afresh from " +
		"the venue. After a crash, a timeout or a restart, a bot simply calls Place again.")
	return nil
}

// place runs Place and counts the creates and lookups it sent.
func (d *demoRun) place(ctx context.Context, p *broker.Client, key string, req broker.OrderRequest) (*broker.Order, int, int, error) {
	start := len(d.venue.Ledger().Requests())
	o, err := p.Place(ctx, key, req)
	if err != nil {
		return nil, 0, 0, err
	}
	sends, lookups := 0, 0
	for _, r := range d.venue.Ledger().Requests()[start:] {
		switch {
		case r.Method == http.MethodPost:
			sends++
		case strings.Contains(r.Target, "created_at_start="):
			lookups++
		}
	}
	return o, sends, lookups, nil
}
