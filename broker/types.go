package broker

import (
	"encoding/json"
	"time"

	"github.com/shopspring/decimal"
)

// Side is an order's side: SideBuy or SideSell. A side the venue sends
// that this package does not know is kept as sent.
type Side string

// Order sides.
const (
	SideBuy  Side = "buy"
	SideSell Side = "sell"
)

// OrderType is an order's type. A type the venue sends that this package
// does not know is kept as sent.
type OrderType string

// Order types.
const (
	TypeMarket    OrderType = "market"
	TypeLimit     OrderType = "limit"
	TypeStopLoss  OrderType = "stop_loss"
	TypeStopLimit OrderType = "stop_limit"
)

// OrderState is an order's state. The venue's documentation disagrees on
// which states exist, so a state this package does not know is kept as
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

// PriceSide is the side of the book an estimate is for: PriceBid (what a
// sell receives), PriceAsk (what a buy pays) or PriceBoth.
type PriceSide string

// Sides of the book for EstimatedPrice.
const (
	PriceBid  PriceSide = "bid"
	PriceAsk  PriceSide = "ask"
	PriceBoth PriceSide = "both"
)

// Account is one trading account as the v2 accounts list reports it.
type Account struct {
	AccountNumber       string
	Status              string // "active", …: kept as sent
	BuyingPower         decimal.Decimal
	BuyingPowerCurrency string
	AccountType         string
	IsAPITradable       bool
	FeeTier             FeeTier
}

// FeeTier is an account's fee_tier_status. The next-tier fields are not
// Valid when the venue sends null (the account is in the top tier).
type FeeTier struct {
	FeeRatio             decimal.Decimal
	ThirtyDayVolume      decimal.Decimal
	NextFeeTierRatio     decimal.NullDecimal
	NextFeeTierThreshold decimal.NullDecimal
}

