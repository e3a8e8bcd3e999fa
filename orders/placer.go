package orders

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jonboulle/clockwork"
	"github.com/rs/zerolog"

	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/internal/adaptive"
	"github.com/tradewire/tradewire/internal/wire"
	"github.com/tradewire/tradewire/signing"
	"github.com/tradewire/tradewire/transport"
)

// The values a zero Config field stands for.
const (
	defaultMaxSends      = 3
	defaultSkewMargin    = 10 * time.Second
	defaultLookupPageCap = 50
	// lookback is the floor of how long before the first send a lookup
	// starts listing orders; the measured clock offset, or while it is not
	// measured the largest accepted (10 min), is added to it.
	lookback = 2 * time.Minute
)

const ordersPath = wire.PathOrders

// Placer places orders so that calling Place again after any failure
// never leaves two orders for one key. A Placer is safe for concurrent
// use. Places of one key in one Placer run one at a time; across Placers,
// Clients and processes sharing its store, the store's claim keeps a
// second Place of a key off it (idempotency.Store). Construct it with New.
type Placer struct {
	tc        *transport.Client
	codec     Codec
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

	amu      sync.Mutex
	answered map[string]bool      // client_order_ids a 2xx answered, whatever the store recorded
	signed   map[string]time.Time // client_order_id → when this Placer last signed its create, on its clock

	hmu  sync.Mutex
	halt haltCache // the store's halt record as last read

	tel *telemetry // nil without a MeterProvider
}

// Codec is what the engine needs of the package that owns the order
// vocabulary (package broker implements it): the few facts it reads of an
// order the venue returned. It must be safe for concurrent use.
type Codec interface {
	// Facts decodes an order as the venue returns it (a create's 2xx
	// body, a row of the orders list, the copy stored at
	// acknowledgement).
	Facts(order []byte) (Facts, error)
}

// Facts are what the engine reads of an order: its ids, and whether the
// venue reports it failed (a rejection); and, handed back by Place, the
// order as the Codec decoded it and where the answer came from.
type Facts struct {
	ID            string
	ClientOrderID string
	Failed        bool
	// Order is the Codec's own decoding of the order, which the engine
	// carries back to Place's caller untouched, so that the order is
	// decoded once.
	Order any
	// Recorded is set by Place (a Codec leaves it false): the key was
	// acknowledged by an earlier Place and the answer is the copy of the
	// order the store kept then, not read from the venue by this call;
	// its state may have moved on. (A store that compacted the intent
	// keeps only the order's id: then Place reads the order afresh, and
	// Recorded is false.)
	Recorded bool
}

// Create is one order to place, prepared and validated by the caller:
// Symbol narrows the lookups, and Body returns the create's JSON for a
// client_order_id, the same bytes every time for the same id.
//
// Check, when set, judges the order once more before the first create of
// a key the store did not hold is sent, once the store has let it through
// (so that a store that refuses sends nothing at all); its error refuses
// the order, nothing sent, and is returned as it is. It is not called for
// a key the store holds: that key is answered by the rules it was sent
// under.
//
// Notional is recorded with the intent (idempotency.Record.Notional).
// Admit, when set, judges the order once its intent is recorded, claimed
// and pending, just before a create of it is first sent (a key the store
// did not hold, or one it holds as not placed), given its client_order_id,
// so that it can count the intent among the store's; its error refuses the order: the intent is
// settled as not placed, nothing sent, and the error returned as it is.
// Every such create is recorded before Admit is called, so of two Places
// that each count the other's intent at least one sees both.
type Create struct {
	Symbol   string
	Body     func(clientOrderID string) ([]byte, error)
	Check    func(ctx context.Context) error
	Notional string
	Admit    func(ctx context.Context, clientOrderID string) error
}

// Config configures a Placer. Its zero value is the default of every
// field.
type Config struct {
	// Namespace (such as a strategy name) is mixed into every
	// client_order_id, so two strategies' keys never collide. Zero: none.
	Namespace string
	// Logger receives the engine's events. Zero: nothing is logged.
	Logger zerolog.Logger
	// MaxSends caps how many times one Place sends a create. Zero: 3.
	//
	// MaxSends 1 forbids every re-send, for a venue whose handling of a
	// reused client_order_id (or whose order list) a caller does not
	// trust: each intent is sent at most once, by any Place or Recover; an
	// ambiguous outcome is looked up, and if the order is not found it
	// stays unknown (transport.ErrUnknownOutcome; never "not placed",
	// which would invite a second create), however long the Placer waits.
	MaxSends int
	// SkewMargin is the floor of the margin added to a signature's 30 s
	// validity before a create is taken as unable to land: the venue's
	// clock may run behind the signature's. While the transport has not
	// measured the venue's clock offset, the margin also includes the
	// largest offset it accepts (10 min). Zero: 10 s.
	SkewMargin time.Duration
	// LookupPageCap bounds the pages one lookup reads. Zero: 50.
	LookupPageCap int
}

