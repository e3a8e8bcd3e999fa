package broker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/shopspring/decimal"

	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/internal/wire"
	"github.com/tradewire/tradewire/orders"
)

// Limits are risk limits Place refuses an order for, and Preview reports,
// before anything is sent (see the package documentation, # Limits). The
// zero value of each field is no limit; the zero Limits checks nothing.
// A refused order is a *LimitError.
type Limits struct {
	// MaxOrderNotional caps one order's value in the quote currency: its
	// quote_amount, or its asset_quantity at its limit price (limit,
	// stop_limit), its stop price (stop_loss) or, for a market order, the
	// venue's estimated price for that quantity (read fresh, one request).
	// Zero: no limit.
	MaxOrderNotional decimal.Decimal
	// MaxOrderQuantity caps one order's asset quantity: its
	// asset_quantity, or its quote_amount at its limit or stop price.
	// Zero: no limit.
	MaxOrderQuantity decimal.Decimal
	// MaxDailyNotional caps the notional (as MaxOrderNotional values it)
	// of the account's orders sent in any 24 hours, this one included,
	// counted from the intent store: every intent pending, unknown or
	// acknowledged whose latest send (or, never sent, its latest write)
	// is less than 24 hours old on the Client's clock, by the notional
	// recorded with it. An intent recorded with no limit set carries no
	// notional and counts as zero, so give every Client sharing a store
	// the same Limits. Zero: no limit.
	MaxDailyNotional decimal.Decimal
	// MaxOpenOrders caps the account's open orders, this one included:
	// the orders the venue listed as open, pending or partially filled
	// when the Client last read them (three reads of the orders list,
	// every page, at most every 30 seconds on the Client's clock), and the
	// intents of the store that may have become orders since — pending or
	// unknown, or acknowledged since 30 seconds before that read (the
	// list can lag). So an order that fills or is cancelled frees its
	// place within 30 seconds, and an order refused while the last read
	// is fresh costs no request. Zero: no limit.
	MaxOpenOrders int
	// Symbols, when not empty, are the only symbols orders may be for
	// ("BTC-USD", …). Empty: every symbol.
	Symbols []string
}

// The names a *LimitError gives the limit it refused for.
const (
	limitSymbols          = "symbols"
	limitMaxOrderNotional = "max_order_notional"
	limitMaxOrderQuantity = "max_order_quantity"
	limitMaxDailyNotional = "max_daily_notional"
	limitMaxOpenOrders    = "max_open_orders"
)

// listLag is how long after its acknowledgement an order counts as open
// from the intent store alone, in case the venue's list does not show it
// yet.
const listLag = 30 * time.Second

// dailyWindow is the span MaxDailyNotional counts.
const dailyWindow = 24 * time.Hour

// openFresh is how long MaxOpenOrders trusts its last read of the venue's
// open orders.
const openFresh = 30 * time.Second

// openView is the account's open orders as the Client last read them:
// their client_order_ids (or ids, for orders without one), and when the
// read began on the Client's clock.
type openView struct {
	mu  sync.Mutex
	at  time.Time
	ids map[string]bool
}

// LimitError is an order refused by one of the Client's Limits (Config.
// Limits): nothing was sent for it and the order was not placed. Limit
// names the limit: "symbols", "max_order_notional",
// "max_order_quantity", "max_daily_notional" or "max_open_orders"; Value
// is what was judged (the symbol, the order's notional or quantity, the
// day's notional or the open orders with this order) and Setting the
// limit's setting. It matches ErrInvalidRequest. The per-order limits
// refuse the same request every time; the account's may let it through
// later, under the same key.
type LimitError struct {
	Limit   string
	Value   string
	Setting string
}

// Error says which limit refused the order, and that it was not placed.
func (e *LimitError) Error() string {
	return fmt.Sprintf("broker: refused by the %s limit: %s, limit %s; nothing was sent, the order was not placed", e.Limit, e.Value, e.Setting)
}

// Is matches ErrInvalidRequest: refused offline, nothing sent.
func (e *LimitError) Is(target error) bool { return target == ErrInvalidRequest }

