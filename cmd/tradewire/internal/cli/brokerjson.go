package cli

import (
	"reflect"
	"time"

	"github.com/shopspring/decimal"

	"github.com/tradewire/tradewire/broker"
)

// The functions in this file give broker's read types the shape
// tradewire prints them in (tradewire -o json): snake_case names, every
// decimal as a JSON string holding its exact value (never a float, never
// an exponent), a decimal the venue left out as null, and times in UTC,
// RFC 3339 with as many fractional digits as they have ("" for the zero
// time). Where the venue's field names are the ones a reader wants
// (Holding, TradingPair, Quote) they use them; Account, PriceEstimate,
// Order, FeeReport and Preview write a flatter shape, documented on each.
// This is an output shape: package broker decodes the venue's answers
// itself.

// jsonShape returns v, a report's JSON value, in its printed shape when
// it is one of the broker read types in printShapes, a non-nil pointer to
// one, or a slice of them (never nil); any other value as it is.
func jsonShape(v any) any {
	rv := reflect.ValueOf(v)
	if !rv.IsValid() {
		return v
	}
	if f, ok := printShapes[rv.Type()]; ok {
		return f(v)
	}
	switch rv.Kind() {
	case reflect.Pointer:
		if f, ok := printShapes[rv.Type().Elem()]; ok && !rv.IsNil() {
			return f(rv.Elem().Interface())
		}
	case reflect.Slice:
		if f, ok := printShapes[rv.Type().Elem()]; ok {
			out := make([]any, rv.Len())
			for i := range out {
				out[i] = f(rv.Index(i).Interface())
			}
			return out
		}
	}
	return v
}

// printShapes maps each broker read type to the function giving its
// printed shape.
var printShapes = map[reflect.Type]func(any) any{
	reflect.TypeFor[broker.Account]():       shapeOf(accountJSON),
	reflect.TypeFor[broker.Holding]():       shapeOf(holdingJSON),
	reflect.TypeFor[broker.TradingPair]():   shapeOf(tradingPairJSON),
	reflect.TypeFor[broker.Quote]():         shapeOf(quoteJSON),
	reflect.TypeFor[broker.PriceEstimate](): shapeOf(priceEstimateJSON),
	reflect.TypeFor[broker.FeeReport]():     shapeOf(feeReportJSON),
	reflect.TypeFor[broker.Preview]():       shapeOf(previewJSON),
	reflect.TypeFor[broker.Order]():         shapeOf(orderJSON),
}

// shapeOf is f taking its argument as an any holding a T.
func shapeOf[T any](f func(T) any) func(any) any {
	return func(v any) any { return f(v.(T)) }
}

// each is f of every item, in order; never nil.
func each[T any](items []T, f func(T) any) []any {
	out := make([]any, 0, len(items))
	for _, it := range items {
		out = append(out, f(it))
	}
	return out
}

// effectiveRatePlaces is how many places an effective fee rate is rounded
// to, as broker.FeeReport's.
const effectiveRatePlaces = 12

// jsonDec is a decimal as exact text.
func jsonDec(d decimal.Decimal) string { return d.String() }

// jsonNull is an optional decimal: nil (null) when not Valid.
func jsonNull(n decimal.NullDecimal) *string {
	if !n.Valid {
		return nil
	}
	s := jsonDec(n.Decimal)
	return &s
}

// jsonGiven is a value that may not have been given: nil (null) when zero.
func jsonGiven(d decimal.Decimal) *string {
	return jsonNull(decimal.NullDecimal{Decimal: d, Valid: !d.IsZero()})
}

