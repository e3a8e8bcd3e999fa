package broker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"go.opentelemetry.io/otel/metric"

	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/orders"
	"github.com/tradewire/tradewire/transport"
)

// RecoverReport says what Recover did with each open intent of the
// account, as the intent store's records (ClientOrderID, Key, State,
// Reason, OrderID, …).
type RecoverReport struct {
	// Acknowledged: the venue holds the order; OrderID names it.
	Acknowledged []idempotency.Record
	// Rejected: the venue reports the order failed; nothing is live.
	Rejected []idempotency.Record
	// NotPlaced: no order, and none can land from what was sent: Place
	// with the same key places afresh.
	NotPlaced []idempotency.Record
	// Unresolved: each may have an order at the venue (Reason says why
	// it is not known): Recover again later, or Place with the same key;
	// never a new key.
	Unresolved []idempotency.Record
	// InProgress: another Place or Recover sharing the intent store holds
	// the intent; it is left to that holder.
	InProgress []idempotency.Record
}

// placing is the Client's placement state: the intent store and the
// Placer, made on first use so that a Client that only reads never opens
// or locks the store.
type placing struct {
	mu        sync.Mutex
	open      metric.Registration // tradewire.intents.open's callback, or nil
	store     idempotency.Store   // given, or opened here
	owned     bool                // opened here: Close closes it
	storeFile string              // "" for the default path
	namespace string              // Config.Orders.Namespace
	cfg       orders.Config
	codec     orders.Codec // orderCodec{}: the one decode of an order the engine reads
	placer    *orders.Placer
}

// initPlacing sets up the placement state: the engine's configuration,
// checked here by building an engine on a throwaway store.
func (c *Client) initPlacing(cfg *config) error {
	ocfg := cfg.orders
	ocfg.Logger = c.log
	if _, err := orders.New(c.tc, idempotency.NewMemoryStore(), "A", orderCodec{}, ocfg); err != nil {
		return &ArgumentError{Field: "Orders", Reason: strings.TrimPrefix(err.Error(), "orders: ")}
	}
	c.place.store, c.place.storeFile, c.place.cfg, c.place.codec = cfg.store, cfg.storeFile, ocfg, orderCodec{}
	c.place.namespace = ocfg.Namespace
	return nil
}

// placer returns the Client's Placer, resolving the account and opening
// the intent store on first use: the store given with Config.IntentStore,
// the fleet's with Config.RedisURL or Config.PostgresURL, or the bolt file
// (Config.IntentStoreFile, default idempotency.DefaultPath()).
func (c *Client) placer(ctx context.Context) (*orders.Placer, error) {
	c.place.mu.Lock()
	defer c.place.mu.Unlock()
	if c.place.placer != nil {
		return c.place.placer, nil
	}
	n, err := c.accountNumber(ctx)
	if err != nil {
		return nil, err
	}
	if c.place.store == nil {
		switch {
		case c.fleet != nil && c.place.storeFile == "":
			s, err := c.fleet.store(ctx, n, venueClock{c.clock, c.tc})
			if err != nil {
				return nil, fmt.Errorf("broker: the fleet's intent store: %w", err)
			}
			c.place.store = s
		default:
			path := c.place.storeFile
			if path == "" {
				if path, err = idempotency.DefaultPath(); err != nil {
					return nil, fmt.Errorf("broker: the intent store: %w", err)
				}
			}
			s, err := idempotency.Open(path, idempotency.Config{})
			if err != nil {
				return nil, fmt.Errorf("broker: the intent store: %w", err)
			}
			c.place.store = s
		}
		c.place.owned = true
	}
	p, err := orders.New(c.tc, c.place.store, n, c.place.codec, c.place.cfg)
	if err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	c.place.placer = p
	c.place.open = c.tel.observeOpen(c.place.store, n)
	return p, nil
}

// lookback is the floor of how long before an intent's first send a
// lookup lists orders, as package orders' lookups do.
const lookback = 2 * time.Minute

// venueClock is the client's clock read as the venue's: the transport's
// corrected time. The fleet's store judges an abandoned intent's
// signatures by it, since they were stamped on it.
type venueClock struct {
	clockwork.Clock
	tc *transport.Client
}

// Now returns the venue's time as the transport measures it.
func (v venueClock) Now() time.Time { return v.tc.VenueNow() }

// closeStore closes the intent store if this Client opened it.
func (c *Client) closeStore() error {
	c.place.mu.Lock()
	defer c.place.mu.Unlock()
	if c.place.open != nil {
		c.place.open.Unregister()
		c.place.open = nil
	}
	if !c.place.owned || c.place.store == nil {
		return nil
	}
	err := c.place.store.Close()
	c.place.store, c.place.owned, c.place.placer = nil, false, nil
	return err
}

