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

// RecoverReport says what Recover found.
type RecoverReport struct {
	// Acknowledged: intents whose order the venue holds.
	Acknowledged []idempotency.Record
	// Rejected: intents whose order the venue reports failed.
	Rejected []idempotency.Record
	// NotPlaced: intents with no order, whose signatures have all expired,
	// recorded so.
	NotPlaced []idempotency.Record
	// Unresolved: intents Recover could not settle: a lookup failed or
	// could not see every order, the context ended while waiting for
	// signatures to expire, a 2xx answered the create but its order is not
	// listed yet (Answered2xx), re-sends are forbidden and the order is not
	// found (WithMaxSends(1)), or the store would not record the outcome.
	// Each may have an order at the venue.
	Unresolved []idempotency.Record
	// InProgress: intents another process sharing the store holds, or
	// took over while Recover worked on them; they are left to it.
	InProgress []idempotency.Record
}

// Recover settles every pending or unknown intent in the store by lookup,
// without placing anything: found → acknowledged; not found once every
// signature it was sent with has expired → not placed (waiting on the
// clock for that when needed). An intent a 2xx answered is never taken as
// not placed, nor, with WithMaxSends(1), any intent that was sent. Run it
// at start-up, before placing.
func (p *Placer) Recover(ctx context.Context) (RecoverReport, error) {
	var rep RecoverReport
	open, err := p.store.List(ctx, idempotency.Pending, idempotency.Unknown)
	if err != nil {
		return rep, err
	}
	for _, rec := range open {
		if rec.AccountNumber != p.account {
			continue
		}
		settled, err := p.recoverOne(ctx, rec)
		switch {
		case errors.Is(err, idempotency.ErrInProgress), errors.Is(err, idempotency.ErrClaimLost):
			rep.InProgress = append(rep.InProgress, settled)
		case err != nil:
			rep.Unresolved = append(rep.Unresolved, settled)
			select { // read Err only once done: some contexts block in it
			case <-ctx.Done():
				return rep, ctx.Err()
			default:
			}
		case settled.State == idempotency.Acknowledged:
			rep.Acknowledged = append(rep.Acknowledged, settled)
		case settled.State == idempotency.Rejected:
			rep.Rejected = append(rep.Rejected, settled)
		case settled.State == idempotency.NotPlaced:
			rep.NotPlaced = append(rep.NotPlaced, settled)
		default:
			rep.Unresolved = append(rep.Unresolved, settled)
		}
	}
	return rep, nil
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
		o, raw, err := p.lookup(ctx, &rec, p.recoverSince(rec))
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
