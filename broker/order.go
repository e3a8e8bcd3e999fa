package broker

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/shopspring/decimal"

	"github.com/tradewire/tradewire/internal/wire"
)

// Side is an order's side: SideBuy or SideSell. A side the venue sends
// that this package does not name is kept as sent.
type Side string

// Order sides.
const (
	SideBuy  Side = "buy"
	SideSell Side = "sell"
)

// OrderType is an order's type. A type the venue sends that this package
// does not name is kept as sent.
type OrderType string

// Order types.
const (
	TypeMarket    OrderType = "market"
	TypeLimit     OrderType = "limit"
	TypeStopLoss  OrderType = "stop_loss"
	TypeStopLimit OrderType = "stop_limit"
)

// OrderState is an order's state. The venue's documentation disagrees on
// which states exist, so a state this package does not name is kept as
// sent rather than refused.
type OrderState string

// Order states.
const (
	StateOpen            OrderState = "open"
	StatePending         OrderState = "pending"
	StatePartiallyFilled OrderState = "partially_filled"
	StateFilled          OrderState = "filled"
	StateCanceled        OrderState = "canceled"
	StateFailed          OrderState = "failed"
)

// Final reports whether the state can no longer change: filled, canceled
// or failed. Unknown states are not final.
func (s OrderState) Final() bool {
	return s == StateFilled || s == StateCanceled || s == StateFailed
}

// Order is an order as the venue reports it. Exactly one of the
// *OrderConfig fields is normally set, matching Type; all are kept as sent.
// State may be a value this package does not name: it is kept as sent.
type Order struct {
	ID                    string
	ClientOrderID         string
	AccountNumber         string
	Symbol                string
	Side                  Side
	Type                  OrderType
	State                 OrderState
	FilledAssetQuantity   decimal.Decimal
	Executions            []Execution
	AveragePrice          decimal.NullDecimal // not Valid until something fills
	CreatedAt             time.Time
	UpdatedAt             time.Time
	FeeCharged            decimal.Decimal // fees on the fills so far
	EstimatedFeeRemaining decimal.Decimal

	MarketOrderConfig    *OrderConfig
	LimitOrderConfig     *OrderConfig
	StopLossOrderConfig  *OrderConfig
	StopLimitOrderConfig *OrderConfig
}

// Config returns the order's <type>_order_config matching its Type, or the
// one present when Type is unknown; nil when there is none.
func (o *Order) Config() *OrderConfig {
	switch o.Type {
	case TypeMarket:
		return o.MarketOrderConfig
	case TypeLimit:
		return o.LimitOrderConfig
	case TypeStopLoss:
		return o.StopLossOrderConfig
	case TypeStopLimit:
		return o.StopLimitOrderConfig
	}
	for _, c := range []*OrderConfig{o.MarketOrderConfig, o.LimitOrderConfig, o.StopLossOrderConfig, o.StopLimitOrderConfig} {
		if c != nil {
			return c
		}
	}
	return nil
}

// FilledNotional returns the sum over executions of quantity × effective
// price: the quote-currency value filled so far.
func (o *Order) FilledNotional() decimal.Decimal {
	var n decimal.Decimal
	for _, e := range o.Executions {
		n = n.Add(e.Quantity.Mul(e.EffectivePrice))
	}
	return n
}

// OrderConfig is an order's sizing and prices. Fields the venue left out
// or sent as null are not Valid.
type OrderConfig struct {
	AssetQuantity decimal.NullDecimal
	QuoteAmount   decimal.NullDecimal
	LimitPrice    decimal.NullDecimal
	StopPrice     decimal.NullDecimal
	TimeInForce   string
}

// Execution is one fill of an order.
type Execution struct {
	EffectivePrice decimal.Decimal
	Quantity       decimal.Decimal
	Timestamp      time.Time
}

type wireOrderConfig struct {
	AssetQuantity wire.Decimal `json:"asset_quantity"`
	QuoteAmount   wire.Decimal `json:"quote_amount"`
	LimitPrice    wire.Decimal `json:"limit_price"`
	StopPrice     wire.Decimal `json:"stop_price"`
	TimeInForce   string       `json:"time_in_force"`
}