// New returns a Placer that sends through tc, records intents in store,
// places orders on accountNumber and reads the venue's orders with codec.
// It waits on tc's clock. A negative number in cfg is refused.
func New(tc *transport.Client, store idempotency.Store, accountNumber string, codec Codec, cfg Config) (*Placer, error) {
	if tc == nil || store == nil || codec == nil {
		return nil, errors.New("orders: a transport client, an intent store and a codec are required")
	}
	if !wire.ValidAccountNumber(accountNumber) {
		return nil, fmt.Errorf("orders: account number %q: want letters and digits", accountNumber)
	}
	if cfg.MaxSends < 0 || cfg.SkewMargin < 0 || cfg.LookupPageCap < 0 {
		return nil, errors.New("orders: MaxSends, SkewMargin and LookupPageCap must not be negative")
	}
	p := &Placer{
		tc: tc, codec: codec, store: store, clock: tc.Config().Clock, account: accountNumber, namespace: cfg.Namespace, log: cfg.Logger,
		maxSends: orDefault(cfg.MaxSends, defaultMaxSends), skew: orDefault(cfg.SkewMargin, defaultSkewMargin),
		lookback: lookback, pageCap: orDefault(cfg.LookupPageCap, defaultLookupPageCap),
		locks: map[string]*keyLock{}, answered: map[string]bool{}, signed: map[string]time.Time{},
		tel: newTelemetry(tc.Config().MeterProvider),
	}
	return p, nil
}

// orDefault is v, or def when v is zero.
func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// ClientOrderID returns the client_order_id Place derives for key.
func (p *Placer) ClientOrderID(key string) string {
	return idempotency.ClientOrderID(p.account, p.namespace, key)
}

// Place places c once per key and returns the facts of the order as the
// venue reports it, with the Codec's decoding of it (Facts.Order, the one
// decode of that answer) and whether it is the copy recorded at an earlier
// acknowledgement (Facts.Recorded).
//
// It derives the client_order_id from key, and records the
// intent durably before anything is sent. If the store does not vouch
// that a new intent is new (idempotency.Witness), it first looks the
// order up at the venue: a create sent by a process whose record was lost
// may have landed. Every signature's time is recorded before that
// signature leaves. A definitive answer ends it: a 2xx whose order it
// reads (acknowledged; one in state failed is a rejection once a lookup
// shows it failed, and unknown until then) or a
// refusal (transport.ErrRejected). Any other 2xx means an order exists:
// it is looked up and never sent again. After an ambiguous answer it looks the
// order up by client_order_id; if no order is found it waits until every
// signature the create was sent with has expired, looks again, and only
// then sends the same bytes again, up to the send cap (never, with
// MaxSends 1).
//
// Calling Place again with a key already acknowledged returns that order
// without sending anything; with a different request it returns an
// *Error of Kind transport.ErrInvalidRequest. An empty key sends once
// under a random id and never again: its ambiguous outcome is unknown
// (transport.ErrUnknownOutcome).
//
// A key idempotency.CheckKey refuses (keys are compared byte for byte) is
// refused before anything is recorded or sent, with an error matching
// transport.ErrInvalidRequest that wraps its *idempotency.KeyError.
//
// Errors: an *Error (its Kind says which outcome), Body's error, or the
// refusal of the key; see the package documentation for what each means
// and the switch to write.
func (p *Placer) Place(ctx context.Context, key string, c Create) (*Facts, error) {
	if err := idempotency.CheckKey(key); err != nil {
		return nil, fmt.Errorf("orders: %w: %w", transport.ErrInvalidRequest, err)
	}
	cid := uuid.NewString()
	if key != "" {
		cid = p.ClientOrderID(key)
	}
	if c.Body == nil {
		return nil, errors.New("orders: a create needs a Body")
	}
	body, err := c.Body(cid)
	if err != nil {
		return nil, err
	}
	if err := p.halted(ctx); err != nil {
		return nil, haltError(cid, key, err) // nothing recorded, nothing sent
	}
	unlock, err := p.lock(ctx, cid)
	if err != nil {
		// Another Place of the key runs in this process: its outcome is
		// not known here.
		return nil, &Error{Kind: idempotency.ErrInProgress, ClientOrderID: cid, Key: key, Err: fmt.Errorf("the context ended (%v) while another Place of the key ran in this process; nothing was sent here", err)}
	}
	defer unlock()

	now := p.clock.Now()
	holder := uuid.NewString()
	fresh := idempotency.Record{
		ClientOrderID: cid, Key: key, Namespace: p.namespace, AccountNumber: p.account, Symbol: c.Symbol,
		Fingerprint: fingerprint(body), Notional: c.Notional, State: idempotency.Pending, Body: body,
		Target: ordersPath + "?account_number=" + url.QueryEscape(p.account), CreatedAt: now, UpdatedAt: now,
		Holder: holder,
	}
	if _, measured := p.tc.ClockOffset(); measured && p.vouches() && c.Admit == nil {
		// The store vouches for newness and the venue's clock is known: a
		// key the store has never seen is recorded, claimed and stamped
		// with its signature's time in one durable write, just before the
		// create leaves.
		if _, err := p.store.Get(ctx, cid); errors.Is(err, idempotency.ErrNotFound) {
			if c.Check != nil {
				if err := c.Check(ctx); err != nil {
					return nil, err // nothing recorded, nothing sent
				}
			}
			rec := fresh
			defer p.release(ctx, &rec, holder)
			return p.send(ctx, &rec, 1, true)
		}
	}
	rec, created, err := p.store.Create(ctx, fresh)
	if errors.Is(err, idempotency.ErrInProgress) {
		return nil, &Error{Kind: idempotency.ErrInProgress, ClientOrderID: cid, Key: key, Err: err}
	}
	if err != nil {
		return nil, &Error{Kind: transport.ErrNotSent, ClientOrderID: cid, Key: key, Reason: "the intent could not be recorded", Err: err}
	}
	defer p.release(ctx, &rec, holder)
	if created {
		if c.Check != nil {
			if err := c.Check(ctx); err != nil {
				// Nothing sent. A store that vouches knows nothing was for
				// this key; one that does not keeps the intent open, for a
				// lookup to settle (an earlier process's create may exist).
				if p.vouches() {
					_ = p.setState(ctx, &rec, idempotency.NotPlaced, "refused before it was sent: "+err.Error())
				}
				return nil, err
			}
		}
		if err := p.admit(ctx, &rec, c); err != nil {
			return nil, err
		}
		return p.send(ctx, &rec, 1, false)
	}
	return p.resume(ctx, &rec, fresh.Fingerprint, c)
}

