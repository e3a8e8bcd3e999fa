package broker

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/shopspring/decimal"
)

// effectiveRatePlaces is the precision of FeeReport.EffectiveFeeRate.
const effectiveRatePlaces = 12

// FeeReport is what FeeSummary found: the fees the account paid on orders
// updated within the window, and what was filled for them.
//
// Fees and notional are per order as the venue reports it now: an order
// updated within the window counts with all its fees and fills, including
// fills from before the window started.
type FeeReport struct {
	// Start and End bound the window, on the venue's clock: Start is the
	// sweep's start minus the window, End when its last read began (see
	// FeeSummary).
	Start, End time.Time
	// FeeRatio and ThirtyDayVolume are the account's fee tier at the time.
	FeeRatio        decimal.Decimal
	ThirtyDayVolume decimal.Decimal
	// TotalFees is the sum of fee_charged over the orders counted.
	TotalFees decimal.Decimal
	// Orders is how many orders were counted, in every state.
	Orders int
	// FilledNotional is the sum over their executions of quantity ×
	// effective price.
	FilledNotional decimal.Decimal
	// EffectiveFeeRate is TotalFees / FilledNotional rounded to 12 places.
	// It is zero and EffectiveFeeRateDefined false when nothing filled.
	EffectiveFeeRate        decimal.Decimal
	EffectiveFeeRateDefined bool
	// BySymbol breaks the totals down per symbol, sorted by symbol.
	BySymbol []SymbolFees
	// Pages is how many pages of orders were read (the accounts read not
	// included).
	Pages int
	// Partial is true when the page cap stopped the sweep and the caller
	// allowed a partial result (AllowPartial): the totals are then too low.
	Partial bool
}

// SymbolFees is one symbol's share of a FeeReport.
type SymbolFees struct {
	Symbol         string
	Orders         int
	TotalFees      decimal.Decimal
	FilledNotional decimal.Decimal
}

// feeCatchUps caps the catch-up reads of a fee sweep: each reads the
// orders updated since the previous read began, and another follows only
// when it found an order new or changed.
const feeCatchUps = 3

// FeeSummary sums the fees paid on orders updated within window before
// now, exact as of the sweep's end even while the account trades: one
// fresh accounts read (fee_ratio, thirty_day_volume), then the sweep.
//
// The sweep fixes an instant T on the venue's clock (the transport's
// VenueNow, after the accounts read has measured it, less a margin of 5 s
// for the measurement's error) and reads every page
// of the orders created at or before T and updated since T − window, with
// no state filter (a partly filled, then canceled order still paid). That
// set does not change while it is read: orders are only ever added after T,
// and an order's updated_at only grows. Orders in a final state never
// change again; the sweep remembers only the others (and the few it saw
// updated after T), so memory stays bounded by the open orders, not by the
// history. It then reads the orders updated since T — those that changed,
// and those created, while it ran — and replaces each remembered order's
// contribution with its latest, adding the new ones (a row the venue sends
// though it was not updated since T is not counted twice). When that read
// found anything new or changed, which may have changed again while it
// ran, it reads once more, from that read's start, until a read finds
// nothing new, up to 3 times. Start is
// the venue's now at the sweep's start minus window; End is when the last
// catch-up read began: every order updated between them counts once, as it
// stood after End.
//
// This rests on the venue stamping updated_at whenever an order's fills,
// fees or state change, and never moving created_at. Each page is
// aggregated and dropped before the next is read; every request waits on
// the client's rate budget. Past the page cap (per read) the summary fails
// with a *PageCapError unless Paging.AllowPartial is given, in which case the
// report is marked Partial (and not caught up). Paging.OnProgress reports each
// page, pages and items counted across the reads; MaxPages sets the cap.
func (c *Client) FeeSummary(ctx context.Context, window time.Duration, opts ...Paging) (*FeeReport, error) {
	if window <= 0 {
		return nil, &ArgumentError{Field: "window", Value: window.String(), Reason: "must be positive"}
	}
	cc, err := c.callConfig(opts)
	if err != nil {
		return nil, err
	}
	acct, err := c.Account(ctx)
	if err != nil {
		return nil, err
	}
	t := newFeeTally()
	r, err := c.feeSweep(ctx, window, cc, t, feeCatchUps)
	if err != nil {
		return nil, err
	}
	r.FeeRatio, r.ThirtyDayVolume = acct.FeeTier.FeeRatio, acct.FeeTier.ThirtyDayVolume
	return r, nil
}

