package broker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/shopspring/decimal"

	"github.com/tradewire/tradewire/internal/wire"
)

// The codes of a Violation (Violation.Code): which rule a previewed order
// breaks.
const (
	violationBelowMinimum   = "below_min_order_amount"
	violationAboveMaximum   = "above_max_order_size"
	violationNotMultiple    = "not_a_multiple_of_increment"
	violationNotTradable    = "pair_not_tradable" // status not "tradable"; a "sellonly" pair takes sells
	violationNotAPITradable = "pair_not_api_tradable"
)

// Violation is one rule a previewed order breaks. It is an error, so a
// caller may return it as one.
type Violation struct {
	// Field is the field at fault in the venue's spelling, such as
	// "limit_order_config.asset_quantity", or "symbol".
	Field string
	// Code names the rule: "below_min_order_amount",
	// "above_max_order_size", "not_a_multiple_of_increment",
	// "pair_not_tradable" (the pair's status is not "tradable"; a
	// "sellonly" pair takes sells) or "pair_not_api_tradable"; or, for a
	// limit of Config.Limits the order breaks, the limit's name as a
	// *LimitError gives it ("max_order_notional", …).
	Code string
	// Limit is the bound or increment broken (zero when none applies).
	Limit  decimal.Decimal
	Detail string
}

// Error describes the broken rule.
func (v Violation) Error() string {
	return fmt.Sprintf("%s: %s: %s", v.Field, v.Code, v.Detail)
}

// Preview is an estimate of what an order would cost or fetch, and every
// trading-pair rule it would break. The venue has no preview endpoint: it
// is built from the trading pair and the venue's estimated price, which can
// move before the order is placed. Estimate is therefore always true.
//
// Preview never changes the request: it reports Violations and may offer
// SuggestedQuantity, the requested quantity rounded down to the asset
// increment (and to the maximum order size) when that is valid.
type Preview struct {
	// Estimate is always true: every number here is an estimate.
	Estimate bool
	Request  OrderRequest
	Pair     TradingPair
	// AssetQuantity is the requested quantity, or for a QuoteAmount order
	// the quantity it buys or sells at Price, rounded down to the asset
	// increment.
	AssetQuantity decimal.Decimal
	// MarketPrice is the venue's estimated price: the ask for a buy, the
	// bid for a sell.
	MarketPrice decimal.Decimal
	// Price is the price the estimate uses: LimitPrice for limit and
	// stop_limit orders, MarketPrice otherwise.
	Price decimal.Decimal
	// Notional is AssetQuantity × Price, or the QuoteAmount.
	Notional decimal.Decimal
	FeeRatio decimal.Decimal
	// Fee is Notional × FeeRatio.
	Fee decimal.Decimal
	// Total is the cost of a buy (Notional + Fee) or the credit of a sell
	// (Notional − Fee).
	Total             decimal.Decimal
	Violations        []Violation
	SuggestedQuantity decimal.NullDecimal
	// EstimatedAt is the venue's timestamp on the estimate.
	EstimatedAt time.Time
}

// OK reports whether the preview found no violation.
func (p *Preview) OK() bool { return len(p.Violations) == 0 }