// check refuses Limits that cannot be meant, as an *ArgumentError.
func (l Limits) check() error {
	for _, f := range []struct {
		name string
		d    decimal.Decimal
	}{{"MaxOrderNotional", l.MaxOrderNotional}, {"MaxOrderQuantity", l.MaxOrderQuantity}, {"MaxDailyNotional", l.MaxDailyNotional}} {
		if f.d.IsNegative() {
			return &ArgumentError{Field: "Limits." + f.name, Value: f.d.String(), Reason: "must not be negative (zero is no limit)"}
		}
	}
	if l.MaxOpenOrders < 0 {
		return &ArgumentError{Field: "Limits.MaxOpenOrders", Value: strconv.Itoa(l.MaxOpenOrders), Reason: "must not be negative (zero is no limit)"}
	}
	for _, s := range l.Symbols {
		if !wire.ValidSymbol(s) {
			return &ArgumentError{Field: "Limits.Symbols", Value: wire.Clip(s), Reason: "is not an upper-case pair such as BTC-USD"}
		}
	}
	return nil
}

// needsNotional reports whether a limit values orders in the quote
// currency.
func (l Limits) needsNotional() bool {
	return l.MaxOrderNotional.IsPositive() || l.MaxDailyNotional.IsPositive()
}

// account reports whether an account-wide limit, counted across the
// store, is set.
func (l Limits) account() bool {
	return l.MaxDailyNotional.IsPositive() || l.MaxOpenOrders > 0
}

// set reports whether any limit is set.
func (l Limits) set() bool {
	return l.needsNotional() || l.account() || l.MaxOrderQuantity.IsPositive() || len(l.Symbols) > 0
}

// orderSize is what the limits judge of one order: its notional in the
// quote currency and its asset quantity, each zero when not known.
type orderSize struct {
	notional, quantity decimal.Decimal
}

// sizeOf values req for the limits: at its own limit or stop price, or,
// for a market order, at market (called only when a notional limit needs
// it).
func sizeOf(req OrderRequest, market func() (decimal.Decimal, error)) (orderSize, error) {
	price := req.LimitPrice
	if req.Type == TypeStopLoss {
		price = req.StopPrice
	}
	var s orderSize
	if !req.QuoteAmount.IsZero() {
		s.notional = req.QuoteAmount
		if price.IsPositive() {
			s.quantity = req.QuoteAmount.DivRound(price, 18)
		}
		return s, nil
	}
	s.quantity = req.AssetQuantity
	if req.Type == TypeMarket {
		if market == nil {
			return s, nil
		}
		var err error
		if price, err = market(); err != nil {
			return s, err
		}
	}
	s.notional = req.AssetQuantity.Mul(price)
	return s, nil
}

// broken returns a *LimitError for each per-order limit req breaks, in
// this order: the symbol allow-list, the order's notional, its quantity.
func (l Limits) broken(req OrderRequest, s orderSize) []*LimitError {
	var les []*LimitError
	if len(l.Symbols) > 0 && !slices.Contains(l.Symbols, req.Symbol) {
		les = append(les, &LimitError{Limit: limitSymbols, Value: req.Symbol, Setting: strings.Join(l.Symbols, ",")})
	}
	if l.MaxOrderNotional.IsPositive() && s.notional.GreaterThan(l.MaxOrderNotional) {
		les = append(les, &LimitError{Limit: limitMaxOrderNotional, Value: "the order's notional " + s.notional.String(), Setting: l.MaxOrderNotional.String()})
	}
	if l.MaxOrderQuantity.IsPositive() && s.quantity.GreaterThan(l.MaxOrderQuantity) {
		les = append(les, &LimitError{Limit: limitMaxOrderQuantity, Value: "the order's quantity " + s.quantity.String(), Setting: l.MaxOrderQuantity.String()})
	}
	return les
}

