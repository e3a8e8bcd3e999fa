package broker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tradewire/tradewire/orders"
)

// ErrHalted: Place refused the create because the intent store is halted
// (Halt); nothing was sent by this call. It also matches ErrNotSent: Place
// again with the same key after Resume.
var ErrHalted = orders.ErrHalted

// haltSettle is how long Halt goes on listing the open orders after the
// halt and after its last cancel: for the cancels to settle (the venue
// settles one about a second after it accepts it), and for a create that
// another holder let through before the halt reached it (within a
// second) to land, before it reports what is still open.
const haltSettle = 5 * time.Second

// haltCancelTries is how many cancels Halt sends one order at most.
const haltCancelTries = 3

// openStates are the states of an order that may still fill.
var openStates = []OrderState{StateOpen, StatePartiallyFilled, StatePending}

// HaltReport says what Halt did with the account's open orders.
type HaltReport struct {
	// Canceled lists the orders the venue accepted a cancel for and no
	// longer lists open, as they were listed before the cancel.
	Canceled []Order
	// Open lists the orders still open when Halt gave up on them, each
	// with why: its cancel failed (the error), or was accepted but the
	// order was still open when Halt stopped waiting. Cancel them again,
	// or look at them by hand.
	Open []CancelFailure
}

// CancelFailure is an order Halt could not cancel, and why.
type CancelFailure struct {
	Order Order
	Err   error
}

// Halt is the kill switch. It halts the intent store durably, so that
// from then on every Place sharing it (every goroutine and Client of this
// process, and for a fleet's Redis every process) refuses every create,
// within a second, with an error matching ErrHalted and nothing sent;
// cancels and reads go on, and a store reopened after a restart is still
// halted until Resume. Then it cancels every open order of the account,
// placed by tradewire or not: it lists the open orders page by page (the
// venue has no cancel-all), cancels each within the rate budget (retrying
// a failed cancel up to 3 times), and lists again, once a second, until
// 5 s after the halt and after its last cancel, and then until none is
// open or its cancels are spent; it reports what it canceled and what
// stayed open. An order created before the halt reached every holder is
// found by a later listing and canceled too.
//
// Its error is set when the store could not be halted (then nothing was
// canceled; the store must implement idempotency.Meta) or when the
// sweep stopped early (the context ended, a listing failed): the store is
// halted, and the report says what was canceled so far; call Halt again.
func (c *Client) Halt(ctx context.Context) (*HaltReport, error) {
	p, err := c.placer(ctx)
	if err != nil {
		return nil, err
	}
	if err := p.Halt(ctx); err != nil {
		return nil, fmt.Errorf("broker: halt: %w", err)
	}
	c.tel.halted(ctx, "halt")
	c.log.Warn().Msg("intent store halted: creates are refused until resumed")
	return c.cancelOpen(ctx)
}

// Resume lifts Halt: every Place sharing the intent store places again,
// within a second. It cancels nothing and places nothing.
func (c *Client) Resume(ctx context.Context) error {
	p, err := c.placer(ctx)
	if err != nil {
		return err
	}
	if err := p.Resume(ctx); err != nil {
		return fmt.Errorf("broker: resume: %w", err)
	}
	c.tel.halted(ctx, "resume")
	c.log.Info().Msg("intent store resumed")
	return nil
}

// haltTry is Halt's account of one open order.
type haltTry struct {
	order Order
	tries int   // cancels sent
	err   error // the last cancel's error
}

// haltSweep is Halt's progress: the open orders it has seen, in the
// order first seen, and the latest listing of the open ones.
type haltSweep struct {
	tries map[string]*haltTry
	ids   []string
	open  map[string]bool
}

// report says what became of each order seen: open in the latest
// listing, or canceled. An order that left the open states without an
// accepted cancel (it filled meanwhile) is in neither.
func (s *haltSweep) report() *HaltReport {
	rep := &HaltReport{}
	for _, id := range s.ids {
		t := s.tries[id]
		switch {
		case s.open[id] && t.tries == 0:
			rep.Open = append(rep.Open, CancelFailure{Order: t.order, Err: errors.New("not canceled: Halt stopped first")})
		case s.open[id] && t.err != nil:
			rep.Open = append(rep.Open, CancelFailure{Order: t.order, Err: t.err})
		case s.open[id]:
			rep.Open = append(rep.Open, CancelFailure{Order: t.order, Err: fmt.Errorf("the venue accepted its cancel, but it was still open %v after the last cancel", haltSettle)})
		case t.tries > 0 && t.err == nil:
			rep.Canceled = append(rep.Canceled, t.order)
		}
	}
	return rep
}

// cancelOpen cancels every open order of the account, as Halt says. It
// lists until none is open, and in any case until haltSettle after the
// halt and after its last cancel: a create another holder let through in
// the second before the halt reached it lands by then.
func (c *Client) cancelOpen(ctx context.Context) (*HaltReport, error) {
	s := &haltSweep{tries: map[string]*haltTry{}}
	settled := c.clock.Now().Add(haltSettle)
	for {
		open, err := c.openOrders(ctx)
		if err != nil {
			return s.report(), fmt.Errorf("broker: halt: the store is halted; listing the open orders: %w", err)
		}
		s.open = map[string]bool{}
		var todo []*haltTry
		for _, o := range open {
			if s.open[o.ID] {
				continue // listed in two states, as it moved between listings
			}
			s.open[o.ID] = true
			t := s.tries[o.ID]
			if t == nil {
				t = &haltTry{order: o}
				s.tries[o.ID] = t
				s.ids = append(s.ids, o.ID)
			}
			if t.tries == 0 || (t.err != nil && t.tries < haltCancelTries) {
				todo = append(todo, t)
			}
		}
		if len(todo) == 0 && !c.clock.Now().Before(settled) {
			return s.report(), nil
		}
		for _, t := range todo {
			t.tries++
			_, t.err = c.CancelOrder(ctx, t.order.ID)
			settled = c.clock.Now().Add(haltSettle)
			if ctx.Err() != nil {
				return s.report(), fmt.Errorf("broker: halt: the store is halted; canceling the open orders: %w", ctx.Err())
			}
		}
		if len(todo) == 0 {
			// Every open order has its cancel: wait for them to settle,
			// and for any create let through before the halt.
			select {
			case <-ctx.Done():
				return s.report(), fmt.Errorf("broker: halt: the store is halted; waiting for the cancels to settle: %w", ctx.Err())
			case <-c.clock.After(time.Second):
			}
		}
	}
}

// openOrders lists the account's orders in every open state, every page.
func (c *Client) openOrders(ctx context.Context) ([]Order, error) {
	var out []Order
	for _, st := range openStates {
		for o, err := range c.orders(ctx, OrderFilter{State: st}, callConfig{pageCap: haltPageCap}) {
			if err != nil {
				return nil, err
			}
			out = append(out, o)
		}
	}
	return out, nil
}

// haltPageCap bounds the pages of one open state Halt lists: 100,000
// orders at the venue's 100 a page.
const haltPageCap = 1000