// admit asks c.Admit, if set, whether the create of rec may be sent: rec
// is recorded pending (with c.Notional) first, so that other Places
// counting the store's intents see it. A refusal settles rec as not
// placed.
func (p *Placer) admit(ctx context.Context, rec *idempotency.Record, c Create) error {
	if c.Admit == nil {
		return nil
	}
	if rec.State != idempotency.Pending || rec.Notional != c.Notional {
		next := *rec
		next.State, next.Reason, next.Notional, next.UpdatedAt = idempotency.Pending, "", c.Notional, p.clock.Now()
		if err := p.store.Update(ctx, next); err != nil {
			if errors.Is(err, idempotency.ErrClaimLost) {
				return &Error{Kind: idempotency.ErrInProgress, ClientOrderID: rec.ClientOrderID, Key: rec.Key, Err: err}
			}
			return &Error{Kind: transport.ErrNotSent, ClientOrderID: rec.ClientOrderID, Key: rec.Key, Reason: "the intent could not be recorded", Err: err}
		}
		*rec = next
	}
	if err := c.Admit(ctx, rec.ClientOrderID); err != nil {
		_ = p.setState(ctx, rec, idempotency.NotPlaced, "refused before it was sent: "+err.Error())
		return err
	}
	return nil
}

// resume answers a Place whose intent the store already held, as it
// handed it over: claimed by this call, or settled.
func (p *Placer) resume(ctx context.Context, rec *idempotency.Record, fp string, c Create) (*Facts, error) {
	cid, key := rec.ClientOrderID, rec.Key
	if rec.Fingerprint != fp {
		return nil, p.conflict(key, *rec)
	}
	switch rec.State {
	case idempotency.Acknowledged:
		order := rec.Order
		if len(order) == 0 {
			// A settled record keeps the order's id, not its JSON
			// (idempotency.Config.Retention): read it by its id.
			resp, err := p.tc.Get(ctx, ordersPath+url.PathEscape(rec.OrderID)+"/")
			if err != nil {
				return nil, &Error{Kind: transport.ErrUnknownOutcome, ClientOrderID: cid, Key: key, Answered2xx: true,
					Err: fmt.Errorf("the intent is acknowledged (order %s); reading the order: %w", rec.OrderID, err)}
			}
			order = resp.Body
		}
		o, err := p.facts(order)
		if err != nil {
			return nil, &Error{Kind: transport.ErrUnknownOutcome, ClientOrderID: cid, Key: key, Answered2xx: true,
				Err: fmt.Errorf("the intent is acknowledged (order %s) but its order does not decode: %w", rec.OrderID, err)}
		}
		o.Recorded = len(rec.Order) > 0
		return o, nil
	case idempotency.Rejected:
		return nil, &Error{Kind: transport.ErrRejected, ClientOrderID: cid, Key: key, Reason: rec.Reason}
	case idempotency.Pending, idempotency.Unknown:
		// The store handed this call the claim: whoever wrote the record
		// before can write, so send, no more.
		p.log.Info().Str("client_order_id", cid).Str("state", string(rec.State)).Msg("resuming an open intent")
		return p.reconcile(ctx, rec, 0)
	case idempotency.NotPlaced:
		if rec.Sends > 0 && p.noResend() {
			return nil, &Error{Kind: ErrNotPlaced, ClientOrderID: cid, Key: key, Reason: "settled as not placed earlier, and re-sends are forbidden (MaxSends 1): not sent again"}
		}
	}
	// NotPlaced: nothing can be at the venue; send afresh.
	if err := p.admit(ctx, rec, c); err != nil {
		return nil, err
	}
	return p.send(ctx, rec, 1, false)
}