// feeSweep runs the sweep FeeSummary describes, with at most catchUps
// catch-up reads (0 leaves the totals as the first read saw them).
func (c *Client) feeSweep(ctx context.Context, window time.Duration, cc callConfig, t *feeTally, catchUps int) (*FeeReport, error) {
	now := c.venueInstant()
	at := now.Add(-feeClockMargin)
	r := &FeeReport{Start: now.Add(-window), End: now}
	progress, pages, items := cc.progress, 0, 0
	read := func(f OrderFilter, each func(Order)) error {
		basePages, baseItems := pages, items
		cc.progress = func(p Progress) {
			pages, items = basePages+p.Pages, baseItems+p.Items
			if progress != nil {
				progress(Progress{Pages: pages, Items: items})
			}
		}
		for o, err := range c.orders(ctx, f, cc) {
			if err != nil {
				var capErr *PageCapError
				if cc.allowPartial && errors.As(err, &capErr) {
					r.Partial = true
					return nil
				}
				return fmt.Errorf("broker: fee summary: %w", err)
			}
			each(o)
		}
		return nil
	}
	// The orders that existed at the instant, updated within the window.
	err := read(OrderFilter{UpdatedAtStart: r.Start, CreatedAtEnd: at}, func(o Order) {
		t.count(o, !o.State.Final() || !o.UpdatedAt.Before(at))
	})
	if err != nil {
		return nil, err
	}
	// Catch up with what changed, and what was created, since; a partial
	// report is short of orders anyway, and is left as read.
	from := at
	for range catchUps {
		if r.Partial {
			break
		}
		r.End = c.venueInstant()
		began := r.End.Add(-feeClockMargin)
		changed := false
		err := read(OrderFilter{UpdatedAtStart: from}, func(o Order) {
			if o.UpdatedAt.Before(from) && !t.remembers(o.ID) {
				return // not updated since from: counted already, as it is
			}
			changed = t.count(o, true) || changed
		})
		if err != nil {
			return nil, err
		}
		if !changed {
			break
		}
		from = began
	}
	r.Pages = pages
	t.report(r)
	return r, nil
}

// feeClockMargin is how far before the venue's now, as the client knows
// it, a sweep puts its instants: more than the error of the measured clock
// offset (the Date header is whole seconds), so that no order can change
// after an instant has passed on the venue but before the client's reading
// of it. An order updated within the margin is merely read once more.
const feeClockMargin = 5 * time.Second

// venueInstant is now on the venue's clock, to the microsecond the order
// filters are sent with, so that bounds meeting at it leave no gap.
func (c *Client) venueInstant() time.Time {
	return c.tc.VenueNow().UTC().Truncate(time.Microsecond)
}

// feeShare is one order's contribution to a FeeReport, as of its
// updated_at.
type feeShare struct {
	symbol         string
	fees, notional decimal.Decimal
	updated        time.Time
}

// feeTally sums the orders of a fee sweep. It remembers only the orders
// whose contribution may still be replaced.
type feeTally struct {
	orders         int
	fees, notional decimal.Decimal
	bySymbol       map[string]*SymbolFees
	live           map[string]feeShare // by order id
	maxLive        int                 // the most remembered at once
}

func newFeeTally() *feeTally {
	return &feeTally{bySymbol: make(map[string]*SymbolFees), live: make(map[string]feeShare)}
}

// count adds o, or replaces its earlier contribution when it is
// remembered; remember keeps it replaceable. It reports whether o is new
// to the tally or changed since it was counted.
func (t *feeTally) count(o Order, remember bool) (changed bool) {
	sh := feeShare{symbol: o.Symbol, fees: o.FeeCharged, notional: o.FilledNotional(), updated: o.UpdatedAt}
	old, ok := t.live[o.ID]
	changed = !ok || !old.updated.Equal(sh.updated) || !old.fees.Equal(sh.fees) || !old.notional.Equal(sh.notional)
	if ok {
		t.add(old, -1)
		t.orders--
	}
	t.add(sh, 1)
	t.orders++
	if remember {
		t.live[o.ID] = sh
		t.maxLive = max(t.maxLive, len(t.live))
	} else {
		delete(t.live, o.ID)
	}
	return changed
}

// remembers reports whether the order with id is counted and replaceable.
func (t *feeTally) remembers(id string) bool {
	_, ok := t.live[id]
	return ok
}

func (t *feeTally) add(sh feeShare, sign int) {
	fees, notional := sh.fees, sh.notional
	if sign < 0 {
		fees, notional = fees.Neg(), notional.Neg()
	}
	t.fees, t.notional = t.fees.Add(fees), t.notional.Add(notional)
	s := t.bySymbol[sh.symbol]
	if s == nil {
		s = &SymbolFees{Symbol: sh.symbol}
		t.bySymbol[sh.symbol] = s
	}
	s.Orders += sign
	s.TotalFees, s.FilledNotional = s.TotalFees.Add(fees), s.FilledNotional.Add(notional)
}

// report writes the totals into r.
func (t *feeTally) report(r *FeeReport) {
	r.Orders, r.TotalFees, r.FilledNotional = t.orders, t.fees, t.notional
	if r.FilledNotional.IsPositive() {
		r.EffectiveFeeRate = r.TotalFees.DivRound(r.FilledNotional, effectiveRatePlaces)
		r.EffectiveFeeRateDefined = true
	}
	r.BySymbol = make([]SymbolFees, 0, len(t.bySymbol))
	for _, s := range t.bySymbol {
		if s.Orders > 0 {
			r.BySymbol = append(r.BySymbol, *s)
		}
	}
	sort.Slice(r.BySymbol, func(i, j int) bool { return r.BySymbol[i].Symbol < r.BySymbol[j].Symbol })
}