// Place places req once per key: calling it again with the same key after
// any failure — a 429, a 5xx, a timeout, a crash, a restart — never leaves
// two orders. It checks req offline (as Preview does) and, for a key the
// intent store does not hold, against the rules of its trading pair that
// need no price (increments, the maximum size of an asset quantity; the
// pair is read once per symbol), refusing with an *ArgumentError before
// anything is sent; derives the client_order_id from key (ClientOrderID),
// records the intent before anything is sent, and looks the order up
// before any resend; see the package documentation, # Idempotency, and
// package orders for the rules.
//
// On a key already acknowledged nothing is sent: Place returns the order
// read afresh from the venue. If that read fails it returns the copy
// recorded when the order was acknowledged, with an error matching
// ErrRecordedOrder: the order exists, but its state may have moved on. A
// store that compacted the intent (idempotency.Open does once it settles)
// keeps no copy: then a failed read is an error matching
// ErrUnknownOutcome, naming the order's id.
//
// An empty key sends once under a random client_order_id, never again.
//
// While the intent store is halted (Halt) Place sends nothing and
// returns an error matching ErrHalted, and ErrNotSent too.
//
// With Config.Limits set, an order a limit refuses is a *LimitError
// (matching ErrInvalidRequest), with nothing sent; see # Limits.
//
// Errors, checked in this order (see # Errors): ErrInProgress,
// ErrUnknownOutcome, ErrRejected, ErrNotPlaced, ErrNotSent,
// ErrInvalidRequest; anything else is to be treated as unknown.
func (c *Client) Place(ctx context.Context, key string, req OrderRequest) (*Order, error) {
	if c.tel == nil {
		return c.placeOnce(ctx, key, req)
	}
	ctx, span := c.tel.startPlace(ctx)
	o, err := c.placeOnce(ctx, key, req)
	c.tel.placed(ctx, span, func() string { return c.ClientOrderID(key) }, err)
	return o, err
}

// placeOnce is Place without its telemetry.
func (c *Client) placeOnce(ctx context.Context, key string, req OrderRequest) (*Order, error) {
	if err := checkIdempotencyKey(key); err != nil {
		return nil, err
	}
	if err := checkOrder(req); err != nil {
		return nil, err
	}
	var size orderSize
	if c.limits.set() {
		var err error
		if size, err = c.orderLimits(ctx, key, req); err != nil {
			return nil, err
		}
	}
	p, err := c.placer(ctx)
	if err != nil {
		return nil, &orders.Error{Kind: ErrNotSent, Key: key, Reason: "the account or intent store is not available", Err: err}
	}
	create := orders.Create{Symbol: req.Symbol, Body: req.body,
		Check: func(ctx context.Context) error { return c.checkPairRules(ctx, key, req) }}
	if c.limits.needsNotional() {
		create.Notional = size.notional.String()
	}
	if c.limits.account() {
		c.place.mu.Lock()
		store := c.place.store
		c.place.mu.Unlock()
		account := c.knownAccount()
		create.Admit = func(ctx context.Context, cid string) error {
			le, err := c.accountLimit(ctx, store, account, cid, size)
			if err != nil {
				return &orders.Error{Kind: ErrNotSent, Key: key, ClientOrderID: cid, Reason: "the account's limits could not be judged; nothing was sent", Err: err}
			}
			if le != nil {
				return c.denied(le, key)
			}
			return nil
		}
	}
	f, err := p.Place(ctx, key, create)
	if f == nil {
		return nil, err
	}
	o := f.Order.(*Order) // orderCodec's decoding, the one of this answer
	if err != nil || !f.Recorded {
		return o, err
	}
	// The engine answered from the copy of the order the store kept at
	// acknowledgement: read it afresh.
	fresh, err := c.Order(ctx, o.ID)
	if err != nil {
		return o, &recordedOrderError{Order: o, Err: err}
	}
	return fresh, nil
}

// ClientOrderID returns the client_order_id Place derives for key, from
// the account, the namespace (Config.Orders.Namespace) and the key. The
// account must be known: set with Config.AccountNumber or
// Config.RedisURL, or resolved by an earlier call (Account, Place, …).
// Before that it returns "".
func (c *Client) ClientOrderID(key string) string {
	n := c.knownAccount()
	if n == "" {
		return ""
	}
	return idempotency.ClientOrderID(n, c.place.namespace, key)
}