// Preview estimates an order and lists every rule it breaks, without
// placing it. It reads the trading pair (cached per symbol), for a
// QuoteAmount market order the best bid/ask, and the venue's estimated
// price for the quantity (ask for a buy, bid for a sell; for a quantity
// above the pair's max_order_size, which the venue refuses to estimate,
// the price of max_order_size). A request Place
// would refuse offline (checkOrder: bad symbol, side, type or time in
// force; no size, two sizes, a price the type does not take or lacks, a
// value that is not positive or has more than 18 decimal places or 20
// digits before the point) is refused with an *ArgumentError before
// anything is sent; the trading pair's rules are Violations, and so are
// the Client's Limits (Config.Limits) that Place would refuse it for,
// judged at the estimate's price for a market order and, for the
// account's limits, counted as Place counts them (reading the intent
// store, and the open orders for MaxOpenOrders).
func (c *Client) Preview(ctx context.Context, req OrderRequest) (*Preview, error) {
	if err := checkOrder(req); err != nil {
		return nil, err
	}
	p := &Preview{Estimate: true, Request: req}
	violate := func(field string, code string, limit decimal.Decimal, detail string, args ...any) {
		p.Violations = append(p.Violations, Violation{Field: field, Code: code, Limit: limit, Detail: fmt.Sprintf(detail, args...)})
	}
	hasLimit := req.Type == TypeLimit || req.Type == TypeStopLimit
	byQuote := !req.QuoteAmount.IsZero()

	pair, err := c.tradingPair(ctx, req.Symbol)
	if err != nil {
		return nil, err
	}
	p.Pair = pair
	// A sell-only pair takes sells; any other status but tradable takes nothing.
	if pair.Status != "tradable" && (pair.Status != "sellonly" || req.Side != SideSell) {
		violate("symbol", violationNotTradable, decimal.Zero, "%s is %q, not tradable for a %s", pair.Symbol, pair.Status, req.Side)
	}
	if !pair.IsAPITradable {
		violate("symbol", violationNotAPITradable, decimal.Zero, "%s cannot be traded through the API", pair.Symbol)
	}
	bookSide := PriceAsk
	if req.Side == SideSell {
		bookSide = PriceBid
	}

	// The asset quantity to estimate: as asked, or converted from the
	// quote amount at the limit price or the top of the book.
	qty := req.AssetQuantity
	if byQuote {
		ref := req.LimitPrice
		if !hasLimit || ref.IsZero() {
			quotes, err := c.BestBidAsk(ctx, req.Symbol)
			if err != nil {
				return nil, err
			}
			if len(quotes) == 0 {
				return nil, fmt.Errorf("broker: preview: the venue sent no best bid/ask for %s", req.Symbol)
			}
			ref = quotes[0].Ask
			if req.Side == SideSell {
				ref = quotes[0].Bid
			}
		}
		if !ref.IsPositive() {
			return nil, fmt.Errorf("broker: preview: no positive %s price for %s to convert quote_amount", bookSide, req.Symbol)
		}
		qty = floorTo(req.QuoteAmount.DivRound(ref, 24), pair.AssetIncrement)
	}
	estQty := qty
	if !estQty.IsPositive() {
		estQty = pair.AssetIncrement // price the smallest lot; the size is reported below
	}
	if pair.MaxOrderSize.IsPositive() && estQty.GreaterThan(pair.MaxOrderSize) {
		// The venue estimates no size above the maximum: price the largest
		// lot; the size is reported below.
		estQty = pair.MaxOrderSize
	}
	if !estQty.IsPositive() {
		return nil, fmt.Errorf("broker: preview: %s has no positive asset_increment", req.Symbol)
	}
	rows, err := c.EstimatedPrice(ctx, req.Symbol, bookSide, estQty)
	if err != nil {
		return nil, err
	}
	var est *PriceEstimate
	for i := range rows {
		if rows[i].Side == bookSide {
			est = &rows[i]
			break
		}
	}
	if est == nil {
		return nil, fmt.Errorf("broker: preview: the venue sent no %s estimate for %s", bookSide, req.Symbol)
	}
	market, ok := est.Price()
	if !ok {
		return nil, fmt.Errorf("broker: preview: the venue's %s estimate for %s has no price", bookSide, req.Symbol)
	}
	p.AssetQuantity, p.MarketPrice, p.Price = qty, market, market
	p.FeeRatio, p.EstimatedAt = est.FeeRatio, est.Timestamp
	if hasLimit && req.LimitPrice.IsPositive() {
		p.Price = req.LimitPrice
	}
	if byQuote {
		p.Notional = req.QuoteAmount
	} else {
		p.Notional = qty.Mul(p.Price)
	}
	p.Fee = p.Notional.Mul(p.FeeRatio)
	if req.Side == SideSell {
		p.Total = p.Notional.Sub(p.Fee)
	} else {
		p.Total = p.Notional.Add(p.Fee)
	}

	sizeField := sizeFieldOf(req)
	p.Violations = append(p.Violations, pairRules(pair, req)...)
	if byQuote {
		if !qty.IsPositive() {
			violate(sizeField, violationBelowMinimum, pair.AssetIncrement, "%s buys less than one asset increment (%s) at %s", req.QuoteAmount, pair.AssetIncrement, p.Price)
		}
		if pair.MaxOrderSize.IsPositive() && qty.GreaterThan(pair.MaxOrderSize) {
			violate(sizeField, violationAboveMaximum, pair.MaxOrderSize, "%s %s is above the maximum order size %s", qty, pair.AssetCode, pair.MaxOrderSize)
		}
	}
	if pair.MinOrderAmount.Valid && p.Notional.LessThan(pair.MinOrderAmount.Decimal) {
		violate(sizeField, violationBelowMinimum, pair.MinOrderAmount.Decimal, "%s %s is below the minimum order amount %s", p.Notional, pair.QuoteCode, pair.MinOrderAmount.Decimal)
	}

	if err := c.previewLimits(ctx, p); err != nil {
		return nil, err
	}

	if !byQuote {
		s := qty
		if pair.MaxOrderSize.IsPositive() && s.GreaterThan(pair.MaxOrderSize) {
			s = pair.MaxOrderSize
		}
		s = floorTo(s, pair.AssetIncrement)
		minOK := !pair.MinOrderAmount.Valid || !s.Mul(p.Price).LessThan(pair.MinOrderAmount.Decimal)
		if !s.Equal(qty) && s.IsPositive() && minOK {
			p.SuggestedQuantity = decimal.NullDecimal{Decimal: s, Valid: true}
		}
	}
	return p, nil
}

