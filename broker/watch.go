package broker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/shopspring/decimal"

	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/internal/pages"
	"github.com/tradewire/tradewire/transport"
)

// The watch's defaults (see WatchConfig). With 100 open orders a poll is
// usually one page: 6 requests a minute, 6 % of the venue's budget.
const (
	defaultPollInterval = 10 * time.Second
	defaultOverlap      = 30 * time.Second
	// watchPageCap is the page cap of one poll, unless the Client's is
	// higher: a poll after a long stop reads every update since.
	watchPageCap = 1000
	// watchSpan is the most of updated_at one poll reads: a watch that
	// was stopped for longer catches up a span a poll, without waiting.
	watchSpan = time.Hour
	// settleEvery is how often a watch settles the store's open intents
	// when no order of one has shown in the list: a signature expires
	// within it.
	settleEvery = time.Minute
	// cursorVersion is the saved cursor's format.
	cursorVersion = 1
)

// WatchConfig configures Watch. The zero value polls every 10 s with a
// 30 s overlap, from the saved cursor or, without one, from now.
type WatchConfig struct {
	// PollInterval is the time between the starts of two polls; an event
	// is yielded at most PollInterval plus one poll's time after the
	// venue's list shows its change. Zero: 10 s.
	PollInterval time.Duration
	// Overlap is how far before the last complete poll's start each poll
	// reads again (by updated_at): a list that shows an update up to
	// Overlap after its updated_at (a lagging index), or a venue clock up
	// to Overlap behind, loses nothing. Zero: 30 s.
	Overlap time.Duration
	// Since, when set and earlier than where the saved cursor reads
	// from, starts there: every order updated since then is reported
	// again, as it is now (an event with the same Event.ID as before when
	// it has not changed since). Zero: the saved cursor or, without one,
	// now less Overlap.
	Since time.Time
	// Name tells apart several watches of one account that share an
	// intent store, each with its own cursor. Zero: "default".
	Name string
}

// EventKind is what an Event reports.
type EventKind string

// The kinds of Event.
const (
	// EventCreated: an order seen for the first time, open and unfilled.
	EventCreated EventKind = "created"
	// EventPartiallyFilled: more of an order that is still open filled.
	EventPartiallyFilled EventKind = "partially_filled"
	// EventFilled, EventCanceled, EventFailed: the order's final state.
	EventFilled   EventKind = "filled"
	EventCanceled EventKind = "canceled"
	EventFailed   EventKind = "failed"
	// EventSettled: the watch settled an intent of the store that was
	// left pending or unknown (by a crash, or a lost answer), as Recover
	// does: Intent is acknowledged or rejected (Order.ID names the
	// order; its own events come from the list) or not_placed (Order
	// holds only the ClientOrderID). Reported once, by the watch that
	// settled it.
	EventSettled EventKind = "settled"
)

// Event is one change of an order of the account, as Watch saw it.
type Event struct {
	// ID is the same for the same change in every process and run: a
	// hash of the order's id, state and cumulative filled quantity. A
	// consumer that acts on an event and then crashes before saving that
	// it did finds the ID again after a restart.
	ID   string
	Kind EventKind
	// Order is the order as the list showed it: its cumulative
	// FilledAssetQuantity, FeeCharged and UpdatedAt.
	Order Order
	// FillQuantity, FillPrice and FillFee are what filled since this
	// watch (or the run whose cursor it resumed) last reported the order:
	// the quantity, its average price (not Valid when the venue's
	// executions do not show it) and the fee. The first event of an order
	// not reported before carries all its fills so far.
	FillQuantity decimal.Decimal
	FillPrice    decimal.NullDecimal
	FillFee      decimal.Decimal
	// External: the intent store holds no intent for the order's
	// client_order_id (placed by hand, or by another tool). False when
	// the intent store could not be read.
	External bool
	// Intent is the state of this store's intent for the order when the
	// event was made: pending or unknown when its create's outcome was
	// not yet learned here (the event is then the news of it). Empty for
	// an external order.
	Intent idempotency.State
}