// jsonTime is a time in UTC, RFC 3339 with its fractional digits; "" for
// the zero time.
func jsonTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// The JSON of the account with its fee tier flattened into it:
// account_number, status, account_type, is_api_tradable, buying_power,
// buying_power_currency, fee_ratio, thirty_day_volume, and
// next_fee_tier_ratio and next_fee_tier_threshold (null in the top tier).
// (The venue nests the fee tier in fee_tier_status.)
func accountJSON(a broker.Account) any {
	return struct {
		AccountNumber        string  `json:"account_number"`
		Status               string  `json:"status"`
		AccountType          string  `json:"account_type"`
		IsAPITradable        bool    `json:"is_api_tradable"`
		BuyingPower          string  `json:"buying_power"`
		BuyingPowerCurrency  string  `json:"buying_power_currency"`
		FeeRatio             string  `json:"fee_ratio"`
		ThirtyDayVolume      string  `json:"thirty_day_volume"`
		NextFeeTierRatio     *string `json:"next_fee_tier_ratio"`
		NextFeeTierThreshold *string `json:"next_fee_tier_threshold"`
	}{
		a.AccountNumber, a.Status, a.AccountType, a.IsAPITradable, jsonDec(a.BuyingPower), a.BuyingPowerCurrency,
		jsonDec(a.FeeTier.FeeRatio), jsonDec(a.FeeTier.ThirtyDayVolume),
		jsonNull(a.FeeTier.NextFeeTierRatio), jsonNull(a.FeeTier.NextFeeTierThreshold),
	}
}

// The JSON of the holding in the venue's shape.
func holdingJSON(h broker.Holding) any {
	return struct {
		AssetCode                   string `json:"asset_code"`
		TotalQuantity               string `json:"total_quantity"`
		QuantityAvailableForTrading string `json:"quantity_available_for_trading"`
		AccountNumber               string `json:"account_number"`
	}{h.AssetCode, jsonDec(h.TotalQuantity), jsonDec(h.QuantityAvailableForTrading), h.AccountNumber}
}

// The JSON of the trading pair in the venue's shape;
// min_order_amount is null when the venue sent none.
func tradingPairJSON(p broker.TradingPair) any {
	return struct {
		Symbol         string  `json:"symbol"`
		AssetCode      string  `json:"asset_code"`
		QuoteCode      string  `json:"quote_code"`
		AssetIncrement string  `json:"asset_increment"`
		QuoteIncrement string  `json:"quote_increment"`
		MinOrderAmount *string `json:"min_order_amount"`
		MaxOrderSize   string  `json:"max_order_size"`
		Status         string  `json:"status"`
		IsAPITradable  bool    `json:"is_api_tradable"`
	}{
		p.Symbol, p.AssetCode, p.QuoteCode, jsonDec(p.AssetIncrement), jsonDec(p.QuoteIncrement),
		jsonNull(p.MinOrderAmount), jsonDec(p.MaxOrderSize), p.Status, p.IsAPITradable,
	}
}

// The JSON of the quote in the venue's shape, bid and ask exactly
// as sent, plus crossed (bid above ask).
func quoteJSON(q broker.Quote) any {
	return struct {
		Symbol    string `json:"symbol"`
		Bid       string `json:"bid"`
		Ask       string `json:"ask"`
		Crossed   bool   `json:"crossed"`
		Timestamp string `json:"timestamp"`
	}{q.Symbol, jsonDec(q.Bid), jsonDec(q.Ask), q.Crossed(), jsonTime(q.Timestamp)}
}

// The JSON of the estimate with its one price (see Price) in
// place of the venue's ask and bid: symbol, side, quantity, price (null
// when the venue sent neither), fee_ratio, est_fee, est_total_cost (null
// on bid rows) and timestamp.
func priceEstimateJSON(e broker.PriceEstimate) any {
	price, ok := e.Price()
	return struct {
		Symbol       string  `json:"symbol"`
		Side         string  `json:"side"`
		Quantity     string  `json:"quantity"`
		Price        *string `json:"price"`
		FeeRatio     string  `json:"fee_ratio"`
		EstFee       string  `json:"est_fee"`
		EstTotalCost *string `json:"est_total_cost"`
		Timestamp    string  `json:"timestamp"`
	}{
		e.Symbol, string(e.Side), jsonDec(e.Quantity), jsonNull(decimal.NullDecimal{Decimal: price, Valid: ok}),
		jsonDec(e.FeeRatio), jsonDec(e.EstFee), jsonNull(e.EstTotalCost), jsonTime(e.Timestamp),
	}
}

