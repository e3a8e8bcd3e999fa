package orders

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jonboulle/clockwork"
	"github.com/rs/zerolog"

	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/signing"
	"github.com/tradewire/tradewire/transport"
)

// Defaults a Placer uses unless told otherwise.
const (
	// DefaultMaxSends caps how many times one Place sends a create.
	DefaultMaxSends = 3
	// DefaultSkewMargin is added to a signature's 30 s validity before a
	// create is taken as unable to land: the venue's clock may run behind.
	DefaultSkewMargin = 10 * time.Second
	// DefaultLookback is how long before the first send a lookup starts
	// listing orders, for clock differences with the venue.
	DefaultLookback = 2 * time.Minute
	// DefaultLookupPageCap bounds the pages one lookup reads.
	DefaultLookupPageCap = 50
)

const ordersPath = "/api/v2/crypto/trading/orders/"

// Placer places orders so that calling Place again after any failure
// never leaves two orders for one key. A Placer is safe for concurrent
// use; Places with the same key run one at a time. Construct it with New.
type Placer struct {
	tc        *transport.Client
	store     idempotency.Store
	clock     clockwork.Clock
	account   string
	namespace string
	log       zerolog.Logger
	maxSends  int
	skew      time.Duration
	lookback  time.Duration
	pageCap   int

	mu    sync.Mutex
	locks map[string]*keyLock
}

// Option configures a Placer.
type Option func(*Placer)

// WithNamespace sets the caller namespace (such as a strategy name) mixed
// into every client_order_id, so two strategies' keys never collide.
func WithNamespace(ns string) Option { return func(p *Placer) { p.namespace = ns } }

// WithLogger sets the logger (default zerolog.Nop()).
func WithLogger(l zerolog.Logger) Option { return func(p *Placer) { p.log = l } }

// WithMaxSends caps how many times one Place sends a create (default 3).
func WithMaxSends(n int) Option { return func(p *Placer) { p.maxSends = n } }

// WithSkewMargin sets the margin added to a signature's validity before a
// create is taken as unable to land (default 10 s).
func WithSkewMargin(d time.Duration) Option { return func(p *Placer) { p.skew = d } }

// WithLookupPageCap bounds the pages one lookup reads (default 50).
func WithLookupPageCap(n int) Option { return func(p *Placer) { p.pageCap = n } }

// New returns a Placer that sends through tc, records intents in store and
// places orders on accountNumber. It waits on tc's clock.
func New(tc *transport.Client, store idempotency.Store, accountNumber string, opts ...Option) (*Placer, error) {
	if tc == nil || store == nil {
		return nil, errors.New("orders: a transport client and an intent store are required")
	}
	if !accountShape.MatchString(accountNumber) {
		return nil, fmt.Errorf("orders: account number %q: want letters and digits", accountNumber)
	}
	p := &Placer{
		tc: tc, store: store, clock: tc.Clock(), account: accountNumber, log: zerolog.Nop(),
		maxSends: DefaultMaxSends, skew: DefaultSkewMargin, lookback: DefaultLookback, pageCap: DefaultLookupPageCap,
		locks: map[string]*keyLock{},
	}
	for _, o := range opts {
		o(p)
	}
	if p.maxSends < 1 || p.skew < 0 || p.pageCap < 1 {
		return nil, errors.New("orders: max sends and page cap must be at least 1, skew margin not negative")
	}
	return p, nil
}

var (
	accountShape = regexp.MustCompile(`^[A-Za-z0-9]{1,64}$`)
	uuidShape    = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
)

// ClientOrderID returns the client_order_id Place derives for key.
func (p *Placer) ClientOrderID(key string) string {
	return idempotency.ClientOrderID(p.account, p.namespace, key)
}