// OrderByKey returns the order Place placed under key, read afresh from
// the venue. It opens the Client's intent store as Place does (the store
// given with Config.IntentStore, the fleet's Redis, or the bolt file, held
// until Close) and asks it first. A store that vouches for newness
// (idempotency.Witness; the bolt file does) and holds no record of the key
// answers at once, with nothing read from the venue: an error matching
// ErrNoSuchOrder, since every Place of
// the key through that store records it before anything is sent. A store
// that does not vouch, or a bolt file another process holds
// (idempotency.ErrLocked), leaves the answer to the venue: the order the
// store recorded for the key is read by its id; when the store knows no
// id, or the venue has no order by it, the account's orders are listed
// (since the intent's first send when the store knows it; every page up
// to the page cap) for its client_order_id. None found is an error
// matching ErrNoSuchOrder, whose message says what the store knew of the
// key (a pending or unknown intent may still land: Recover, or Place with
// the same key, before deciding it is absent).
func (c *Client) OrderByKey(ctx context.Context, key string) (*Order, error) {
	if key == "" {
		return nil, &ArgumentError{Field: "key", Reason: "must not be empty"}
	}
	if err := checkIdempotencyKey(key); err != nil {
		return nil, err
	}
	n, err := c.accountNumber(ctx)
	if err != nil {
		return nil, err
	}
	id := idempotency.ClientOrderID(n, c.place.namespace, key)
	store := c.intentStore(ctx)
	if w, ok := store.(idempotency.Witness); ok && w.VouchesNew() {
		if _, err := store.Get(ctx, id); errors.Is(err, idempotency.ErrNotFound) {
			return nil, &noSuchClientOrderError{ClientOrderID: id}
		}
	}
	return c.orderByClientOrderID(ctx, id, store)
}

// intentStore returns the Client's intent store, opened as Place opens
// it; nil when it cannot be (the bolt file held by another process).
func (c *Client) intentStore(ctx context.Context) idempotency.Store {
	if _, err := c.placer(ctx); err != nil {
		c.log.Debug().Str("error", err.Error()).Msg("the intent store is not available; reading the venue alone")
	}
	c.place.mu.Lock()
	defer c.place.mu.Unlock()
	return c.place.store
}

// Intent returns what the intent store holds for key, reading the store
// alone, nothing from the venue: the intent Place recorded, its State
// (pending or unknown: its create's outcome is not settled; acknowledged,
// with OrderID; rejected; not placed, with Reason), its Sends, and when.
// It opens the store as Place does. A key the store does not hold is an
// error matching idempotency.ErrNotFound: never placed through this store
// (a store that vouches, idempotency.Witness) or not known here (one that
// does not, such as the memory store of an earlier process). The
// account number must be known (Config.AccountNumber or an earlier call), or
// it is read first.
//
// After a restart, a bot that does not know whether it placed a key asks
// here first; an unsettled intent is settled by Recover or by Place with
// the same key and the same request, never by a new key.
func (c *Client) Intent(ctx context.Context, key string) (idempotency.Record, error) {
	if err := checkIdempotencyKey(key); err != nil || key == "" {
		if err == nil {
			err = &ArgumentError{Field: "key", Reason: "must not be empty"}
		}
		return idempotency.Record{}, err
	}
	p, err := c.placer(ctx)
	if err != nil {
		return idempotency.Record{}, fmt.Errorf("broker: the intent store: %w", err)
	}
	rec, err := c.place.store.Get(ctx, p.ClientOrderID(key))
	if err != nil && !errors.Is(err, idempotency.ErrNotFound) {
		return idempotency.Record{}, fmt.Errorf("broker: reading the intent store: %w", err)
	}
	return rec, err
}

// orderByClientOrderID returns the order with client_order_id id, read
// afresh from the venue. It asks store first (when not nil) for the
// order's id, and reads that order; when the store knows no id, or the
// venue has no order by the id it recorded, it lists the account's orders
// (created since the intent's first send when the store knows it; every
// page up to the page cap) for it. None found is a
// *noSuchClientOrderError, matching ErrNoSuchOrder, whose message says
// what the store knew (an open intent may still land).
func (c *Client) orderByClientOrderID(ctx context.Context, id string, store idempotency.Store) (*Order, error) {
	var filter OrderFilter
	var intent idempotency.State
	if store != nil {
		rec, err := store.Get(ctx, id)
		switch {
		case err == nil:
			intent = rec.State
			if rec.OrderID != "" {
				o, err := c.Order(ctx, rec.OrderID)
				if !errors.Is(err, ErrNoSuchOrder) {
					return o, err
				}
				// The id recorded is not one the venue holds (a 2xx
				// may have named another): the list tells.
			}
			if !rec.FirstSentAt.IsZero() {
				filter.CreatedAtStart = rec.FirstSentAt.Add(-lookback - transport.MaxClockOffset)
			}
		case !errors.Is(err, idempotency.ErrNotFound):
			return nil, fmt.Errorf("broker: reading the intent store: %w", err)
		}
	}
	for o, err := range c.Orders(ctx, filter) {
		if err != nil {
			return nil, err
		}
		if o.ClientOrderID == id {
			return &o, nil
		}
	}
	return nil, &noSuchClientOrderError{ClientOrderID: id, Intent: string(intent)}
}

