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
	// Start and End bound the window: End is the clock's reading when the
	// summary began, Start is End minus the window.
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

// FeeSummary sums the fees paid on orders updated within window before
// now: one fresh accounts read (fee_ratio, thirty_day_volume), then every
// page of orders with updated_at_start = now − window and no state filter
// (a partly filled, then canceled order still paid). The clock is read
// once, for both the window and the report.
//
// Each page is aggregated and dropped before the next is read, so memory
// stays flat however long the sweep; every request waits on the client's
// rate budget. Past the page cap the summary fails with a *PageCapError
// unless AllowPartial is given, in which case the report is marked
// Partial. OnProgress reports each page; MaxPages sets the cap.
func (c *Client) FeeSummary(ctx context.Context, window time.Duration, opts ...CallOption) (*FeeReport, error) {
	if window <= 0 {
		return nil, &ArgumentError{Field: "window", Value: window.String(), Reason: "must be positive"}
	}
	cc, err := c.callConfig(opts)
	if err != nil {
		return nil, err
	}
	now := c.clock.Now()
	r := &FeeReport{Start: now.Add(-window), End: now}

	acct, err := c.Account(ctx)
	if err != nil {
		return nil, err
	}
	r.FeeRatio, r.ThirtyDayVolume = acct.FeeTier.FeeRatio, acct.FeeTier.ThirtyDayVolume

	progress := cc.progress
	cc.progress = func(p Progress) {
		r.Pages = p.Pages
		if progress != nil {
			progress(p)
		}
	}
	bySymbol := make(map[string]*SymbolFees)
	for o, err := range c.orders(ctx, OrderFilter{UpdatedAtStart: r.Start}, cc) {
		if err != nil {
			var capErr *PageCapError
			if cc.allowPartial && errors.As(err, &capErr) {
				r.Partial = true
				break
			}
			return nil, fmt.Errorf("broker: fee summary: %w", err)
		}
		notional := o.FilledNotional()
		r.Orders++
		r.TotalFees = r.TotalFees.Add(o.FeeCharged)
		r.FilledNotional = r.FilledNotional.Add(notional)
		s := bySymbol[o.Symbol]
		if s == nil {
			s = &SymbolFees{Symbol: o.Symbol}
			bySymbol[o.Symbol] = s
		}
		s.Orders++
		s.TotalFees = s.TotalFees.Add(o.FeeCharged)
		s.FilledNotional = s.FilledNotional.Add(notional)
	}
	if r.FilledNotional.IsPositive() {
		r.EffectiveFeeRate = r.TotalFees.DivRound(r.FilledNotional, effectiveRatePlaces)
		r.EffectiveFeeRateDefined = true
	}
	r.BySymbol = make([]SymbolFees, 0, len(bySymbol))
	for _, s := range bySymbol {
		r.BySymbol = append(r.BySymbol, *s)
	}
	sort.Slice(r.BySymbol, func(i, j int) bool { return r.BySymbol[i].Symbol < r.BySymbol[j].Symbol })
	return r, nil
}
