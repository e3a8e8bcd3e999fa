package cli

import (
	"strconv"
	"strings"

	"github.com/shopspring/decimal"
	"github.com/spf13/pflag"

	"github.com/tradewire/tradewire/broker"
	"github.com/tradewire/tradewire/internal/wire"
)

// The risk-limit flags and their variables (broker.Limits); "order place"
// and "preview" apply them.
const (
	flagMaxOrderNotional = "max-order-notional"
	flagMaxOrderQuantity = "max-order-quantity"
	flagMaxDailyNotional = "max-daily-notional"
	flagMaxOpenOrders    = "max-open-orders"
	flagSymbols          = "symbols"

	envMaxOrderNotional = "TRADEWIRE_MAX_ORDER_NOTIONAL"
	envMaxOrderQuantity = "TRADEWIRE_MAX_ORDER_QUANTITY"
	envMaxDailyNotional = "TRADEWIRE_MAX_DAILY_NOTIONAL"
	envMaxOpenOrders    = "TRADEWIRE_MAX_OPEN_ORDERS"
	envSymbols          = "TRADEWIRE_SYMBOLS"
)

// limitFlags holds the risk-limit flags as parsed; resolve them with
// app.limits.
type limitFlags struct {
	maxOrderNotional, maxOrderQuantity, maxDailyNotional, maxOpenOrders, symbols string
}

func (a *app) addLimitFlags(fs *pflag.FlagSet) {
	l := &a.limitFlags
	fs.StringVar(&l.maxOrderNotional, flagMaxOrderNotional, "", "refuse an order worth more than this in the quote currency, at its limit or stop price or the market's estimate (env "+envMaxOrderNotional+")")
	fs.StringVar(&l.maxOrderQuantity, flagMaxOrderQuantity, "", "refuse an order of more than this asset quantity (env "+envMaxOrderQuantity+")")
	fs.StringVar(&l.maxDailyNotional, flagMaxDailyNotional, "", "refuse an order that takes the notional of the account's orders in 24 hours, counted in the intent store, above this (env "+envMaxDailyNotional+")")
	fs.StringVar(&l.maxOpenOrders, flagMaxOpenOrders, "", "refuse an order that takes the account's open orders above this many (env "+envMaxOpenOrders+")")
	fs.StringVar(&l.symbols, flagSymbols, "", "comma-separated symbols orders may be for, such as BTC-USD,ETH-USD; empty: any (env "+envSymbols+")")
}

// limits resolves the risk-limit flags and variables. A value that is not
// a decimal, a whole number or a list of symbols is a *usageError naming
// its flag or variable; an empty one is no limit.
func (a *app) limits() (broker.Limits, error) {
	var l broker.Limits
	var err error
	if l.MaxOrderNotional, err = a.decimalLimit(flagMaxOrderNotional, envMaxOrderNotional); err != nil {
		return l, err
	}
	if l.MaxOrderQuantity, err = a.decimalLimit(flagMaxOrderQuantity, envMaxOrderQuantity); err != nil {
		return l, err
	}
	if l.MaxDailyNotional, err = a.decimalLimit(flagMaxDailyNotional, envMaxDailyNotional); err != nil {
		return l, err
	}
	if text, source := a.setting(flagMaxOpenOrders, envMaxOpenOrders); strings.TrimSpace(text) != "" {
		n, err := strconv.Atoi(strings.TrimSpace(text))
		if err != nil || n < 0 {
			return l, usagef("%s %q: want a whole number of orders, 0 or more (0: no limit; nothing was sent)", source, wire.Clip(text))
		}
		l.MaxOpenOrders = n
	}
	if text, source := a.setting(flagSymbols, envSymbols); strings.TrimSpace(text) != "" {
		for _, s := range strings.Split(text, ",") {
			s = strings.ToUpper(strings.TrimSpace(s))
			if !wire.ValidSymbol(s) {
				return l, usagef("%s: %q is not a pair such as BTC-USD (nothing was sent)", source, wire.Clip(s))
			}
			l.Symbols = append(l.Symbols, s)
		}
	}
	return l, nil
}

// decimalLimit resolves one decimal limit: a positive amount, or 0 or
// empty for none.
func (a *app) decimalLimit(flag, env string) (decimal.Decimal, error) {
	text, source := a.setting(flag, env)
	if strings.TrimSpace(text) == "" {
		return decimal.Decimal{}, nil
	}
	d, err := wire.ParseAmount(source, strings.TrimSpace(text))
	if err != nil || d.IsNegative() {
		return decimal.Decimal{}, usagef("%s %q: want a decimal amount such as 250.00, 0 or more (0: no limit; nothing was sent)", source, wire.Clip(text))
	}
	return d, nil
}