// UnmarshalJSON decodes the venue's account, money as strings or numbers.
func (a *Account) UnmarshalJSON(b []byte) error {
	var w struct {
		AccountNumber       string `json:"account_number"`
		Status              string `json:"status"`
		BuyingPower         dec    `json:"buying_power"`
		BuyingPowerCurrency string `json:"buying_power_currency"`
		AccountType         string `json:"account_type"`
		IsAPITradable       bool   `json:"is_api_tradable"`
		FeeTier             struct {
			FeeRatio             dec `json:"fee_ratio"`
			ThirtyDayVolume      dec `json:"thirty_day_volume"`
			NextFeeTierRatio     dec `json:"next_fee_tier_ratio"`
			NextFeeTierThreshold dec `json:"next_fee_tier_threshold"`
		} `json:"fee_tier_status"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*a = Account{
		AccountNumber:       w.AccountNumber,
		Status:              w.Status,
		BuyingPower:         w.BuyingPower.val(),
		BuyingPowerCurrency: w.BuyingPowerCurrency,
		AccountType:         w.AccountType,
		IsAPITradable:       w.IsAPITradable,
		FeeTier: FeeTier{
			FeeRatio:             w.FeeTier.FeeRatio.val(),
			ThirtyDayVolume:      w.FeeTier.ThirtyDayVolume.val(),
			NextFeeTierRatio:     w.FeeTier.NextFeeTierRatio.null(),
			NextFeeTierThreshold: w.FeeTier.NextFeeTierThreshold.null(),
		},
	}
	return nil
}

// Holding is one asset held in the account.
type Holding struct {
	AccountNumber               string
	AssetCode                   string
	TotalQuantity               decimal.Decimal
	QuantityAvailableForTrading decimal.Decimal
}

// UnmarshalJSON decodes the venue's holding.
func (h *Holding) UnmarshalJSON(b []byte) error {
	var w struct {
		AccountNumber               string `json:"account_number"`
		AssetCode                   string `json:"asset_code"`
		TotalQuantity               dec    `json:"total_quantity"`
		QuantityAvailableForTrading dec    `json:"quantity_available_for_trading"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*h = Holding{
		AccountNumber:               w.AccountNumber,
		AssetCode:                   w.AssetCode,
		TotalQuantity:               w.TotalQuantity.val(),
		QuantityAvailableForTrading: w.QuantityAvailableForTrading.val(),
	}
	return nil
}

// TradingPair is a symbol's trading rules. MinOrderAmount, in the quote
// currency, is not Valid when the venue sends none.
type TradingPair struct {
	Symbol         string
	AssetCode      string
	QuoteCode      string
	AssetIncrement decimal.Decimal
	QuoteIncrement decimal.Decimal
	MaxOrderSize   decimal.Decimal
	MinOrderAmount decimal.NullDecimal
	Status         string // "tradable", …: kept as sent
	IsAPITradable  bool
}

// UnmarshalJSON decodes the venue's trading pair.
func (p *TradingPair) UnmarshalJSON(b []byte) error {
	var w struct {
		Symbol         string `json:"symbol"`
		AssetCode      string `json:"asset_code"`
		QuoteCode      string `json:"quote_code"`
		AssetIncrement dec    `json:"asset_increment"`
		QuoteIncrement dec    `json:"quote_increment"`
		MaxOrderSize   dec    `json:"max_order_size"`
		MinOrderAmount dec    `json:"min_order_amount"`
		Status         string `json:"status"`
		IsAPITradable  bool   `json:"is_api_tradable"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*p = TradingPair{
		Symbol:         w.Symbol,
		AssetCode:      w.AssetCode,
		QuoteCode:      w.QuoteCode,
		AssetIncrement: w.AssetIncrement.val(),
		QuoteIncrement: w.QuoteIncrement.val(),
		MaxOrderSize:   w.MaxOrderSize.val(),
		MinOrderAmount: w.MinOrderAmount.null(),
		Status:         w.Status,
		IsAPITradable:  w.IsAPITradable,
	}
	return nil
}

// Quote is a symbol's best bid and ask. The venue has been seen to send a
// crossed book (bid above ask); it is returned exactly as sent.
type Quote struct {
	Symbol    string
	Timestamp time.Time
	Bid       decimal.Decimal
	Ask       decimal.Decimal
}

// Crossed reports whether the bid is above the ask.
func (q Quote) Crossed() bool { return q.Bid.GreaterThan(q.Ask) }

// UnmarshalJSON decodes the venue's best bid/ask row.
func (q *Quote) UnmarshalJSON(b []byte) error {
	var w struct {
		Symbol    string    `json:"symbol"`
		Timestamp time.Time `json:"timestamp"`
		Bid       dec       `json:"bid"`
		Ask       dec       `json:"ask"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*q = Quote{Symbol: w.Symbol, Timestamp: w.Timestamp, Bid: w.Bid.val(), Ask: w.Ask.val()}
	return nil
}

// PriceEstimate is one row of the venue's estimated price: what Quantity
// would cost (Side ask) or fetch (Side bid), with the fee. Ask and
// EstTotalCost are Valid on ask rows, Bid on bid rows.
type PriceEstimate struct {
	Symbol       string
	Side         PriceSide
	Quantity     decimal.Decimal
	Timestamp    time.Time
	FeeRatio     decimal.Decimal
	EstFee       decimal.Decimal
	Ask          decimal.NullDecimal
	Bid          decimal.NullDecimal
	EstTotalCost decimal.NullDecimal
}

// Price returns the row's price: the ask on an ask row, the bid on a bid
// row, and false when the venue sent neither.
func (e PriceEstimate) Price() (decimal.Decimal, bool) {
	switch {
	case e.Side == PriceAsk && e.Ask.Valid:
		return e.Ask.Decimal, true
	case e.Side == PriceBid && e.Bid.Valid:
		return e.Bid.Decimal, true
	case e.Ask.Valid:
		return e.Ask.Decimal, true
	case e.Bid.Valid:
		return e.Bid.Decimal, true
	}
	return decimal.Decimal{}, false
}

// UnmarshalJSON decodes the venue's estimated price row.
func (e *PriceEstimate) UnmarshalJSON(b []byte) error {
	var w struct {
		Symbol       string    `json:"symbol"`
		Side         PriceSide `json:"side"`
		Quantity     dec       `json:"quantity"`
		Timestamp    time.Time `json:"timestamp"`
		FeeRatio     dec       `json:"fee_ratio"`
		EstFee       dec       `json:"est_fee"`
		Ask          dec       `json:"ask"`
		Bid          dec       `json:"bid"`
		EstTotalCost dec       `json:"est_total_cost"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*e = PriceEstimate{
		Symbol:       w.Symbol,
		Side:         w.Side,
		Quantity:     w.Quantity.val(),
		Timestamp:    w.Timestamp,
		FeeRatio:     w.FeeRatio.val(),
		EstFee:       w.EstFee.val(),
		Ask:          w.Ask.null(),
		Bid:          w.Bid.null(),
		EstTotalCost: w.EstTotalCost.null(),
	}
	return nil
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
	AssetQuantity dec    `json:"asset_quantity"`
	QuoteAmount   dec    `json:"quote_amount"`
	LimitPrice    dec    `json:"limit_price"`
	StopPrice     dec    `json:"stop_price"`
	TimeInForce   string `json:"time_in_force"`
}

func (w *wireOrderConfig) config() *OrderConfig {
	if w == nil {
		return nil
	}
	return &OrderConfig{
		AssetQuantity: w.AssetQuantity.null(),
		QuoteAmount:   w.QuoteAmount.null(),
		LimitPrice:    w.LimitPrice.null(),
		StopPrice:     w.StopPrice.null(),
		TimeInForce:   w.TimeInForce,
	}
}

// UnmarshalJSON decodes the venue's order: money as strings or numbers,
// timestamps in RFC 3339 with offsets or nanoseconds, unknown fields
// ignored, unknown states kept.
func (o *Order) UnmarshalJSON(b []byte) error {
	var w struct {
		ID                  string     `json:"id"`
		ClientOrderID       string     `json:"client_order_id"`
		AccountNumber       string     `json:"account_number"`
		Symbol              string     `json:"symbol"`
		Side                Side       `json:"side"`
		Type                OrderType  `json:"type"`
		State               OrderState `json:"state"`
		FilledAssetQuantity dec        `json:"filled_asset_quantity"`
		Executions          []struct {
			EffectivePrice dec       `json:"effective_price"`
			Quantity       dec       `json:"quantity"`
			Timestamp      time.Time `json:"timestamp"`
		} `json:"executions"`
		AveragePrice          dec              `json:"average_price"`
		CreatedAt             time.Time        `json:"created_at"`
		UpdatedAt             time.Time        `json:"updated_at"`
		FeeCharged            dec              `json:"fee_charged"`
		EstimatedFeeRemaining dec              `json:"estimated_fee_remaining"`
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
		FilledAssetQuantity:   w.FilledAssetQuantity.val(),
		AveragePrice:          w.AveragePrice.null(),
		CreatedAt:             w.CreatedAt,
		UpdatedAt:             w.UpdatedAt,
		FeeCharged:            w.FeeCharged.val(),
		EstimatedFeeRemaining: w.EstimatedFeeRemaining.val(),
		MarketOrderConfig:     w.Market.config(),
		LimitOrderConfig:      w.Limit.config(),
		StopLossOrderConfig:   w.StopLoss.config(),
		StopLimitOrderConfig:  w.StopLimit.config(),
	}
	if len(w.Executions) > 0 {
		o.Executions = make([]Execution, len(w.Executions))
		for i, e := range w.Executions {
			o.Executions[i] = Execution{EffectivePrice: e.EffectivePrice.val(), Quantity: e.Quantity.val(), Timestamp: e.Timestamp}
		}
	}
	return nil
}