// release gives up the claim holder took on rec, unless a write of a
// final state released it already (setState clears rec.Holder then): the
// next Place or Recover of the intent takes it up at once. It runs
// whatever became of ctx.
func (p *Placer) release(ctx context.Context, rec *idempotency.Record, holder string) {
	if holder == "" || rec.Holder != holder {
		return
	}
	if err := p.store.Release(context.WithoutCancel(ctx), rec.ClientOrderID, holder); err != nil {
		p.log.Error().Str("client_order_id", rec.ClientOrderID).Str("error", err.Error()).Msg("releasing the intent's claim")
	}
}

// conflict is the answer to a key whose intent was recorded for a
// different request: what the key names, as far as the store knows it.
func (p *Placer) conflict(key string, rec idempotency.Record) *Error {
	return &Error{Kind: transport.ErrInvalidRequest, ClientOrderID: rec.ClientOrderID, Key: key, State: rec.State, OrderID: rec.OrderID}
}

// reasonFailed is why an intent whose order the venue reports failed is
// rejected.
const reasonFailed = "the venue reports the order failed"

// errHeld stops a fresh create whose intent another holder recorded first.
var errHeld = errors.New("orders: the intent was recorded by another holder first")

// noResend reports whether the Placer sends each intent at most once:
// MaxSends 1.
func (p *Placer) noResend() bool { return p.maxSends == 1 }

// vouches reports whether the store vouches that a created intent is new.
func (p *Placer) vouches() bool {
	w, ok := p.store.(idempotency.Witness)
	return ok && w.VouchesNew()
}