// effectiveFeeRate is the symbol's fees / filled notional rounded to 12
// places, as FeeReport's; nil when nothing filled.
func effectiveFeeRate(s broker.SymbolFees) *string {
	if !s.FilledNotional.IsPositive() {
		return nil
	}
	r := jsonDec(s.TotalFees.DivRound(s.FilledNotional, effectiveRatePlaces))
	return &r
}

// The JSON of the symbol's share with its effective fee rate
// (null when nothing filled).
func symbolFeesJSON(s broker.SymbolFees) any {
	return struct {
		Symbol           string  `json:"symbol"`
		Orders           int     `json:"orders"`
		TotalFees        string  `json:"total_fees"`
		FilledNotional   string  `json:"filled_notional"`
		EffectiveFeeRate *string `json:"effective_fee_rate"`
	}{s.Symbol, s.Orders, jsonDec(s.TotalFees), jsonDec(s.FilledNotional), effectiveFeeRate(s)}
}

// The JSON of the report flat: partial, window_start, window_end,
// fee_ratio, thirty_day_volume, total_fees, orders, filled_notional,
// effective_fee_rate (null when nothing filled), pages, requests (the
// accounts read plus the pages: what the summary cost in rate budget) and
// by_symbol.
func feeReportJSON(r broker.FeeReport) any {
	bySymbol := each(r.BySymbol, symbolFeesJSON)
	return struct {
		Partial          bool    `json:"partial"`
		WindowStart      string  `json:"window_start"`
		WindowEnd        string  `json:"window_end"`
		FeeRatio         string  `json:"fee_ratio"`
		ThirtyDayVolume  string  `json:"thirty_day_volume"`
		TotalFees        string  `json:"total_fees"`
		Orders           int     `json:"orders"`
		FilledNotional   string  `json:"filled_notional"`
		EffectiveFeeRate *string `json:"effective_fee_rate"`
		Pages            int     `json:"pages"`
		Requests         int     `json:"requests"`
		BySymbol         []any   `json:"by_symbol"`
	}{
		r.Partial, jsonTime(r.Start), jsonTime(r.End), jsonDec(r.FeeRatio), jsonDec(r.ThirtyDayVolume),
		jsonDec(r.TotalFees), r.Orders, jsonDec(r.FilledNotional),
		jsonNull(decimal.NullDecimal{Decimal: r.EffectiveFeeRate, Valid: r.EffectiveFeeRateDefined}),
		r.Pages, 1 + r.Pages, bySymbol,
	}
}

// The JSON of the violation: field, code, limit (null when none
// applies) and detail.
func violationJSON(v broker.Violation) any {
	return struct {
		Field  string  `json:"field"`
		Code   string  `json:"code"`
		Limit  *string `json:"limit"`
		Detail string  `json:"detail"`
	}{v.Field, string(v.Code), jsonGiven(v.Limit), v.Detail}
}

// termsJSON is an order's size and prices as a preview and an order print
// them, each null when the request or the order's config has none.
type termsJSON struct {
	AssetQuantity *string `json:"asset_quantity"`
	QuoteAmount   *string `json:"quote_amount"`
	LimitPrice    *string `json:"limit_price"`
	StopPrice     *string `json:"stop_price"`
}