// sizeFieldOf is the field that carries req's size.
func sizeFieldOf(req OrderRequest) string {
	if !req.QuoteAmount.IsZero() {
		return string(req.Type) + "_order_config.quote_amount"
	}
	return string(req.Type) + "_order_config.asset_quantity"
}

// pairRules are the rules of its trading pair that req breaks and that
// need no price to judge: its size and prices not multiples of the pair's
// increments, and an asset quantity above the maximum order size. Place
// refuses them before anything is sent, as Preview reports them.
func pairRules(pair TradingPair, req OrderRequest) []Violation {
	var vs []Violation
	cfg := string(req.Type) + "_order_config."
	notMultiple := func(field string, v, inc decimal.Decimal) {
		if !v.IsZero() && inc.IsPositive() && !v.Mod(inc).IsZero() {
			vs = append(vs, Violation{Field: field, Code: violationNotMultiple, Limit: inc, Detail: fmt.Sprintf("%s is not a multiple of %s", v, inc)})
		}
	}
	if req.QuoteAmount.IsZero() {
		notMultiple(sizeFieldOf(req), req.AssetQuantity, pair.AssetIncrement)
	} else {
		notMultiple(sizeFieldOf(req), req.QuoteAmount, pair.QuoteIncrement)
	}
	notMultiple(cfg+"limit_price", req.LimitPrice, pair.QuoteIncrement)
	notMultiple(cfg+"stop_price", req.StopPrice, pair.QuoteIncrement)
	if q := req.AssetQuantity; pair.MaxOrderSize.IsPositive() && q.GreaterThan(pair.MaxOrderSize) {
		vs = append(vs, Violation{Field: sizeFieldOf(req), Code: violationAboveMaximum, Limit: pair.MaxOrderSize,
			Detail: fmt.Sprintf("%s %s is above the maximum order size %s", q, pair.AssetCode, pair.MaxOrderSize)})
	}
	return vs
}

// floorTo rounds a non-negative v down to a multiple of inc (v itself when
// inc is not positive).
func floorTo(v, inc decimal.Decimal) decimal.Decimal {
	if !inc.IsPositive() {
		return v
	}
	n, _ := v.QuoRem(inc, 0)
	return n.Mul(inc)
}

// checkOrder is the one offline check of an order request, for Preview
// and Place alike.
func checkOrder(req OrderRequest) error { return req.Validate() }

// amountError refuses a decimal outside wire.CheckAmount's bounds as an
// *ArgumentError, with no more of its value than wire.Clip keeps.
func amountError(field string, d decimal.Decimal) error {
	err := wire.CheckAmount(field, d)
	var ae *wire.AmountError
	if !errors.As(err, &ae) {
		return nil
	}
	return &ArgumentError{Field: field, Reason: ae.Reason}
}