// Watch yields the changes of the account's orders, polling the orders
// list by updated_at on the Client's clock and transport (so a 429 backs
// off as every GET does and the rate budget is shared). Each poll reads
// from Overlap before the start of the last complete one; a row is an
// event only when its state or cumulative fill differs from what was
// last reported for the order, so the overlap yields nothing twice. A
// poll that fails, or whose last page looks cut off (a dropped next
// link), does not move the cursor: the next one reads the same window
// again.
//
// A watch stopped for long catches up an hour of updated_at a poll, each
// poll at once after the one before.
//
// The cursor (the last complete poll's start and what was last reported
// of each order that can still change, or changed within the overlap) is
// saved in the intent store after each poll and when the watch stops,
// when the store keeps named values (idempotency.Meta); a watch with the same
// Name started later, by any process sharing the store, continues from it
// and, after a clean stop, repeats nothing. After a crash it yields again
// the changes since the last save, with the same IDs. Without such a
// store the cursor lives as long as the iterator.
//
// Each event says whether the order is this store's (Intent) or External.
// The watch also settles the store's intents left pending or unknown (by
// a crash, or a lost answer), by Recover's rules and code, without
// waiting: after a poll that listed an order of one, and at least once a
// minute, it looks them up, settling an intent found acknowledged (or
// rejected) and one not found, once every signature it was sent with has
// expired on the venue's clock and the lookup read every order, not
// placed; each is yielded as an EventSettled. An intent another Place or
// Recover holds (in this process, or claimed in a shared store) is left
// to it.
//
// In a fleet (Config.RedisURL) a watch's reads draw from the fleet's
// shared budget like every request of the Client, and its cursor and the
// intents it settles live in the fleet's store: of several watches
// settling at once, each intent is settled and reported by one. Each
// watch reads the whole account's list, so each costs its own share of
// the budget: run one watch per account and consumer (Name), not one per
// process. Two watches with one Name at once are one consumer: the last
// to save sets where a restart resumes.
//
// A failed poll is yielded as an error with a zero Event, and the watch
// goes on while the loop does; it ends, saving the cursor, when the loop
// breaks or ctx is done. What it guarantees rests on the venue's
// updated_at, as sent, and on its list's lag: an update the list shows
// more than Overlap after its updated_at can be missed. The iterator
// starts no goroutine; a Client may run several watches at once.
func (c *Client) Watch(ctx context.Context, cfg WatchConfig) iter.Seq2[Event, error] {
	if err := cfg.validate(); err != nil {
		return errSeq[Event](err)
	}
	return func(yield func(Event, error) bool) {
		if c.tel != nil {
			inner := yield
			yield = func(ev Event, err error) bool {
				if err == nil {
					c.tel.watched(ctx, ev.Kind)
				}
				return inner(ev, err)
			}
		}
		w, err := c.newWatcher(ctx, cfg)
		if err != nil {
			yield(Event{}, err)
			return
		}
		defer func() {
			if err := w.save(context.WithoutCancel(ctx)); err != nil {
				c.log.Warn().Str("error", err.Error()).Msg("watch: the cursor was not saved at the stop")
			}
		}()
		for {
			start := c.clock.Now()
			stopped, err := w.poll(ctx, yield)
			if stopped || ctx.Err() != nil {
				return
			}
			c.tel.watchLag(ctx, c.tc.VenueNow().Sub(w.cur.Since).Seconds())
			if err != nil && !yield(Event{}, err) {
				return
			}
			if err := w.save(ctx); err != nil && !yield(Event{}, err) {
				return
			}
			if w.settleDue || w.settled.IsZero() || c.clock.Since(w.settled) >= settleEvery {
				if stopped := w.settle(ctx, yield); stopped || ctx.Err() != nil {
					return
				}
			}
			if w.behind && err == nil {
				continue
			}
			timer := c.clock.NewTimer(max(w.interval-c.clock.Since(start), 0))
			select {
			case <-ctx.Done():
				timer.Stop()
				return
			case <-timer.Chan():
			}
		}
	}
}

func (cfg WatchConfig) validate() error {
	if cfg.PollInterval < 0 {
		return &ArgumentError{Field: "PollInterval", Value: cfg.PollInterval.String(), Reason: "must not be negative"}
	}
	if cfg.Overlap < 0 {
		return &ArgumentError{Field: "Overlap", Value: cfg.Overlap.String(), Reason: "must not be negative"}
	}
	return nil
}

// watcher is one Watch's state.
type watcher struct {
	c        *Client
	account  string
	interval time.Duration
	overlap  time.Duration
	store    idempotency.Store // nil when it cannot be opened
	meta     idempotency.Meta  // nil: the cursor is not saved
	name     string            // the cursor's name in meta
	cur      cursor
	dirty    bool
	// pageSize is the most rows a page followed by a next link held: a
	// last page as full is taken as cut off.
	pageSize int
	// behind: the last poll read one span of a catch-up; the next goes
	// at once.
	behind bool
	// settleDue: an order of an open intent showed in the list; settled:
	// when (on the Client's clock) the watch last settled open intents.
	settleDue bool
	settled   time.Time
}