func (w *wireOrderConfig) config() *OrderConfig {
	if w == nil {
		return nil
	}
	return &OrderConfig{
		AssetQuantity: w.AssetQuantity.Null(),
		QuoteAmount:   w.QuoteAmount.Null(),
		LimitPrice:    w.LimitPrice.Null(),
		StopPrice:     w.StopPrice.Null(),
		TimeInForce:   w.TimeInForce,
	}
}

// wireOrder is the venue's order: money as strings or numbers, timestamps
// in RFC 3339 with offsets or nanoseconds, unknown fields ignored, unknown
// states kept. An order that contradicts itself does not decode (see
// checkJSON).
type wireOrder struct {
	ID                    string           `json:"id"`
	ClientOrderID         string           `json:"client_order_id"`
	AccountNumber         string           `json:"account_number"`
	Symbol                string           `json:"symbol"`
	Side                  Side             `json:"side"`
	Type                  OrderType        `json:"type"`
	State                 OrderState       `json:"state"`
	FilledAssetQuantity   wire.Decimal     `json:"filled_asset_quantity"`
	Executions            []wireExecution  `json:"executions"`
	AveragePrice          wire.Decimal     `json:"average_price"`
	CreatedAt             time.Time        `json:"created_at"`
	UpdatedAt             time.Time        `json:"updated_at"`
	FeeCharged            wire.Decimal     `json:"fee_charged"`
	EstimatedFeeRemaining wire.Decimal     `json:"estimated_fee_remaining"`
	Market                *wireOrderConfig `json:"market_order_config"`
	Limit                 *wireOrderConfig `json:"limit_order_config"`
	StopLoss              *wireOrderConfig `json:"stop_loss_order_config"`
	StopLimit             *wireOrderConfig `json:"stop_limit_order_config"`
}

// wireExecution is one fill in the venue's order.
type wireExecution struct {
	EffectivePrice wire.Decimal `json:"effective_price"`
	Quantity       wire.Decimal `json:"quantity"`
	Timestamp      time.Time    `json:"timestamp"`
}

// orderFields are the names wireOrder, its configs and its executions
// read.
var orderFields = map[string]bool{
	"id": true, "client_order_id": true, "account_number": true, "symbol": true, "side": true, "type": true,
	"state": true, "filled_asset_quantity": true, "executions": true, "average_price": true, "created_at": true,
	"updated_at": true, "fee_charged": true, "estimated_fee_remaining": true, "market_order_config": true,
	"limit_order_config": true, "stop_loss_order_config": true, "stop_limit_order_config": true,
	"asset_quantity": true, "quote_amount": true, "limit_price": true, "stop_price": true, "time_in_force": true,
	"effective_price": true, "quantity": true, "timestamp": true,
}

// checkJSON refuses an order that contradicts itself, decoded from raw
// into w: a key repeated within one object (at any depth), a key that
// differs only in case from a field it reads ("STATE", "ID"), or a
// negative quantity, amount or price. Such an order is unreadable, never
// a fact. (decodeOrder, which the placement engine reads, also refuses an
// order without an id or a state.)
func (w *wireOrder) checkJSON(raw []byte) error {
	if err := checkKeys(raw, orderFields); err != nil {
		return err
	}
	return w.check()
}

// check refuses the values no order can hold.
func (w *wireOrder) check() error {
	if err := notNegative("filled_asset_quantity", w.FilledAssetQuantity); err != nil {
		return err
	}
	if err := notNegative("average_price", w.AveragePrice); err != nil {
		return err
	}
	for _, c := range [...]*wireOrderConfig{w.Market, w.Limit, w.StopLoss, w.StopLimit} {
		if c == nil {
			continue
		}
		for _, err := range [...]error{notNegative("asset_quantity", c.AssetQuantity), notNegative("quote_amount", c.QuoteAmount),
			notNegative("limit_price", c.LimitPrice), notNegative("stop_price", c.StopPrice)} {
			if err != nil {
				return err
			}
		}
	}
	for _, e := range w.Executions {
		if err := notNegative("executions.quantity", e.Quantity); err != nil {
			return err
		}
		if err := notNegative("executions.effective_price", e.EffectivePrice); err != nil {
			return err
		}
	}
	return nil
}

// notNegative refuses a negative quantity, amount or price.
func notNegative(field string, d wire.Decimal) error {
	if v := d.Val(); v.IsNegative() {
		return fmt.Errorf("%s is negative (%s)", field, v)
	}
	return nil
}

