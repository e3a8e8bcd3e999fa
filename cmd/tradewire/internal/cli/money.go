package cli

import (
	"context"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/tradewire/tradewire/broker"
)

// money renders amounts of a quote currency (prices, fees, notionals,
// buying power) for the table output, rounded half away from zero to the
// trading pair's quote increment: a person reads cents, not the venue's
// sixteen digits. JSON and CSV print every digit and never go through
// here. The zero money (no pairs known) renders every amount exactly.
type money struct {
	pairs map[string]broker.TradingPair // by symbol
}

// money reads the trading pairs of symbols, for the table output only:
// one request, on top of the command's own. When the read fails the
// amounts are printed exactly instead, and the command does not fail for
// it.
func (q *readQuery) money(ctx context.Context, symbols ...string) money {
	if !q.table() || len(symbols) == 0 {
		return money{}
	}
	return q.readPairs(ctx, symbols)
}

// currencyMoney is money for amounts named by currency, not symbol (an
// account's buying power): it reads every trading pair.
func (q *readQuery) currencyMoney(ctx context.Context) money {
	if !q.table() {
		return money{}
	}
	return q.readPairs(ctx, nil)
}

func (q *readQuery) readPairs(ctx context.Context, symbols []string) money {
	m := money{pairs: map[string]broker.TradingPair{}}
	for p, err := range q.c.TradingPairs(ctx, symbols) {
		if err != nil {
			return money{}
		}
		m.pairs[p.Symbol] = p
	}
	return m
}

// cell renders d, an amount of symbol's quote currency.
func (m money) cell(symbol string, d decimal.Decimal) string {
	p, ok := m.pairs[symbol]
	if !ok {
		return dec(d)
	}
	return roundToIncrement(d, p.QuoteIncrement)
}

// nullCell renders an optional amount: empty when it is not Valid.
func (m money) nullCell(symbol string, n decimal.NullDecimal) string {
	if !n.Valid {
		return ""
	}
	return m.cell(symbol, n.Decimal)
}

// totalCell renders a total over symbols: when every one of them is
// known and they share one quote currency, rounded to the coarsest of
// their quote increments (a USD total over BTC-USD at 0.01 and DOGE-USD
// at 0.000001 shows cents); exactly otherwise.
func (m money) totalCell(d decimal.Decimal, symbols ...string) string {
	var currency string
	var inc decimal.Decimal
	for i, s := range symbols {
		p, ok := m.pairs[s]
		switch {
		case !ok, i > 0 && p.QuoteCode != currency:
			return dec(d)
		case i == 0 || p.QuoteIncrement.GreaterThan(inc):
			currency, inc = p.QuoteCode, p.QuoteIncrement
		}
	}
	if len(symbols) == 0 {
		return dec(d)
	}
	return roundToIncrement(d, inc)
}

// currencyCell renders an amount of currency: rounded to the coarsest
// quote increment of the pairs quoted in it, exactly when there are none.
func (m money) currencyCell(currency string, d decimal.Decimal) string {
	var symbols []string
	for s, p := range m.pairs {
		if p.QuoteCode == currency {
			symbols = append(symbols, s)
		}
	}
	return m.totalCell(d, symbols...)
}

// roundToIncrement rounds d half away from zero to a multiple of inc
// and prints it with inc's decimal places (0.01: two). A zero or negative
// increment leaves d exact.
func roundToIncrement(d, inc decimal.Decimal) string {
	if !inc.IsPositive() {
		return dec(d)
	}
	places := int32(0)
	if s := inc.String(); strings.Contains(s, ".") {
		places = int32(len(s) - strings.IndexByte(s, '.') - 1)
	}
	return d.DivRound(inc, 0).Mul(inc).StringFixed(places)
}