// Place places req once per key and returns the order as the venue reports
// it.
//
// It validates req, derives the client_order_id from key, and records the
// intent durably before anything is sent. Every signature's time is
// recorded before that signature leaves. A definitive answer ends it: 2xx
// (acknowledged; a 2xx in state failed is a *RejectedError) or a refusal
// (*RejectedError). After an ambiguous answer it looks the order up by
// client_order_id; if no order is found it waits until every signature the
// create was sent with has expired, looks again, and only then sends the
// same bytes again, up to the send cap.
//
// Calling Place again with a key already acknowledged returns that order
// without sending anything; with a different request it returns a
// *KeyConflictError. An empty key sends once under a random id and never
// again: its ambiguous outcome is an *UnknownOutcomeError.
func (p *Placer) Place(ctx context.Context, key string, req Request) (*Order, error) {
	cid := uuid.NewString()
	if key != "" {
		cid = p.ClientOrderID(key)
	}
	body, err := req.Body(cid)
	if err != nil {
		return nil, err
	}
	unlock, err := p.lock(ctx, cid)
	if err != nil {
		return nil, err
	}
	defer unlock()

	now := p.clock.Now()
	rec, created, err := p.store.Create(ctx, idempotency.Record{
		ClientOrderID: cid, Key: key, Namespace: p.namespace, AccountNumber: p.account, Symbol: req.Symbol,
		Fingerprint: fingerprint(body), State: idempotency.Pending, Body: body,
		Target: ordersPath + "?account_number=" + url.QueryEscape(p.account), CreatedAt: now, UpdatedAt: now,
	})
	if errors.Is(err, idempotency.ErrInProgress) {
		return nil, &InProgressError{ClientOrderID: cid, Err: err}
	}
	if err != nil {
		return nil, fmt.Errorf("orders: recording the intent for client_order_id %s: %w (nothing was sent)", cid, err)
	}
	if !created {
		if rec.Fingerprint != fingerprint(body) {
			return nil, &KeyConflictError{Key: key, ClientOrderID: cid}
		}
		switch rec.State {
		case idempotency.Acknowledged:
			return decodeOrder(rec.Order)
		case idempotency.Rejected:
			return nil, &RejectedError{ClientOrderID: cid, Reason: rec.Reason}
		case idempotency.Pending, idempotency.Unknown:
			p.log.Info().Str("client_order_id", cid).Str("state", string(rec.State)).Msg("resuming an open intent")
			return p.reconcile(ctx, &rec, 0)
		}
		// NotPlaced: nothing can be at the venue; send afresh.
	}
	return p.send(ctx, &rec, 1)
}

// send sends the create once (the sends-th time in this call) and
// resolves its answer.
func (p *Placer) send(ctx context.Context, rec *idempotency.Record, sends int) (*Order, error) {
	hook := func(at time.Time) error {
		if rec.FirstSentAt.IsZero() {
			rec.FirstSentAt = at
		}
		rec.LastSignedAt = at
		rec.Sends++
		rec.State = idempotency.Pending
		rec.UpdatedAt = at
		return p.store.Update(ctx, *rec)
	}
	resp, err := p.tc.Send(ctx, http.MethodPost, rec.Target, rec.Body, hook)
	p.log.Info().Str("client_order_id", rec.ClientOrderID).Int("send", sends).Bool("answered", err == nil).Msg("create sent")

	var notSent *transport.NotSentError
	var status *transport.StatusError
	var unknown *transport.UnknownOutcomeError
	switch {
	case err == nil:
		o, derr := decodeOrder(resp.Body)
		if derr != nil || o.ClientOrderID != rec.ClientOrderID {
			// Something was created; find out what.
			return p.markUnknown(ctx, rec, sends, fmt.Errorf("unreadable acknowledgement: %v", derr))
		}
		return p.acknowledge(ctx, rec, o, resp.Body)
	case errors.As(err, &notSent) && errors.Is(err, idempotency.ErrClaimLost):
		// Another process took the intent over while this one waited:
		// it is theirs to settle; this one sends nothing.
		return nil, &InProgressError{ClientOrderID: rec.ClientOrderID, Err: err}
	case errors.As(err, &notSent):
		// Nothing left this time. Earlier sends, if any, were already
		// resolved as not placed, or this is the first.
		p.setState(ctx, rec, idempotency.NotPlaced, "not sent: "+err.Error())
		return nil, &NotPlacedError{ClientOrderID: rec.ClientOrderID, Reason: "not sent", Err: err}
	case errors.As(err, &unknown):
		return p.markUnknown(ctx, rec, sends, err)
	case errors.As(err, &status) && status.StatusCode >= 400 && status.StatusCode < 500:
		if rec.Sends > 1 && hasField(status, "client_order_id") {
			// A resend refused for its client_order_id: the venue may
			// hold the first after all. Look again rather than guess.
			return p.markUnknown(ctx, rec, p.maxSends, err)
		}
		p.setState(ctx, rec, idempotency.Rejected, status.Error())
		return nil, &RejectedError{ClientOrderID: rec.ClientOrderID, Reason: status.Error(), Err: err}
	default:
		// A 2xx too large to read, a redirect: the create may have landed.
		return p.markUnknown(ctx, rec, sends, err)
	}
}