// cursor is what a watch saves: the start of its last complete poll on
// the venue's clock, and what it last reported of the orders it may see
// again.
type cursor struct {
	Version int                   `json:"v"`
	Since   time.Time             `json:"since"`
	Orders  map[string]*seenOrder `json:"orders"`
}

// seenOrder is what the watch last reported of one order.
type seenOrder struct {
	ClientOrderID string          `json:"c,omitempty"`
	State         OrderState      `json:"s"`
	Filled        decimal.Decimal `json:"f"`
	Fee           decimal.Decimal `json:"fee"`
	Executions    int             `json:"x,omitempty"`
	UpdatedAt     time.Time       `json:"u"`
	// External and Intent are what the store said; an open Intent is
	// asked again.
	External bool              `json:"e,omitempty"`
	Intent   idempotency.State `json:"i,omitempty"`
}

func (c *Client) newWatcher(ctx context.Context, cfg WatchConfig) (*watcher, error) {
	account, err := c.accountNumber(ctx)
	if err != nil {
		return nil, err
	}
	name := cfg.Name
	if name == "" {
		name = "default"
	}
	w := &watcher{
		c: c, account: account, interval: cfg.PollInterval, overlap: cfg.Overlap,
		name: "watch/" + account + "/" + name,
		cur:  cursor{Version: cursorVersion, Orders: map[string]*seenOrder{}},
	}
	if w.interval == 0 {
		w.interval = defaultPollInterval
	}
	if w.overlap == 0 {
		w.overlap = defaultOverlap
	}
	w.store = c.intentStore(ctx)
	if m, ok := w.store.(idempotency.Meta); ok {
		w.meta = m
		b, err := m.GetMeta(ctx, w.name)
		switch {
		case err == nil:
			var cur cursor
			if err := json.Unmarshal(b, &cur); err != nil || cur.Version != cursorVersion {
				return nil, fmt.Errorf("broker: the watch cursor %q in the intent store does not decode (remove it to start afresh): %v", w.name, err)
			}
			if cur.Orders == nil {
				cur.Orders = map[string]*seenOrder{}
			}
			w.cur = cur
		case errors.Is(err, idempotency.ErrNotFound):
		default:
			return nil, fmt.Errorf("broker: reading the watch cursor: %w", err)
		}
	} else {
		c.log.Warn().Msg("the intent store keeps no named values: the watch's cursor is not saved")
	}
	if w.cur.Since.IsZero() {
		w.cur.Since = c.tc.VenueNow()
		w.dirty = true
	}
	if !cfg.Since.IsZero() && cfg.Since.Before(w.cur.Since.Add(-w.overlap)) {
		// Overlap is read before Since as before any cursor; starting
		// exactly at Since takes it back out.
		w.cur.Since = cfg.Since.Add(w.overlap)
		w.cur.Orders = map[string]*seenOrder{} // each order is reported afresh
		w.dirty = true
	}
	return w, nil
}

// save writes the cursor, if it changed, to the store.
func (w *watcher) save(ctx context.Context) error {
	if w.meta == nil || !w.dirty {
		return nil
	}
	b, err := json.Marshal(w.cur)
	if err != nil {
		return err
	}
	if err := w.meta.PutMeta(ctx, w.name, b); err != nil {
		return fmt.Errorf("broker: saving the watch cursor: %w", err)
	}
	w.dirty = false
	return nil
}