// marketPrice reads the venue's estimated price for req's quantity: the
// ask for a buy, the bid for a sell.
func (c *Client) marketPrice(ctx context.Context, req OrderRequest) (decimal.Decimal, error) {
	side := PriceAsk
	if req.Side == SideSell {
		side = PriceBid
	}
	rows, err := c.EstimatedPrice(ctx, req.Symbol, side, req.AssetQuantity)
	if err != nil {
		return decimal.Decimal{}, err
	}
	for _, r := range rows {
		if p, ok := r.Price(); ok && r.Side == side && p.IsPositive() {
			return p, nil
		}
	}
	return decimal.Decimal{}, fmt.Errorf("broker: the venue's %s estimate for %s has no price", side, req.Symbol)
}

// accountLimit returns the *LimitError of the first account-wide limit an
// order of size s for account breaks, counted from store and the venue's
// open orders, or nil. own is the order's intent, recorded pending when
// it is being placed (so that of two Places counting at once at least one
// sees the other's intent), or "" for a Preview, which adds s itself.
func (c *Client) accountLimit(ctx context.Context, store idempotency.Store, account, own string, s orderSize) (*LimitError, error) {
	l := c.limits
	now := c.clock.Now()
	recs, err := limitRecords(ctx, store, l.since(now))
	if err != nil {
		return nil, fmt.Errorf("broker: reading the intent store for the limits: %w", err)
	}
	mine := func(r idempotency.Record) bool { return r.AccountNumber == account }
	if l.MaxDailyNotional.IsPositive() {
		total := decimal.Zero
		if own == "" {
			total = s.notional
		}
		for _, r := range recs {
			at := r.LastSignedAt
			if at.IsZero() {
				at = r.UpdatedAt
			}
			if !mine(r) || (r.ClientOrderID != own && now.Sub(at) >= dailyWindow) {
				continue
			}
			if n, err := decimal.NewFromString(r.Notional); err == nil {
				total = total.Add(n)
			}
		}
		if total.GreaterThan(l.MaxDailyNotional) {
			return &LimitError{Limit: limitMaxDailyNotional, Value: "the notional of 24 hours' orders with this one " + total.String(), Setting: l.MaxDailyNotional.String()}, nil
		}
	}
	if l.MaxOpenOrders > 0 {
		listed, at, err := c.openOrderIDs(ctx, now)
		if err != nil {
			return nil, err
		}
		open := maps.Clone(listed) // client_order_id, or the order's id
		for _, r := range recs {
			if mine(r) && (r.State.Open() || (r.State == idempotency.Acknowledged && r.UpdatedAt.After(at.Add(-listLag)))) {
				open[r.ClientOrderID] = true
			}
		}
		n := len(open)
		if own == "" {
			n++
		}
		if n > l.MaxOpenOrders {
			return &LimitError{Limit: limitMaxOpenOrders, Value: fmt.Sprintf("%d open orders with this one", n), Setting: strconv.Itoa(l.MaxOpenOrders)}, nil
		}
	}
	return nil, nil
}

// since is how far back, from now, the account-wide limits look at
// settled intents: a day for MaxDailyNotional, else the open-orders view's
// age and the venue's list lag for MaxOpenOrders (the view is re-read
// when older than openFresh, or in the future).
func (l Limits) since(now time.Time) time.Time {
	if l.MaxDailyNotional.IsPositive() {
		return now.Add(-dailyWindow)
	}
	return now.Add(-openFresh - listLag)
}

// limitRecords lists the store's intents the account-wide limits count
// (pending, unknown, acknowledged), leaving out, when the store can,
// those settled before since: neither limit counts them.
func limitRecords(ctx context.Context, store idempotency.Store, since time.Time) ([]idempotency.Record, error) {
	states := []idempotency.State{idempotency.Pending, idempotency.Unknown, idempotency.Acknowledged}
	if rl, ok := store.(idempotency.RecentLister); ok {
		return rl.ListRecent(ctx, since, states...)
	}
	return store.List(ctx, states...)
}