// send sends the create once (the sends-th time in this call) and
// resolves its answer. Before the first send of a call there is a lookup
// first when the store does not vouch for newness, or when the transport
// has not yet read the venue's clock.
//
// fresh: the store does not hold rec yet; the hook creates it, claimed and
// stamped with the signature's time, in the one durable write before the
// create leaves. Should another holder have recorded it meanwhile, nothing
// is sent and the Place goes on with the intent as the store holds it.
func (p *Placer) send(ctx context.Context, rec *idempotency.Record, sends int, fresh bool) (*Facts, error) {
	_, measured := p.tc.ClockOffset()
	if !fresh && sends == 1 && ((rec.Key != "" && !p.vouches()) || !measured) {
		// The lookup also shows the venue's clock (its Date header), so
		// the create is stamped on it and its expiry judged by it.
		since := p.tc.VenueNow().Add(-(signing.ValidFor + p.margin() + p.lookbackFor()))
		o, raw, _, err := p.lookup(ctx, rec, since)
		if _, nowMeasured := p.tc.ClockOffset(); err != nil && p.vouches() && nowMeasured {
			// It was made for the clock alone, and read it.
			err = nil
		}
		if err != nil {
			reason := "the lookup before the first send failed (it checks the store's claim that the intent is new, and reads the venue's clock)"
			// A store that vouches knows nothing was sent for the intent:
			// not placed. One that does not may have lost an earlier
			// process's create, which may have landed: the intent stays
			// open, for the next Place or Recover to look up.
			if p.vouches() {
				if serr := p.setState(ctx, rec, idempotency.NotPlaced, reason); errors.Is(serr, idempotency.ErrClaimLost) {
					return nil, &Error{Kind: idempotency.ErrInProgress, ClientOrderID: rec.ClientOrderID, Key: rec.Key, Err: serr}
				}
			}
			return nil, &Error{Kind: transport.ErrNotSent, ClientOrderID: rec.ClientOrderID, Key: rec.Key, Reason: reason, Err: err}
		}
		if o != nil {
			p.log.Info().Str("client_order_id", rec.ClientOrderID).Msg("found at the venue before the first send")
			return p.acknowledge(ctx, rec, o, raw)
		}
	}

	var hookErr, haltErr error
	var held *idempotency.Record // fresh, and another holder recorded it first
	stored := !fresh             // the store holds the intent
	hook := func(at time.Time) error {
		if haltErr = p.halted(ctx); haltErr != nil {
			return haltErr
		}
		next := *rec
		if next.FirstSentAt.IsZero() {
			next.FirstSentAt = at
		}
		next.LastSignedAt = at
		next.Sends++
		next.State = idempotency.Pending
		next.UpdatedAt = at
		var err error
		if fresh {
			var got idempotency.Record
			var created bool
			if got, created, err = p.store.Create(ctx, next); err == nil && !created {
				held, err = &got, errHeld
			}
		} else {
			err = p.store.Update(ctx, next)
		}
		if err != nil {
			hookErr = err
			return err
		}
		*rec, stored = next, true
		p.noteSigned(rec.ClientOrderID)
		return nil
	}
	resp, err := p.tc.Send(ctx, http.MethodPost, rec.Target, rec.Body, hook)
	if held != nil {
		fp := rec.Fingerprint
		*rec = *held
		return p.resume(ctx, rec, fp, Create{}) // fresh: only a Create without Admit
	}
	p.log.Info().Str("client_order_id", rec.ClientOrderID).Int("send", sends).Bool("answered", err == nil).Msg("create sent")

	var status *transport.StatusError
	switch {
	case err == nil:
		o, derr := p.facts(resp.Body)
		switch {
		case derr != nil:
			return p.answered2xx(ctx, rec, derr)
		case o.ClientOrderID != rec.ClientOrderID:
			return p.answered2xx(ctx, rec, fmt.Errorf("the %d answer names client_order_id %q", resp.StatusCode, o.ClientOrderID))
		case o.Failed:
			// "Rejected" invites a second order under a new key: it is
			// said only once a lookup shows the order failed.
			return p.answered2xx(ctx, rec, fmt.Errorf("the %d answer reports order %s failed", resp.StatusCode, o.ID))
		}
		return p.acknowledge(ctx, rec, o, resp.Body)
	case errors.Is(err, transport.ErrUnknownOutcome) && resp != nil && resp.StatusCode >= 200 && resp.StatusCode < 300:
		// A 2xx whose body could not be read whole (too large, cut
		// off): the venue made an order. The transport returns the
		// answer with the unknown outcome in this case only.
		return p.answered2xx(ctx, rec, err)
	case haltErr != nil:
		// Refused before this send left; earlier sends, if any, were
		// resolved as not placed, as below.
		if stored {
			if serr := p.setState(ctx, rec, idempotency.NotPlaced, "not sent: "+haltErr.Error()); errors.Is(serr, idempotency.ErrClaimLost) {
				return nil, &Error{Kind: idempotency.ErrInProgress, ClientOrderID: rec.ClientOrderID, Key: rec.Key, Err: serr}
			}
		}
		return nil, haltError(rec.ClientOrderID, rec.Key, haltErr)
	case errors.Is(hookErr, idempotency.ErrInProgress):
		return nil, &Error{Kind: idempotency.ErrInProgress, ClientOrderID: rec.ClientOrderID, Key: rec.Key, Err: hookErr}
	case errors.Is(hookErr, idempotency.ErrClaimLost):
		// Another process took the intent over while this one waited:
		// it is theirs to settle; this one sends nothing.
		return nil, &Error{Kind: idempotency.ErrInProgress, ClientOrderID: rec.ClientOrderID, Key: rec.Key, Err: hookErr}
	case errors.Is(err, transport.ErrNotSent):
		// Nothing left this time. Earlier sends, if any, were already
		// resolved as not placed, or this is the first.
		if !stored {
			// Nor was anything recorded.
		} else if serr := p.setState(ctx, rec, idempotency.NotPlaced, "not sent: "+err.Error()); errors.Is(serr, idempotency.ErrClaimLost) {
			return nil, &Error{Kind: idempotency.ErrInProgress, ClientOrderID: rec.ClientOrderID, Key: rec.Key, Err: serr}
		}
		cause := err
		if hookErr != nil {
			cause = hookErr // the store could not record the signature
		}
		return nil, &Error{Kind: transport.ErrNotSent, ClientOrderID: rec.ClientOrderID, Key: rec.Key, Reason: "stopped before the create left", Err: cause}
	case errors.Is(err, transport.ErrUnknownOutcome):
		return p.markUnknown(ctx, rec, sends, err)
	case errors.As(err, &status) && status.StatusCode >= 400 && status.StatusCode < 500:
		if rec.Sends > 1 && hasField(status, "client_order_id") {
			// A resend refused for its client_order_id: the venue may
			// hold the first after all. Look again rather than guess,
			// and send no more.
			return p.markUnknown(ctx, rec, p.maxSends, err)
		}
		// The venue said no to this send, and every earlier one was
		// settled as not placed: known, even if recording it fails —
		// unless another process holds the intent now and may send it.
		if serr := p.setState(ctx, rec, idempotency.Rejected, status.Error()); errors.Is(serr, idempotency.ErrClaimLost) {
			return nil, &Error{Kind: idempotency.ErrInProgress, ClientOrderID: rec.ClientOrderID, Key: rec.Key, Err: serr}
		}
		return nil, &Error{Kind: transport.ErrRejected, ClientOrderID: rec.ClientOrderID, Key: rec.Key, Reason: status.Error(), Err: err}
	default:
		// 429, 5xx, a lost answer, a redirect, a non-2xx too large to
		// read: the create may have landed.
		return p.markUnknown(ctx, rec, sends, err)
	}
}