// poll reads every order updated since the cursor less the overlap and
// yields what changed. stopped reports that yield asked to stop. A poll
// that read everything moves the cursor to its start.
func (w *watcher) poll(ctx context.Context, yield func(Event, error) bool) (stopped bool, err error) {
	start := w.c.tc.VenueNow()
	from := w.cur.Since.Add(-w.overlap)
	w.behind = false
	filter := OrderFilter{UpdatedAtStart: from}
	if start.Sub(from) > w.overlap+watchSpan {
		// Catching up: one span at a time, each older than the overlap,
		// so that a long stop is read in pieces of bounded size.
		filter.UpdatedAtEnd = from.Add(watchSpan)
	}
	q, err := filter.query(w.account)
	if err != nil {
		return false, err
	}
	target := pathOrders + "?" + q
	lastPage, lastRows := 0, 0
	walkErr := pages.Walk(ctx, w.c.tc, func(r *transport.Response) []byte { return r.Body }, target, max(w.c.pageCap, watchPageCap),
		func(page int, target string, rows []json.RawMessage) (bool, error) {
			if page > 1 {
				w.pageSize = max(w.pageSize, lastRows)
			}
			lastPage, lastRows = page, len(rows)
			for _, raw := range rows {
				o, err := decodeAs[wireOrder](raw)
				if err != nil {
					return false, &decodeError{Path: pathOf(target), Err: err}
				}
				ev, ok, err := w.change(ctx, o)
				if err != nil {
					return false, err
				}
				if ok && !yield(ev, nil) {
					stopped = true
					return false, nil
				}
			}
			return true, nil
		})
	switch {
	case stopped:
		return true, nil
	case errors.Is(walkErr, pages.ErrVanished):
		w.c.log.Debug().Int("pages", lastPage).Msg("watch: the list's last page looks cut off; reading it again next poll")
		return false, nil
	case walkErr != nil:
		return false, fmt.Errorf("broker: watch: %w", walkErr)
	case w.pageSize > 0 && lastRows >= w.pageSize:
		// A last page as full as a page that had a next link: its own
		// link may have been dropped.
		return false, nil
	}
	w.cur.Since = start
	if end := filter.UpdatedAtEnd; !end.IsZero() {
		w.cur.Since = end.Add(w.overlap)
		w.behind = true
	}
	w.prune(w.cur.Since.Add(-w.overlap))
	w.dirty = true
	return false, nil
}

// prune forgets the final orders last updated before from, where the next
// poll starts reading: the list shows them no more.
func (w *watcher) prune(from time.Time) {
	for id, s := range w.cur.Orders {
		if s.State.Final() && s.UpdatedAt.Before(from) {
			delete(w.cur.Orders, id)
		}
	}
}

// change compares a listed order with what was last reported of it and
// returns the event it makes, if any, recording it as reported.
func (w *watcher) change(ctx context.Context, o Order) (Event, bool, error) {
	prev := w.cur.Orders[o.ID]
	if prev != nil && (prev.State.Final() || o.UpdatedAt.Before(prev.UpdatedAt) || o.FilledAssetQuantity.LessThan(prev.Filled)) {
		return Event{}, false, nil // final already, or a stale row
	}
	if prev != nil && o.State == prev.State && o.FilledAssetQuantity.Equal(prev.Filled) {
		return Event{}, false, nil
	}
	was := seenOrder{}
	if prev != nil {
		was = *prev
	}
	ev := Event{ID: eventID(o), Order: o}
	switch {
	case o.State == StateFilled:
		ev.Kind = EventFilled
	case o.State == StateCanceled:
		ev.Kind = EventCanceled
	case o.State == StateFailed:
		ev.Kind = EventFailed
	case o.FilledAssetQuantity.GreaterThan(was.Filled):
		ev.Kind = EventPartiallyFilled
	case prev == nil:
		ev.Kind = EventCreated
	}
	ev.FillQuantity = o.FilledAssetQuantity.Sub(was.Filled)
	ev.FillFee = o.FeeCharged.Sub(was.Fee)
	ev.FillPrice = fillPrice(o, was, ev.FillQuantity)
	now := seenOrder{
		ClientOrderID: o.ClientOrderID, State: o.State, Filled: o.FilledAssetQuantity, Fee: o.FeeCharged,
		Executions: len(o.Executions), UpdatedAt: o.UpdatedAt, External: was.External, Intent: was.Intent,
	}
	if now.ClientOrderID == "" {
		now.ClientOrderID = was.ClientOrderID
	}
	if err := w.reconcile(ctx, &now, o.ID); err != nil {
		return Event{}, false, err
	}
	ev.Order.ClientOrderID = now.ClientOrderID
	ev.External, ev.Intent = now.External, now.Intent
	if now.Intent.Open() {
		w.settleDue = true
	}
	w.cur.Orders[o.ID] = &now
	w.dirty = true
	return ev, ev.Kind != "", nil
}

// reconcile fills in whose the order is: the intent store's state for its
// client_order_id, or External. A row without client_order_id (the list
// sometimes leaves it out) is read by its id once.
func (w *watcher) reconcile(ctx context.Context, s *seenOrder, id string) error {
	if s.ClientOrderID == "" {
		o, err := w.c.Order(ctx, id)
		if err != nil {
			return err
		}
		s.ClientOrderID = o.ClientOrderID
	}
	if w.store == nil || s.External || (s.Intent != "" && !s.Intent.Open()) {
		return nil
	}
	rec, err := w.store.Get(ctx, s.ClientOrderID)
	switch {
	case errors.Is(err, idempotency.ErrNotFound):
		s.External = true
	case err != nil:
		return fmt.Errorf("broker: watch: reading the intent store: %w", err)
	default:
		s.Intent = rec.State
	}
	return nil
}