// The JSON of the preview flat: estimate (always true), valid (no
// violation), the request as given (symbol, side, type, and
// asset_quantity, quote_amount, limit_price, stop_price, null when not
// given), the estimate (estimated_asset_quantity, market_price, price,
// notional, fee_ratio, fee, total), suggested_quantity (null when none),
// violations and estimated_at. The trading pair is left out: tradewire
// pairs prints it.
func previewJSON(p broker.Preview) any {
	violations := each(p.Violations, violationJSON)
	return struct {
		Estimate bool   `json:"estimate"`
		Valid    bool   `json:"valid"`
		Symbol   string `json:"symbol"`
		Side     string `json:"side"`
		Type     string `json:"type"`
		termsJSON
		EstimatedAssetQuantity string  `json:"estimated_asset_quantity"`
		MarketPrice            string  `json:"market_price"`
		Price                  string  `json:"price"`
		Notional               string  `json:"notional"`
		FeeRatio               string  `json:"fee_ratio"`
		Fee                    string  `json:"fee"`
		Total                  string  `json:"total"`
		SuggestedQuantity      *string `json:"suggested_quantity"`
		Violations             []any   `json:"violations"`
		EstimatedAt            string  `json:"estimated_at"`
	}{
		true, p.OK(), p.Request.Symbol, string(p.Request.Side), string(p.Request.Type),
		termsJSON{jsonGiven(p.Request.AssetQuantity), jsonGiven(p.Request.QuoteAmount),
			jsonGiven(p.Request.LimitPrice), jsonGiven(p.Request.StopPrice)},
		jsonDec(p.AssetQuantity), jsonDec(p.MarketPrice), jsonDec(p.Price), jsonDec(p.Notional),
		jsonDec(p.FeeRatio), jsonDec(p.Fee), jsonDec(p.Total), jsonNull(p.SuggestedQuantity),
		violations, jsonTime(p.EstimatedAt),
	}
}

// The JSON of the order with its <type>_order_config flattened into
// it: id, client_order_id, symbol, side, type, state, asset_quantity,
// quote_amount, limit_price, stop_price, time_in_force (null or "" when
// the config has none), filled_asset_quantity, average_price (null until
// something fills), filled_notional, fee_charged,
// estimated_fee_remaining, created_at, updated_at, account_number and
// executions. It is not the venue's shape.
func orderJSON(o broker.Order) any {
	type execution struct {
		EffectivePrice string `json:"effective_price"`
		Quantity       string `json:"quantity"`
		Timestamp      string `json:"timestamp"`
	}
	v := struct {
		ID            string `json:"id"`
		ClientOrderID string `json:"client_order_id"`
		Symbol        string `json:"symbol"`
		Side          string `json:"side"`
		Type          string `json:"type"`
		State         string `json:"state"`
		termsJSON
		TimeInForce           string      `json:"time_in_force"`
		FilledAssetQuantity   string      `json:"filled_asset_quantity"`
		AveragePrice          *string     `json:"average_price"`
		FilledNotional        string      `json:"filled_notional"`
		FeeCharged            string      `json:"fee_charged"`
		EstimatedFeeRemaining string      `json:"estimated_fee_remaining"`
		CreatedAt             string      `json:"created_at"`
		UpdatedAt             string      `json:"updated_at"`
		AccountNumber         string      `json:"account_number"`
		Executions            []execution `json:"executions"`
	}{
		ID: o.ID, ClientOrderID: o.ClientOrderID, Symbol: o.Symbol, Side: string(o.Side), Type: string(o.Type), State: string(o.State),
		FilledAssetQuantity: jsonDec(o.FilledAssetQuantity), AveragePrice: jsonNull(o.AveragePrice), FilledNotional: jsonDec(o.FilledNotional()),
		FeeCharged: jsonDec(o.FeeCharged), EstimatedFeeRemaining: jsonDec(o.EstimatedFeeRemaining),
		CreatedAt: jsonTime(o.CreatedAt), UpdatedAt: jsonTime(o.UpdatedAt), AccountNumber: o.AccountNumber,
		Executions: make([]execution, 0, len(o.Executions)),
	}
	if cfg := o.Config(); cfg != nil {
		v.termsJSON = termsJSON{jsonNull(cfg.AssetQuantity), jsonNull(cfg.QuoteAmount), jsonNull(cfg.LimitPrice), jsonNull(cfg.StopPrice)}
		v.TimeInForce = cfg.TimeInForce
	}
	for _, e := range o.Executions {
		v.Executions = append(v.Executions, execution{jsonDec(e.EffectivePrice), jsonDec(e.Quantity), jsonTime(e.Timestamp)})
	}
	return v
}