func hasField(se *transport.StatusError, field string) bool {
	for _, f := range se.Errors {
		if f.Attr == field {
			return true
		}
	}
	return false
}

// answered2xx handles a 2xx that is not a verdict: its order could not
// be read (it does not decode, contradicts itself, names another
// client_order_id), or it reports the order failed. An order exists. The
// intent is marked so, never sent again and never taken as not placed;
// one lookup settles it by the venue's list: the row it shows (its id and
// state, whatever the answer said), failed → rejected, live →
// acknowledged; no row → unknown.
func (p *Placer) answered2xx(ctx context.Context, rec *idempotency.Record, cause error) (*Facts, error) {
	p.noteAnswered(rec.ClientOrderID)
	rec.Answered2xx = true
	reason := "acknowledged with a 2xx that a lookup must confirm: " + cause.Error()
	if err := p.setState(ctx, rec, idempotency.Unknown, reason); errors.Is(err, idempotency.ErrClaimLost) {
		return nil, &Error{Kind: idempotency.ErrInProgress, ClientOrderID: rec.ClientOrderID, Key: rec.Key, Err: err}
	}
	o, raw, _, err := p.lookup(ctx, rec, rec.FirstSentAt.Add(-p.lookbackFor()))
	if err != nil {
		return nil, &Error{Kind: transport.ErrUnknownOutcome, ClientOrderID: rec.ClientOrderID, Key: rec.Key, Answered2xx: true,
			Err: fmt.Errorf("%v; looking it up: %w", cause, err)}
	}
	if o == nil {
		return nil, &Error{Kind: transport.ErrUnknownOutcome, ClientOrderID: rec.ClientOrderID, Key: rec.Key, Answered2xx: true,
			Err: fmt.Errorf("%v; a lookup does not show it yet", cause)}
	}
	return p.acknowledge(ctx, rec, o, raw)
}

func (p *Placer) markUnknown(ctx context.Context, rec *idempotency.Record, sends int, cause error) (*Facts, error) {
	if err := p.setState(ctx, rec, idempotency.Unknown, cause.Error()); errors.Is(err, idempotency.ErrClaimLost) {
		return nil, &Error{Kind: idempotency.ErrInProgress, ClientOrderID: rec.ClientOrderID, Key: rec.Key, Err: err}
	}
	// Any other failure to record it leaves the intent pending, which is
	// open too: whoever reads it next looks it up.
	if rec.Key == "" {
		return nil, &Error{Kind: transport.ErrUnknownOutcome, ClientOrderID: rec.ClientOrderID, Key: rec.Key, Err: cause}
	}
	return p.reconcile(ctx, rec, sends)
}

