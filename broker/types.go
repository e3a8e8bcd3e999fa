package broker

import (
	"time"

	"github.com/shopspring/decimal"

	"github.com/tradewire/tradewire/internal/wire"
)

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

// wireAccount is the venue's account, money as strings or numbers.
type wireAccount struct {
	AccountNumber       string       `json:"account_number"`
	Status              string       `json:"status"`
	BuyingPower         wire.Decimal `json:"buying_power"`
	BuyingPowerCurrency string       `json:"buying_power_currency"`
	AccountType         string       `json:"account_type"`
	IsAPITradable       bool         `json:"is_api_tradable"`
	FeeTier             struct {
		FeeRatio             wire.Decimal `json:"fee_ratio"`
		ThirtyDayVolume      wire.Decimal `json:"thirty_day_volume"`
		NextFeeTierRatio     wire.Decimal `json:"next_fee_tier_ratio"`
		NextFeeTierThreshold wire.Decimal `json:"next_fee_tier_threshold"`
	} `json:"fee_tier_status"`
}

func (w wireAccount) value() Account {
	return Account{
		AccountNumber:       w.AccountNumber,
		Status:              w.Status,
		BuyingPower:         w.BuyingPower.Val(),
		BuyingPowerCurrency: w.BuyingPowerCurrency,
		AccountType:         w.AccountType,
		IsAPITradable:       w.IsAPITradable,
		FeeTier: FeeTier{
			FeeRatio:             w.FeeTier.FeeRatio.Val(),
			ThirtyDayVolume:      w.FeeTier.ThirtyDayVolume.Val(),
			NextFeeTierRatio:     w.FeeTier.NextFeeTierRatio.Null(),
			NextFeeTierThreshold: w.FeeTier.NextFeeTierThreshold.Null(),
		},
	}
}

// Holding is one asset held in the account.
type Holding struct {
	AccountNumber               string
	AssetCode                   string
	TotalQuantity               decimal.Decimal
	QuantityAvailableForTrading decimal.Decimal
}

// wireHolding is the venue's holding.
type wireHolding struct {
	AccountNumber               string       `json:"account_number"`
	AssetCode                   string       `json:"asset_code"`
	TotalQuantity               wire.Decimal `json:"total_quantity"`
	QuantityAvailableForTrading wire.Decimal `json:"quantity_available_for_trading"`
}

func (w wireHolding) value() Holding {
	return Holding{
		AccountNumber:               w.AccountNumber,
		AssetCode:                   w.AssetCode,
		TotalQuantity:               w.TotalQuantity.Val(),
		QuantityAvailableForTrading: w.QuantityAvailableForTrading.Val(),
	}
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

// wireTradingPair is the venue's trading pair.
type wireTradingPair struct {
	Symbol         string       `json:"symbol"`
	AssetCode      string       `json:"asset_code"`
	QuoteCode      string       `json:"quote_code"`
	AssetIncrement wire.Decimal `json:"asset_increment"`
	QuoteIncrement wire.Decimal `json:"quote_increment"`
	MaxOrderSize   wire.Decimal `json:"max_order_size"`
	MinOrderAmount wire.Decimal `json:"min_order_amount"`
	Status         string       `json:"status"`
	IsAPITradable  bool         `json:"is_api_tradable"`
}

func (w wireTradingPair) value() TradingPair {
	return TradingPair{
		Symbol:         w.Symbol,
		AssetCode:      w.AssetCode,
		QuoteCode:      w.QuoteCode,
		AssetIncrement: w.AssetIncrement.Val(),
		QuoteIncrement: w.QuoteIncrement.Val(),
		MaxOrderSize:   w.MaxOrderSize.Val(),
		MinOrderAmount: w.MinOrderAmount.Null(),
		Status:         w.Status,
		IsAPITradable:  w.IsAPITradable,
	}
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

// wireQuote is the venue's best bid/ask row.
type wireQuote struct {
	Symbol    string       `json:"symbol"`
	Timestamp time.Time    `json:"timestamp"`
	Bid       wire.Decimal `json:"bid"`
	Ask       wire.Decimal `json:"ask"`
}

func (w wireQuote) value() Quote {
	return Quote{Symbol: w.Symbol, Timestamp: w.Timestamp, Bid: w.Bid.Val(), Ask: w.Ask.Val()}
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

// wirePriceEstimate is the venue's estimated price row.
type wirePriceEstimate struct {
	Symbol       string       `json:"symbol"`
	Side         PriceSide    `json:"side"`
	Quantity     wire.Decimal `json:"quantity"`
	Timestamp    time.Time    `json:"timestamp"`
	FeeRatio     wire.Decimal `json:"fee_ratio"`
	EstFee       wire.Decimal `json:"est_fee"`
	Ask          wire.Decimal `json:"ask"`
	Bid          wire.Decimal `json:"bid"`
	EstTotalCost wire.Decimal `json:"est_total_cost"`
}

func (w wirePriceEstimate) value() PriceEstimate {
	return PriceEstimate{
		Symbol:       w.Symbol,
		Side:         w.Side,
		Quantity:     w.Quantity.Val(),
		Timestamp:    w.Timestamp,
		FeeRatio:     w.FeeRatio.Val(),
		EstFee:       w.EstFee.Val(),
		Ask:          w.Ask.Null(),
		Bid:          w.Bid.Null(),
		EstTotalCost: w.EstTotalCost.Null(),
	}
}