// openOrderIDs returns the account's open orders as last listed, and when
// that read began, reading them again when the last read is older than
// openFresh (or in the future: the clock stepped back) at now.
func (c *Client) openOrderIDs(ctx context.Context, now time.Time) (map[string]bool, time.Time, error) {
	v := &c.open
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.ids != nil && !now.Before(v.at) && now.Sub(v.at) < openFresh {
		return v.ids, v.at, nil
	}
	ids := map[string]bool{}
	for _, st := range []OrderState{StateOpen, StatePending, StatePartiallyFilled} {
		for o, err := range c.Orders(ctx, OrderFilter{State: st}) {
			if err != nil {
				return nil, time.Time{}, fmt.Errorf("broker: reading the open orders for the limits: %w", err)
			}
			if o.ClientOrderID != "" {
				ids[o.ClientOrderID] = true
			} else {
				ids[o.ID] = true
			}
		}
	}
	v.at, v.ids = now, ids
	return ids, now, nil
}

// denied counts and logs a refusal by a limit, and returns it.
func (c *Client) denied(le *LimitError, key string) error {
	c.denials.Add(1)
	c.tel.denied(le.Limit)
	c.log.Warn().Str("key", key).Str("limit", le.Limit).Str("value", le.Value).Str("setting", le.Setting).Msg("order refused by a limit; nothing sent")
	return le
}

// LimitDenials returns how many orders this Client's Place has refused
// for a limit (a *LimitError) since it was made.
func (c *Client) LimitDenials() uint64 { return c.denials.Load() }

// orderLimits values req for the limits (reading the venue's estimate for
// a market order when a notional limit is set, and nothing else) and
// refuses it, as a *LimitError, when it breaks a per-order limit — unless
// the intent store holds key as sent or settled (anything but not
// placed): such a key is answered as it was sent, as Place answers it.
// Only then is the store read (and, unless it is known, the account).
func (c *Client) orderLimits(ctx context.Context, key string, req OrderRequest) (orderSize, error) {
	var market func() (decimal.Decimal, error)
	if c.limits.needsNotional() {
		market = func() (decimal.Decimal, error) { return c.marketPrice(ctx, req) }
	}
	s, err := sizeOf(req, market)
	if err != nil {
		return s, &orders.Error{Kind: ErrNotSent, Key: key, Reason: "the market price the limits value the order at could not be read; nothing was sent", Err: err}
	}
	les := c.limits.broken(req, s)
	if len(les) == 0 {
		return s, nil
	}
	le := les[0]
	if key != "" {
		rec, err := c.Intent(ctx, key)
		switch {
		case err == nil && rec.State != idempotency.NotPlaced:
			return s, nil
		case err != nil && !errors.Is(err, idempotency.ErrNotFound):
			return s, &orders.Error{Kind: ErrNotSent, Key: key, Reason: fmt.Sprintf("refused by the %s limit, but whether the key was placed earlier cannot be read; nothing was sent", le.Limit), Err: err}
		}
	}
	return s, c.denied(le, key)
}

// previewLimits adds to p a Violation for each limit its order breaks, as
// Place would judge it, at p's market price.
func (c *Client) previewLimits(ctx context.Context, p *Preview) error {
	if !c.limits.set() {
		return nil
	}
	req := p.Request
	s, _ := sizeOf(req, func() (decimal.Decimal, error) { return p.MarketPrice, nil })
	les := c.limits.broken(req, s)
	if c.limits.account() {
		if _, err := c.placer(ctx); err != nil {
			return fmt.Errorf("broker: preview: the intent store the account's limits count: %w", err)
		}
		c.place.mu.Lock()
		store := c.place.store
		c.place.mu.Unlock()
		le, err := c.accountLimit(ctx, store, c.knownAccount(), "", s)
		if err != nil {
			return fmt.Errorf("broker: preview: %w", err)
		}
		if le != nil {
			les = append(les, le)
		}
	}
	for _, le := range les {
		field, setting := sizeFieldOf(req), decimal.Zero
		switch le.Limit {
		case limitSymbols:
			field = "symbol"
		case limitMaxOpenOrders:
			setting = decimal.NewFromInt(int64(c.limits.MaxOpenOrders))
		default:
			setting, _ = decimal.NewFromString(le.Setting)
		}
		p.Violations = append(p.Violations, Violation{Field: field, Code: le.Limit, Limit: setting, Detail: fmt.Sprintf("%s, limit %s", le.Value, le.Setting)})
	}
	return nil
}