func hasField(se *transport.StatusError, field string) bool {
	for _, f := range se.Fields() {
		if f == field {
			return true
		}
	}
	return false
}

func (p *Placer) markUnknown(ctx context.Context, rec *idempotency.Record, sends int, cause error) (*Order, error) {
	p.setState(ctx, rec, idempotency.Unknown, cause.Error())
	if rec.Key == "" {
		return nil, &UnknownOutcomeError{ClientOrderID: rec.ClientOrderID, Err: cause}
	}
	return p.reconcile(ctx, rec, sends)
}

// reconcile looks the order up until it is found or known absent, then
// sends again if the cap allows. sends counts this call's sends so far.
func (p *Placer) reconcile(ctx context.Context, rec *idempotency.Record, sends int) (*Order, error) {
	for {
		if rec.Sends == 0 {
			// Recorded but never signed: nothing can be at the venue.
			return p.send(ctx, rec, sends+1)
		}
		o, raw, err := p.lookup(ctx, rec)
		if err != nil {
			return nil, &UnknownOutcomeError{ClientOrderID: rec.ClientOrderID, Key: rec.Key, Err: err}
		}
		if o != nil {
			return p.acknowledge(ctx, rec, o, raw)
		}
		expiry := p.expiry(*rec)
		if wait := expiry.Sub(p.clock.Now()); wait > 0 {
			p.log.Info().Str("client_order_id", rec.ClientOrderID).Dur("wait", wait).Msg("not found; waiting until every signature has expired")
			if err := p.sleep(ctx, wait); err != nil {
				return nil, &UnknownOutcomeError{ClientOrderID: rec.ClientOrderID, Key: rec.Key, Err: err}
			}
			continue
		}
		if rec.Key == "" || sends >= p.maxSends {
			reason := fmt.Sprintf("not found after %d send(s) and the expiry of every signature", rec.Sends)
			p.setState(ctx, rec, idempotency.NotPlaced, reason)
			return nil, &NotPlacedError{ClientOrderID: rec.ClientOrderID, Reason: reason}
		}
		p.log.Info().Str("client_order_id", rec.ClientOrderID).Msg("not placed; sending the same create again")
		return p.send(ctx, rec, sends+1)
	}
}

// expiry is when no signature the create was sent with can be accepted.
func (p *Placer) expiry(rec idempotency.Record) time.Time {
	return rec.LastSignedAt.Add(signing.ValidFor + p.skew)
}

func (p *Placer) acknowledge(ctx context.Context, rec *idempotency.Record, o *Order, raw []byte) (*Order, error) {
	rec.OrderID = o.ID
	if o.State == StateFailed {
		reason := "the venue reports the order failed"
		p.setState(ctx, rec, idempotency.Rejected, reason)
		return nil, &RejectedError{ClientOrderID: rec.ClientOrderID, Reason: reason}
	}
	rec.Order = raw
	if err := p.setState(ctx, rec, idempotency.Acknowledged, ""); err != nil {
		// The order exists; only the record is behind. Return the order:
		// a later Place finds it again by lookup.
		p.log.Error().Str("client_order_id", rec.ClientOrderID).Str("error", err.Error()).Msg("recording the acknowledgement")
	}
	return o, nil
}