// Recover settles every pending or unknown intent of the account left by
// an earlier process, by lookup alone: found → acknowledged; not found
// once every signature it was sent with has expired → not placed. It
// never places anything. Run it at start-up, before placing. The intents
// of one symbol are looked up together, with one read of the orders list
// (two when some must wait for their signatures to expire) when it reads
// whole, however many there are; see package orders, # Restarts.
func (c *Client) Recover(ctx context.Context) (*RecoverReport, error) {
	p, err := c.placer(ctx)
	if err != nil {
		return nil, err
	}
	var rep RecoverReport
	err = p.Recover(ctx, func(rec idempotency.Record, err error) {
		switch {
		case errors.Is(err, ErrInProgress): // before ErrUnknownOutcome, which it matches too
			rep.InProgress = append(rep.InProgress, rec)
		case err != nil:
			rep.Unresolved = append(rep.Unresolved, rec)
		case rec.State == idempotency.Acknowledged:
			rep.Acknowledged = append(rep.Acknowledged, rec)
		case rec.State == idempotency.Rejected:
			rep.Rejected = append(rep.Rejected, rec)
		default:
			rep.NotPlaced = append(rep.NotPlaced, rec)
		}
	})
	return &rep, err
}

// CancelOrder asks the venue to cancel an order and returns the order as
// the venue reports it, usually still open: the cancel settles about a
// second later, so read the order again to see it canceled. The order is
// nil, with no error, when the venue acknowledged the cancel with a body
// that is not an order.
//
// A 404 matches ErrNoSuchOrder. A refusal (400, such as "This order cannot
// be canceled." for a final order) matches ErrRejected and wraps the
// venue's *transport.StatusError, with its detail (errors.As reads it). A cancel is a write: it is sent
// once and never retried (a lost answer matches ErrUnknownOutcome).
func (c *Client) CancelOrder(ctx context.Context, id string) (*Order, error) {
	if err := checkOrderID("order_id", id); err != nil {
		return nil, err
	}
	resp, err := c.tc.Do(ctx, "POST", pathOrders+id+"/cancel/", nil)
	if err != nil {
		return nil, cancelError(id, err)
	}
	if b := bytes.TrimSpace(resp.Body); len(b) == 0 || b[0] != '{' {
		return nil, nil
	}
	o, err := decodeOrder(resp.Body)
	if err != nil {
		return nil, &decodeError{Path: pathOrders + id + "/cancel/", Err: err}
	}
	return o, nil
}

// orderCodec gives the placement engine the facts it reads of an order.
type orderCodec struct{}

func (orderCodec) Facts(raw []byte) (orders.Facts, error) {
	o, err := decodeOrder(raw)
	if err != nil {
		return orders.Facts{}, err
	}
	return orders.Facts{ID: o.ID, ClientOrderID: o.ClientOrderID, Failed: o.State == StateFailed, Order: o}, nil
}

// decodeOrder decodes an order in the venue's shape, strictly: besides
// what every order read refuses (wireOrder.checkJSON), an order without
// an id or a state is unreadable.
func decodeOrder(raw []byte) (*Order, error) {
	o, err := decodeAs[wireOrder](raw)
	switch {
	case err != nil:
		return nil, err
	case o.ID == "":
		return nil, errors.New("the order has no id")
	case o.State == "":
		return nil, errors.New("the order has no state")
	}
	return &o, nil
}

// checkIdempotencyKey refuses, as an *ArgumentError, an idempotency key that cannot
// be what its caller meant (idempotency.CheckKey): keys are compared byte
// for byte.
func checkIdempotencyKey(key string) error {
	var ke *idempotency.KeyError
	if err := idempotency.CheckKey(key); errors.As(err, &ke) {
		return &ArgumentError{Field: "key", Reason: fmt.Sprintf("at byte %d: %s (a key is compared byte for byte)", ke.Offset, ke.Reason)}
	}
	return nil
}

// checkPairRules refuses, before anything is sent, a new order that breaks
// a rule of its trading pair that needs no price (pairRules: increments,
// the maximum size of an asset quantity), which the venue would refuse it
// for, as an *ArgumentError naming the field. The pair is read once per
// symbol and Client. When it cannot be read the create goes out and the
// venue judges.
func (c *Client) checkPairRules(ctx context.Context, key string, req OrderRequest) error {
	pair, err := c.tradingPair(ctx, req.Symbol)
	if err != nil {
		if ctx.Err() != nil {
			return &orders.Error{Kind: ErrNotSent, Key: key, Reason: "stopped while reading the trading pair, before the create was sent", Err: ctx.Err()}
		}
		return nil
	}
	if vs := pairRules(pair, req); len(vs) > 0 {
		return &ArgumentError{Field: vs[0].Field, Reason: fmt.Sprintf("%s (%s, %s's rule)", vs[0].Detail, vs[0].Code, req.Symbol)}
	}
	return nil
}
