package broker

import (
	"context"
	"fmt"
	"iter"
	"net/url"
	"strings"
	"sync"

	"github.com/shopspring/decimal"
)

// maxEstimateQuantities is how many quantities one EstimatedPrice call may
// ask about: the venue's limit.
const maxEstimateQuantities = 10

// TradingPairs lists trading pairs, optionally only the given symbols,
// fetching pages lazily as the loop asks for items. Collect reads them all.
func (c *Client) TradingPairs(ctx context.Context, symbols []string, opts ...Paging) iter.Seq2[TradingPair, error] {
	cc, err := c.listConfig(opts)
	if err != nil {
		return errSeq[TradingPair](err)
	}
	for _, s := range symbols {
		if err := checkSymbol("symbol", s); err != nil {
			return errSeq[TradingPair](err)
		}
	}
	target := pathTradingPairs
	if len(symbols) > 0 {
		target += "?" + url.Values{"symbol": append([]string(nil), symbols...)}.Encode()
	}
	return paginate[wireTradingPair](ctx, c, cc, constTarget(target))
}

// BestBidAsk returns the best bid and ask for each symbol (all symbols when
// none are given), exactly as the venue sends them: a crossed book is not
// corrected.
func (c *Client) BestBidAsk(ctx context.Context, symbols ...string) ([]Quote, error) {
	for _, s := range symbols {
		if err := checkSymbol("symbol", s); err != nil {
			return nil, err
		}
	}
	target := pathBestBidAsk
	if len(symbols) > 0 {
		target += "?" + url.Values{"symbol": symbols}.Encode()
	}
	var p page[wireQuote]
	if err := c.getJSON(ctx, target, &p); err != nil {
		return nil, err
	}
	return values(p.Results), nil
}

// EstimatedPrice asks the venue what the given asset quantities of symbol
// would cost (side ask), fetch (side bid), or both, fees included. It
// takes 1 to maxEstimateQuantities positive quantities; anything else is
// refused with an *ArgumentError before anything is sent.
func (c *Client) EstimatedPrice(ctx context.Context, symbol string, side PriceSide, quantities ...decimal.Decimal) ([]PriceEstimate, error) {
	if err := checkSymbol("symbol", symbol); err != nil {
		return nil, err
	}
	switch side {
	case PriceBid, PriceAsk, PriceBoth:
	default:
		return nil, &ArgumentError{Field: "side", Value: string(side), Reason: "must be bid, ask or both"}
	}
	switch n := len(quantities); {
	case n == 0:
		return nil, &ArgumentError{Field: "quantity", Reason: "at least one quantity is required"}
	case n > maxEstimateQuantities:
		return nil, &ArgumentError{Field: "quantity", Value: fmt.Sprint(n), Reason: fmt.Sprintf("at most %d quantities per call", maxEstimateQuantities)}
	}
	qs := make([]string, len(quantities))
	for i, q := range quantities {
		if err := amountError("quantity", q); err != nil {
			return nil, err
		}
		if !q.IsPositive() {
			return nil, &ArgumentError{Field: "quantity", Value: q.String(), Reason: "must be positive"}
		}
		qs[i] = q.String() // never an exponent form
	}
	// Fixed order; the comma list goes raw, as the venue reads it.
	target := pathEstimatedPrice + "?symbol=" + url.QueryEscape(symbol) + "&side=" + string(side) + "&quantity=" + strings.Join(qs, ",")
	var p page[wirePriceEstimate]
	if err := c.getJSON(ctx, target, &p); err != nil {
		return nil, err
	}
	return values(p.Results), nil
}

// pairCache holds trading pairs by symbol for Preview. Pair rules change
// rarely; a client that must see a change is rebuilt.
type pairCache struct {
	mu    sync.Mutex
	pairs map[string]TradingPair
}

func (p *pairCache) get(symbol string) (TradingPair, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	tp, ok := p.pairs[symbol]
	return tp, ok
}

func (p *pairCache) put(tp TradingPair) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pairs == nil {
		p.pairs = make(map[string]TradingPair)
	}
	p.pairs[tp.Symbol] = tp
}

// tradingPair returns symbol's pair, from the cache or one read.
// Concurrent first readers may each send a read; the answers agree.
func (c *Client) tradingPair(ctx context.Context, symbol string) (TradingPair, error) {
	if tp, ok := c.pairs.get(symbol); ok {
		return tp, nil
	}
	for tp, err := range c.TradingPairs(ctx, []string{symbol}) {
		if err != nil {
			return TradingPair{}, err
		}
		if tp.Symbol == symbol {
			c.pairs.put(tp)
			return tp, nil
		}
	}
	return TradingPair{}, fmt.Errorf("broker: %w: %s", ErrUnknownSymbol, symbol)
}