// reconcile looks the order up until it is found or known absent, then
// sends again if the cap allows. sends counts this call's sends so far.
func (p *Placer) reconcile(ctx context.Context, rec *idempotency.Record, sends int) (*Facts, error) {
	unknown := func(err error) error {
		return &Error{Kind: transport.ErrUnknownOutcome, ClientOrderID: rec.ClientOrderID, Key: rec.Key, Answered2xx: p.wasAnswered(rec), Err: err}
	}
	for {
		if rec.Sends == 0 {
			// Recorded but never signed: nothing of this intent can be at
			// the venue (send looks first if the store cannot vouch).
			return p.send(ctx, rec, sends+1, false)
		}
		o, raw, read, err := p.lookup(ctx, rec, rec.FirstSentAt.Add(-p.lookbackFor()))
		if err != nil {
			return nil, unknown(err)
		}
		if o != nil {
			return p.acknowledge(ctx, rec, o, raw)
		}
		if p.wasAnswered(rec) {
			return nil, unknown(errors.New("the venue acknowledged the create with a 2xx; a lookup does not show its order yet"))
		}
		if wait := p.untilExpired(*rec, read); wait > 0 {
			// The read began while a signature could still land: an order
			// created behind it, after it read the first page, would not
			// be on it. Wait for the expiry and read again.
			p.log.Info().Str("client_order_id", rec.ClientOrderID).Dur("wait", wait).Msg("not found; waiting until every signature has expired")
			if err := p.sleep(ctx, wait); err != nil {
				return nil, unknown(err)
			}
			continue
		}
		if p.noResend() {
			// Re-sends are forbidden: a venue whose list may lag past the
			// wait could hold the order unseen, so "not found" settles
			// nothing.
			reason := fmt.Sprintf("not found after %d send(s) and the expiry of every signature; re-sends are forbidden (MaxSends 1), so it stays unknown", rec.Sends)
			if err := p.setState(ctx, rec, idempotency.Unknown, reason); errors.Is(err, idempotency.ErrClaimLost) {
				return nil, &Error{Kind: idempotency.ErrInProgress, ClientOrderID: rec.ClientOrderID, Key: rec.Key, Err: err}
			}
			return nil, unknown(errors.New(reason))
		}
		if rec.Key == "" || sends >= p.maxSends {
			reason := fmt.Sprintf("not found after %d send(s) and the expiry of every signature", rec.Sends)
			if err := p.setState(ctx, rec, idempotency.NotPlaced, reason); errors.Is(err, idempotency.ErrClaimLost) {
				return nil, &Error{Kind: idempotency.ErrInProgress, ClientOrderID: rec.ClientOrderID, Key: rec.Key, Err: err}
			}
			return nil, &Error{Kind: ErrNotPlaced, ClientOrderID: rec.ClientOrderID, Key: rec.Key, Reason: reason}
		}
		p.log.Info().Str("client_order_id", rec.ClientOrderID).Msg("not placed; sending the same create again")
		return p.send(ctx, rec, sends+1, false)
	}
}

// margin is what is added to a signature's validity before a create is
// taken as unable to land: the skew floor, plus the largest clock offset
// the transport accepts while the offset is not measured.
func (p *Placer) margin() time.Duration {
	if _, measured := p.tc.ClockOffset(); measured {
		return p.skew
	}
	return p.skew + transport.MaxClockOffset
}

// lookbackFor is how long before the first send a lookup starts listing
// orders: the lookback floor plus the measured offset either way, or the
// largest offset accepted while it is not measured.
func (p *Placer) lookbackFor() time.Duration {
	off, measured := p.tc.ClockOffset()
	if !measured {
		return p.lookback + transport.MaxClockOffset
	}
	return p.lookback + off.Abs()
}

// expiry is when, on the venue's clock, no signature the create was sent
// with can be accepted.
func (p *Placer) expiry(rec idempotency.Record) time.Time {
	return rec.LastSignedAt.Add(signing.ValidFor + p.margin())
}

// untilExpired says how long to wait before a read can show that no
// signature of rec's create can still land, given a read that found
// nothing: 0 when that read already began after every signature expired.
//
// Expiry is judged in one frame at a time, never across two: a
// signature's time is the timestamp the venue checks, so it is compared
// with the venue's own clock as the read's first answer showed it (its
// Date), not with this machine's clock corrected by an offset measured at
// another moment; and a create this Placer signed must also have been
// signed validity + margin before the read began on this Placer's clock
// (monotonic in a real process), so neither a step of the wall clock nor
// a new offset estimate nor a venue whose answers disagree on the time
// can shorten the wait.
func (p *Placer) untilExpired(rec idempotency.Record, r readTime) time.Duration {
	var wait time.Duration
	if left := p.expiry(rec).Sub(r.venue); left > 0 {
		// The venue's clock runs as fast as this one: after left, a read's
		// Date shows the expiry passed (a second more for its truncation).
		wait = left + time.Second
	}
	p.amu.Lock()
	at, ok := p.signed[rec.ClientOrderID]
	p.amu.Unlock()
	if ok {
		if left := signing.ValidFor + p.margin() - r.local.Sub(at); left > wait {
			wait = left
		}
	}
	return wait
}