func (w wireOrder) value() Order {
	o := Order{
		ID:                    w.ID,
		ClientOrderID:         w.ClientOrderID,
		AccountNumber:         w.AccountNumber,
		Symbol:                w.Symbol,
		Side:                  w.Side,
		Type:                  w.Type,
		State:                 w.State,
		FilledAssetQuantity:   w.FilledAssetQuantity.Val(),
		AveragePrice:          w.AveragePrice.Null(),
		CreatedAt:             w.CreatedAt,
		UpdatedAt:             w.UpdatedAt,
		FeeCharged:            w.FeeCharged.Val(),
		EstimatedFeeRemaining: w.EstimatedFeeRemaining.Val(),
		MarketOrderConfig:     w.Market.config(),
		LimitOrderConfig:      w.Limit.config(),
		StopLossOrderConfig:   w.StopLoss.config(),
		StopLimitOrderConfig:  w.StopLimit.config(),
	}
	if len(w.Executions) > 0 {
		o.Executions = make([]Execution, len(w.Executions))
		for i, e := range w.Executions {
			o.Executions[i] = Execution{EffectivePrice: e.EffectivePrice.Val(), Quantity: e.Quantity.Val(), Timestamp: e.Timestamp}
		}
	}
	return o
}

// TimeInForce is how long a limit, stop_loss or stop_limit order stays
// open; empty means TimeInForceGTC. Market orders take none. The venue's
// spec enumerates exactly these four; it says "the end of the day", "of
// the week" and "of the month" and names no time zone or week start.
type TimeInForce string

// The times in force the venue documents.
const (
	// TimeInForceGTC: good till canceled; open until it fills or is canceled.
	TimeInForceGTC TimeInForce = "gtc"
	// TimeInForceGFD: good for day; open until the end of the day.
	TimeInForceGFD TimeInForce = "gfd"
	// TimeInForceGFW: good for week; open until the end of the week.
	TimeInForceGFW TimeInForce = "gfw"
	// TimeInForceGFM: good for month; open until the end of the month.
	TimeInForceGFM TimeInForce = "gfm"
)

// OrderRequest is an order to preview or place: Symbol, Side, Type,
// exactly one of AssetQuantity and QuoteAmount (a zero value is "not
// given"), LimitPrice for limit and stop_limit orders, StopPrice for
// stop_loss and stop_limit orders, and TimeInForce (empty means gtc;
// market orders take none). The zero value is not a valid request.
// Preview and Place refuse the same requests (Validate), with an
// *ArgumentError naming the field, before anything is sent.
type OrderRequest struct {
	Symbol        string // such as "BTC-USD"
	Side          Side
	Type          OrderType
	AssetQuantity decimal.Decimal
	QuoteAmount   decimal.Decimal
	LimitPrice    decimal.Decimal // limit and stop_limit
	StopPrice     decimal.Decimal // stop_loss and stop_limit
	// TimeInForce applies to limit and stop orders; empty means gtc. It
	// goes out as <type>_order_config.time_in_force.
	TimeInForce TimeInForce
}