func (p *Placer) setState(ctx context.Context, rec *idempotency.Record, s idempotency.State, reason string) error {
	rec.State = s
	rec.Reason = reason
	rec.UpdatedAt = p.clock.Now()
	if err := p.store.Update(ctx, *rec); err != nil {
		p.log.Error().Str("client_order_id", rec.ClientOrderID).Str("error", err.Error()).Msg("recording the intent")
		return err
	}
	return nil
}

func (p *Placer) sleep(ctx context.Context, d time.Duration) error {
	t := p.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.Chan():
		return nil
	}
}

// lookup lists the account's orders created since just before the first
// send, for the record's symbol, over every page, and returns the one
// whose client_order_id matches (nil when none does).
func (p *Placer) lookup(ctx context.Context, rec *idempotency.Record) (*Order, []byte, error) {
	q := url.Values{}
	q.Set("account_number", rec.AccountNumber)
	q.Set("created_at_start", rec.FirstSentAt.Add(-p.lookback).UTC().Format(time.RFC3339))
	if rec.Symbol != "" {
		q.Set("symbol", rec.Symbol)
	}
	target := ordersPath + "?" + q.Encode()
	seen := map[string]bool{}
	for page := 1; ; page++ {
		if page > p.pageCap {
			return nil, nil, fmt.Errorf("%w: more than %d pages", ErrLookupIncomplete, p.pageCap)
		}
		resp, err := p.tc.Get(ctx, target)
		if err != nil {
			return nil, nil, err
		}
		var pg struct {
			Next    *string           `json:"next"`
			Results []json.RawMessage `json:"results"`
		}
		if err := json.Unmarshal(resp.Body, &pg); err != nil {
			return nil, nil, fmt.Errorf("%w: page %d: %v", ErrLookupIncomplete, page, err)
		}
		for _, raw := range pg.Results {
			var probe struct {
				ClientOrderID string `json:"client_order_id"`
			}
			if json.Unmarshal(raw, &probe) != nil || probe.ClientOrderID != rec.ClientOrderID {
				continue
			}
			o, err := decodeOrder(raw)
			if err != nil {
				return nil, nil, fmt.Errorf("%w: %v", ErrLookupIncomplete, err)
			}
			return o, raw, nil
		}
		if pg.Next == nil || *pg.Next == "" {
			return nil, nil, nil
		}
		if target, err = p.tc.Target(*pg.Next); err != nil {
			return nil, nil, fmt.Errorf("%w: %v", ErrLookupIncomplete, err)
		}
		if seen[target] {
			return nil, nil, fmt.Errorf("%w: the venue repeated a page", ErrLookupIncomplete)
		}
		seen[target] = true
	}
}

func decodeOrder(b []byte) (*Order, error) {
	var o Order
	if err := json.Unmarshal(b, &o); err != nil {
		return nil, fmt.Errorf("orders: decoding an order: %w", err)
	}
	return &o, nil
}

type keyLock struct {
	ch   chan struct{}
	refs int
}

// lock serialises work on one client_order_id within this process.
func (p *Placer) lock(ctx context.Context, id string) (func(), error) {
	p.mu.Lock()
	l := p.locks[id]
	if l == nil {
		l = &keyLock{ch: make(chan struct{}, 1)}
		p.locks[id] = l
	}
	l.refs++
	p.mu.Unlock()
	release := func() {
		p.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(p.locks, id)
		}
		p.mu.Unlock()
	}
	select {
	case l.ch <- struct{}{}:
		return func() { <-l.ch; release() }, nil
	case <-ctx.Done():
		release()
		return nil, ctx.Err()
	}
}