// noteSigned remembers, on this Placer's clock, that it just signed a
// create of cid. Signatures older than a signature's validity and the
// margin no longer hold any wait back, and are forgotten on the way, so
// that intents settled elsewhere do not keep theirs.
func (p *Placer) noteSigned(cid string) {
	now := p.clock.Now()
	p.amu.Lock()
	defer p.amu.Unlock()
	if len(p.signed) >= 64 && len(p.signed)&63 == 0 {
		for id, at := range p.signed {
			if now.Sub(at) > signing.ValidFor+p.skew+transport.MaxClockOffset {
				delete(p.signed, id)
			}
		}
	}
	p.signed[cid] = now
}

// acknowledge records that the venue holds o. An order in state failed
// is a rejection. A failure to record an acknowledgement still
// returns the order (it exists; a later Place finds it again by lookup);
// a failure to record a rejection returns it as known, unless the claim
// was lost.
func (p *Placer) acknowledge(ctx context.Context, rec *idempotency.Record, o *Facts, raw []byte) (*Facts, error) {
	rec.OrderID = o.ID
	if o.Failed {
		reason := reasonFailed
		if err := p.setState(ctx, rec, idempotency.Rejected, reason); errors.Is(err, idempotency.ErrClaimLost) {
			return nil, &Error{Kind: idempotency.ErrInProgress, ClientOrderID: rec.ClientOrderID, Key: rec.Key, Err: err}
		}
		return nil, &Error{Kind: transport.ErrRejected, ClientOrderID: rec.ClientOrderID, Key: rec.Key, Reason: reason}
	}
	rec.Order = raw
	_ = p.setState(ctx, rec, idempotency.Acknowledged, "")
	return o, nil
}

// setState records the intent in state s. A failure is logged and
// returned: the caller decides what it may still say.
func (p *Placer) setState(ctx context.Context, rec *idempotency.Record, s idempotency.State, reason string) error {
	prev := rec.State
	rec.State = s
	rec.Reason = reason
	rec.UpdatedAt = p.clock.Now()
	if !s.Open() {
		p.amu.Lock()
		delete(p.signed, rec.ClientOrderID)
		p.amu.Unlock()
	}
	if err := p.store.Update(ctx, *rec); err != nil {
		p.log.Error().Str("client_order_id", rec.ClientOrderID).Str("state", string(s)).Str("error", err.Error()).Msg("recording the intent")
		return err
	}
	if !s.Open() {
		rec.Holder = "" // the store released the claim with this write
	}
	p.tel.settled(ctx, prev, s)
	return nil
}

// noteAnswered remembers, for the life of the Placer, that a 2xx answered
// a create of cid, in case the store could not record it.
func (p *Placer) noteAnswered(cid string) {
	p.amu.Lock()
	p.answered[cid] = true
	p.amu.Unlock()
}

// wasAnswered reports whether a 2xx answered a create of rec, by the
// store's record or this Placer's memory.
func (p *Placer) wasAnswered(rec *idempotency.Record) bool {
	if rec.Answered2xx {
		return true
	}
	p.amu.Lock()
	defer p.amu.Unlock()
	return p.answered[rec.ClientOrderID]
}

func (p *Placer) sleep(ctx context.Context, d time.Duration) error {
	return adaptive.Sleep(ctx, p.clock, d)
}

func (p *Placer) facts(b []byte) (*Facts, error) {
	o, err := p.codec.Facts(b)
	if err != nil {
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

// errLocked: another call of this Placer works on the intent.
var errLocked = fmt.Errorf("another call of this Placer works on the intent: %w", idempotency.ErrInProgress)

// tryLock is lock that does not wait: it fails with errLocked when
// another call holds id.
func (p *Placer) tryLock(_ context.Context, id string) (func(), error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	l := p.locks[id]
	if l == nil {
		l = &keyLock{ch: make(chan struct{}, 1)}
		p.locks[id] = l
	}
	select {
	case l.ch <- struct{}{}:
	default:
		return nil, errLocked
	}
	l.refs++
	return func() {
		<-l.ch
		p.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(p.locks, id)
		}
		p.mu.Unlock()
	}, nil
}

// fingerprint identifies a create: a key names one request only.
func fingerprint(body []byte) string {
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:])
}