// Validate checks the request offline and returns the first problem as an
// *ArgumentError naming the venue's field ("symbol", "asset_quantity", …),
// which matches ErrInvalidRequest. It is the one offline check of an order:
// Preview and Place both call it. Every decimal has at most 18 decimal places and 20
// digits before the point (trailing zeros aside), so that the body holds
// it exactly in plain notation.
func (r OrderRequest) Validate() error {
	bad := func(field, format string, args ...any) error {
		return &ArgumentError{Field: field, Reason: fmt.Sprintf(format, args...)}
	}
	if !wire.ValidSymbol(r.Symbol) {
		return bad("symbol", "%q is not an upper-case pair such as BTC-USD", r.Symbol)
	}
	if r.Side != SideBuy && r.Side != SideSell {
		return bad("side", "%q: want buy or sell", r.Side)
	}
	for _, f := range []struct {
		field string
		d     decimal.Decimal
	}{{"asset_quantity", r.AssetQuantity}, {"quote_amount", r.QuoteAmount}, {"limit_price", r.LimitPrice}, {"stop_price", r.StopPrice}} {
		if err := wire.CheckAmount(f.field, f.d); err != nil {
			var ae *wire.AmountError
			errors.As(err, &ae)
			return bad(f.field, "%s", ae.Reason)
		}
	}
	hasQty, hasQuote := !r.AssetQuantity.IsZero(), !r.QuoteAmount.IsZero()
	switch {
	case hasQty && hasQuote:
		return bad("asset_quantity", "give exactly one of asset_quantity and quote_amount, not both")
	case !hasQty && !hasQuote:
		return bad("asset_quantity", "give exactly one of asset_quantity and quote_amount")
	case hasQty && !r.AssetQuantity.IsPositive():
		return bad("asset_quantity", "%s: must be positive", r.AssetQuantity)
	case hasQuote && !r.QuoteAmount.IsPositive():
		return bad("quote_amount", "%s: must be positive", r.QuoteAmount)
	}
	needLimit, needStop := false, false
	switch r.Type {
	case TypeMarket:
		if hasQuote {
			return bad("quote_amount", "market orders are sized only by asset_quantity")
		}
	case TypeLimit:
		needLimit = true
	case TypeStopLoss:
		needStop = true
	case TypeStopLimit:
		needLimit, needStop = true, true
	default:
		return bad("type", "%q: want market, limit, stop_loss or stop_limit", r.Type)
	}
	if err := price("limit_price", r.LimitPrice, needLimit, r.Type); err != nil {
		return err
	}
	if err := price("stop_price", r.StopPrice, needStop, r.Type); err != nil {
		return err
	}
	switch r.TimeInForce {
	case "", TimeInForceGTC, TimeInForceGFD, TimeInForceGFW, TimeInForceGFM:
	default:
		return bad("time_in_force", "%q: want gtc, gfd, gfw or gfm", wire.Clip(string(r.TimeInForce)))
	}
	if r.Type == TypeMarket && r.TimeInForce != "" {
		return bad("time_in_force", "market orders take no time_in_force")
	}
	return nil
}

func price(field string, d decimal.Decimal, need bool, typ OrderType) error {
	switch {
	case need && d.IsZero():
		return &ArgumentError{Field: field, Reason: fmt.Sprintf("%s orders need one", typ)}
	case !need && !d.IsZero():
		return &ArgumentError{Field: field, Reason: fmt.Sprintf("%s orders take none", typ)}
	case need && !d.IsPositive():
		return &ArgumentError{Field: field, Reason: fmt.Sprintf("%s: must be positive", d)}
	}
	return nil
}

// wireConfig is the <type>_order_config object, in a fixed field order.
type wireConfig struct {
	AssetQuantity string `json:"asset_quantity,omitempty"`
	QuoteAmount   string `json:"quote_amount,omitempty"`
	LimitPrice    string `json:"limit_price,omitempty"`
	StopPrice     string `json:"stop_price,omitempty"`
	TimeInForce   string `json:"time_in_force,omitempty"`
}

// plain writes a decimal as the venue wants it: fixed-point, never an
// exponent form.
func plain(d decimal.Decimal) string {
	if d.IsZero() {
		return ""
	}
	return d.String()
}

// body returns the create's JSON for clientOrderID: the same request always
// gives the same bytes. The request must be valid.
func (r OrderRequest) body(clientOrderID string) ([]byte, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	cfg := &wireConfig{
		AssetQuantity: plain(r.AssetQuantity),
		QuoteAmount:   plain(r.QuoteAmount),
		LimitPrice:    plain(r.LimitPrice),
		StopPrice:     plain(r.StopPrice),
	}
	if r.Type != TypeMarket {
		cfg.TimeInForce = string(TimeInForceGTC)
		if r.TimeInForce != "" {
			cfg.TimeInForce = string(r.TimeInForce)
		}
	}
	w := struct {
		ClientOrderID string      `json:"client_order_id"`
		Side          Side        `json:"side"`
		Type          OrderType   `json:"type"`
		Symbol        string      `json:"symbol"`
		Market        *wireConfig `json:"market_order_config,omitempty"`
		Limit         *wireConfig `json:"limit_order_config,omitempty"`
		StopLoss      *wireConfig `json:"stop_loss_order_config,omitempty"`
		StopLimit     *wireConfig `json:"stop_limit_order_config,omitempty"`
	}{ClientOrderID: clientOrderID, Side: r.Side, Type: r.Type, Symbol: r.Symbol}
	switch r.Type {
	case TypeMarket:
		w.Market = cfg
	case TypeLimit:
		w.Limit = cfg
	case TypeStopLoss:
		w.StopLoss = cfg
	case TypeStopLimit:
		w.StopLimit = cfg
	}
	return json.Marshal(w)
}