// settle settles the store's open intents of the account that no other
// call or holder is placing, by the rules and the code of Recover, but
// without waiting (orders.Placer.Settle): found → acknowledged (or
// rejected); not found by a complete read once every signature it was
// sent with expired on the venue's clock → not placed. The rest stay
// open for a later poll. Each intent settled is yielded as an
// EventSettled; stopped reports that yield asked to stop.
func (w *watcher) settle(ctx context.Context, yield func(Event, error) bool) (stopped bool) {
	w.settleDue, w.settled = false, w.c.clock.Now()
	p, err := w.c.placer(ctx)
	if err != nil {
		return false // no store to settle: the watch reports what it sees
	}
	var evs []Event
	err = p.Settle(ctx, func(rec idempotency.Record, err error) {
		if err != nil || rec.State.Open() {
			return // another holder's, or not yet known
		}
		h := sha256.Sum256([]byte("settled\x00" + rec.ClientOrderID + "\x00" + string(rec.State)))
		ev := Event{ID: hex.EncodeToString(h[:16]), Kind: EventSettled, Intent: rec.State}
		ev.Order.ID, ev.Order.ClientOrderID = rec.OrderID, rec.ClientOrderID
		ev.Order.Symbol, ev.Order.UpdatedAt = rec.Symbol, rec.UpdatedAt
		evs = append(evs, ev)
	})
	for _, ev := range evs {
		if !yield(ev, nil) {
			return true
		}
	}
	if err != nil && ctx.Err() == nil {
		return !yield(Event{}, fmt.Errorf("broker: watch: settling the store's open intents: %w", err))
	}
	return false
}

// fillPrice is the average price of the executions since was, when they
// add up to q.
func fillPrice(o Order, was seenOrder, q decimal.Decimal) decimal.NullDecimal {
	if !q.IsPositive() {
		return decimal.NullDecimal{}
	}
	if was.Executions <= len(o.Executions) {
		var sum, notional decimal.Decimal
		for _, e := range o.Executions[was.Executions:] {
			sum = sum.Add(e.Quantity)
			notional = notional.Add(e.Quantity.Mul(e.EffectivePrice))
		}
		if sum.Equal(q) {
			return decimal.NewNullDecimal(notional.DivRound(q, 18))
		}
	}
	if q.Equal(o.FilledAssetQuantity) && o.AveragePrice.Valid {
		return o.AveragePrice
	}
	return decimal.NullDecimal{}
}

// eventID is the deterministic id of the change that brought o to its
// state and cumulative fill.
func eventID(o Order) string {
	h := sha256.Sum256([]byte(o.ID + "\x00" + string(o.State) + "\x00" + o.FilledAssetQuantity.String()))
	return hex.EncodeToString(h[:16])
}

// The waits of WaitFinal: the first read at once, then after 1 s, each
// wait half as long again as the one before, up to 10 s.
const (
	waitFirst = time.Second
	waitMax   = 10 * time.Second
)

// WaitFinal reads the order with id until it is final (filled, canceled
// or failed) and returns it, on the Client's clock: at once, then after
// 1 s, each wait half as long again as the one before, up to 10 s (a
// cancel, which settles about a second after it is accepted, is seen in
// two or three reads). When ctx is done first it returns the last order
// read (nil if none) and an error matching ctx's. A failed read (after the
// transport's retries) ends the wait with its error; one of an unknown id
// matches ErrNoSuchOrder.
func (c *Client) WaitFinal(ctx context.Context, id string) (*Order, error) {
	if err := checkOrderID("order_id", id); err != nil {
		return nil, err
	}
	var last *Order
	d := waitFirst
	for {
		o, err := c.Order(ctx, id)
		switch {
		case err != nil && ctx.Err() != nil:
			return last, fmt.Errorf("broker: waiting for order %s to be final: %w", id, ctx.Err())
		case err != nil:
			return last, err
		case o.State.Final():
			return o, nil
		}
		last = o
		timer := c.clock.NewTimer(d)
		select {
		case <-ctx.Done():
			timer.Stop()
			return last, fmt.Errorf("broker: waiting for order %s to be final: it is %s: %w", id, last.State, ctx.Err())
		case <-timer.Chan():
		}
		d = min(d*3/2, waitMax)
	}
}
