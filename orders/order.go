package orders

import (
	"encoding/json"
	"time"

	"github.com/shopspring/decimal"

	"github.com/tradewire/tradewire/internal/wire"
)

// Side is an order's side: SideBuy or SideSell. A side the venue sends
// that this package does not know is kept as sent.
type Side string

// Order sides.
const (
	SideBuy  Side = "buy"
	SideSell Side = "sell"
)

// Type is an order's type. A type the venue sends that this package
// does not know is kept as sent.
type Type string

// Order types.
const (
	TypeMarket    Type = "market"
	TypeLimit     Type = "limit"
	TypeStopLoss  Type = "stop_loss"
	TypeStopLimit Type = "stop_limit"
)

// State is an order's state. The venue's documentation disagrees on
// which states exist, so a state this package does not know is kept as
// sent rather than refused.
type State string

// Order states.
const (
	StateOpen            State = "open"
	StatePending         State = "pending"
	StatePartiallyFilled State = "partially_filled"
	StateFilled          State = "filled"
	StateCanceled        State = "canceled"
	StateFailed          State = "failed"
)

// Final reports whether the state can no longer change: filled, canceled
// or failed. Unknown states are not final.
func (s State) Final() bool {
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
	Type                  Type
	State                 State
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

// UnmarshalJSON decodes the venue's order: money as strings or numbers,
// timestamps in RFC 3339 with offsets or nanoseconds, unknown fields
// ignored, unknown states kept.
func (o *Order) UnmarshalJSON(b []byte) error {
	var w struct {
		ID                  string       `json:"id"`
		ClientOrderID       string       `json:"client_order_id"`
		AccountNumber       string       `json:"account_number"`
		Symbol              string       `json:"symbol"`
		Side                Side         `json:"side"`
		Type                Type         `json:"type"`
		State               State        `json:"state"`
		FilledAssetQuantity wire.Decimal `json:"filled_asset_quantity"`
		Executions          []struct {
			EffectivePrice wire.Decimal `json:"effective_price"`
			Quantity       wire.Decimal `json:"quantity"`
			Timestamp      time.Time    `json:"timestamp"`
		} `json:"executions"`
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
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*o = Order{
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
	return nil
}
