package orders

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/signing"
	"github.com/tradewire/tradewire/transport"
)

// Recover settles every pending or unknown intent in the store by lookup,
// without placing anything: found → acknowledged; not found once every
// signature it was sent with has expired → not placed (waiting on the
// clock for that when needed). An intent a 2xx answered is never taken as
// not placed, nor, with WithMaxSends(1), any intent that was sent. Run it
// at start-up, before placing.
//
// It calls each once for every open intent of the account, in the store's
// order, with the record as Recover left it and what became of it:
//
//   - nil: settled; the record's State is Acknowledged (the venue holds
//     the order), Rejected (the venue reports it failed) or NotPlaced (no
//     order, recorded so).
//   - an *Error of Kind idempotency.ErrInProgress: another process
//     sharing the store holds the intent, or took it over while Recover
//     worked on it; it is left to that process.
//   - an *Error of Kind transport.ErrUnknownOutcome: unresolved, and it may
//     have an order at the venue: a lookup failed or could not see every
//     order, the context ended while waiting for signatures to expire, a
//     2xx answered the create but its order is not listed yet
//     (Answered2xx), re-sends are forbidden and the order is not found
//     (WithMaxSends(1)), or the store would not record the outcome.
//
// Recover returns the store's error when it cannot list the intents, and
// the context's when it ended (each has been called for the intents
// handled by then).
func (p *Placer) Recover(ctx context.Context, each func(rec idempotency.Record, err error)) error {
	open, err := p.store.List(ctx, idempotency.Pending, idempotency.Unknown)
	if err != nil {
		return err
	}
	for _, rec := range open {
		if rec.AccountNumber != p.account {
			continue
		}
		settled, err := p.recoverOne(ctx, rec)
		switch {
		case errors.Is(err, idempotency.ErrInProgress), errors.Is(err, idempotency.ErrClaimLost):
			each(settled, &Error{Kind: idempotency.ErrInProgress, ClientOrderID: settled.ClientOrderID, Key: settled.Key, Err: err})
		case err == nil && settled.State != idempotency.Acknowledged && settled.State != idempotency.Rejected && settled.State != idempotency.NotPlaced:
			err = fmt.Errorf("the intent is still %s", settled.State)
			fallthrough
		case err != nil:
			each(settled, &Error{Kind: transport.ErrUnknownOutcome, ClientOrderID: settled.ClientOrderID, Key: settled.Key,
				Answered2xx: settled.Answered2xx, Err: err})
			select { // read Err only once done: some contexts block in it
			case <-ctx.Done():
				return ctx.Err()
			default:
			}
		default:
			each(settled, nil)
		}
	}
	return nil
}

// errUnread: a 2xx answered the create, and its order is not listed yet.
var errUnread = errors.New("a 2xx answered the create, and its order is not listed yet")

// recoverOne settles one intent. An error matching idempotency.ErrInProgress
// or ErrClaimLost means another process holds it; any other error leaves
// it unresolved.
func (p *Placer) recoverOne(ctx context.Context, rec idempotency.Record) (idempotency.Record, error) {
	unlock, err := p.lock(ctx, rec.ClientOrderID)
	if err != nil {
		return rec, err
	}
	defer unlock()
	// Claim it first: a store shared by several processes lets only the
	// holder of an intent change it. A local store returns it as it is.
	fresh, _, err := p.store.Create(ctx, rec)
	if err != nil {
		return rec, err
	}
	rec = fresh
	if !rec.State.Open() {
		return rec, nil
	}
	for {
		if rec.Sends == 0 && p.vouches() {
			return rec, p.setState(ctx, &rec, idempotency.NotPlaced, "recorded but never sent")
		}
		// A store that cannot vouch may have lost the record of a send.
		o, raw, _, err := p.lookup(ctx, &rec, p.recoverSince(rec))
		if err != nil {
			return rec, err
		}
		if o != nil {
			_, err := p.acknowledge(ctx, &rec, o, raw)
			if e, ok := err.(*Error); ok && e.Kind == transport.ErrRejected {
				err = nil
			}
			if e, ok := err.(*Error); ok && e.Kind == idempotency.ErrInProgress {
				err = idempotency.ErrClaimLost
			}
			return rec, err
		}
		if rec.Sends == 0 {
			return rec, p.setState(ctx, &rec, idempotency.NotPlaced, "recorded but never sent, and not found at the venue")
		}
		if p.wasAnswered(&rec) {
			return rec, errUnread
		}
		if wait := p.expiry(rec).Sub(p.tc.VenueNow()); wait > 0 {
			if err := p.sleep(ctx, wait); err != nil {
				return rec, err
			}
			continue
		}
		if p.noResend() {
			return rec, fmt.Errorf("recover: not found after %d send(s) and the expiry of every signature; re-sends are forbidden (WithMaxSends(1)), so it stays unknown", rec.Sends)
		}
		reason := fmt.Sprintf("recover: not found after %d send(s) and the expiry of every signature", rec.Sends)
		return rec, p.setState(ctx, &rec, idempotency.NotPlaced, reason)
	}
}

// recoverSince is where Recover's lookup starts: before the first send,
// or, for an intent with no send recorded, as far back as a recent create
// could have been signed.
func (p *Placer) recoverSince(rec idempotency.Record) time.Time {
	if rec.Sends == 0 {
		return p.tc.VenueNow().Add(-(signing.ValidFor + p.margin() + p.lookbackFor()))
	}
	return rec.FirstSentAt.Add(-p.lookbackFor())
}
