package orders

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/signing"
	"github.com/tradewire/tradewire/transport"
)

// Recover settles every pending or unknown intent in the store by lookup,
// without placing anything: found → acknowledged; not found once every
// signature it was sent with has expired → not placed (waiting on the
// clock for that when needed). An intent a 2xx answered is never taken as
// not placed, nor, with Config.MaxSends 1, any intent that was sent. Run it
// at start-up, before placing.
//
// The intents of one symbol are looked up together: one read of the
// orders list, reaching back as far as the earliest of their windows,
// answers them all, so the requests Recover sends do not grow with the
// number of intents (see the package documentation, # Restarts). Each
// intent is still claimed on its own; what one read settles is recorded
// with one commit when the store can batch (idempotency.BatchUpdater, as
// the bolt file and the memory and Redis stores do), one update per
// intent otherwise. Listing the open intents costs what is open, not the
// store's history.
//
// It calls each once for every open intent of the account, in the store's
// order, with the record as Recover left it and what became of it:
//
//   - nil: settled; the record's State is Acknowledged (the venue holds
//     the order), Rejected (the venue reports it failed) or NotPlaced (no
//     order, recorded so).
//   - an *Error of Kind idempotency.ErrInProgress: another holder
//     sharing the store holds the intent, or took it over while Recover
//     worked on it; it is left to that holder.
//   - an *Error of Kind transport.ErrUnknownOutcome: unresolved, and it may
//     have an order at the venue: a lookup failed or could not see every
//     order, the context ended while waiting for signatures to expire, a
//     2xx answered the create but its order is not listed yet
//     (Answered2xx), re-sends are forbidden and the order is not found
//     (MaxSends 1), or the store would not record the outcome.
//
// Recover returns the store's error when it cannot list the intents, and
// the context's when it ended (each has been called for the intents
// handled by then).
func (p *Placer) Recover(ctx context.Context, each func(rec idempotency.Record, err error)) error {
	return p.recoverAll(ctx, true, each)
}

// errNotExpired: Settle does not wait for signatures to expire.
var errNotExpired = errors.New("not found, and a signature it was sent with has not yet expired")

// Settle is Recover without waiting, for a caller that comes back (a
// watch of the account's orders): it settles by the same rules and one
// read of the orders list per symbol what it can at once, and leaves the
// rest. An intent another call of this Placer works on is left to it,
// reported with an *Error of Kind idempotency.ErrInProgress, as one
// another holder sharing the store claims; one not found whose signatures
// have not all expired by the read is left unresolved (Kind
// transport.ErrUnknownOutcome), as is any Recover cannot settle. Unlike
// Recover, it calls each with a nil error only for the intents whose
// settled state it wrote, not for those it found settled by another
// holder, so that of several callers sharing a store one reports each.
func (p *Placer) Settle(ctx context.Context, each func(rec idempotency.Record, err error)) error {
	return p.recoverAll(ctx, false, each)
}

// recoverAll is Recover, waiting for signatures to expire and for this
// Placer's other calls on an intent when patient.
func (p *Placer) recoverAll(ctx context.Context, patient bool, each func(rec idempotency.Record, err error)) error {
	open, err := p.store.List(ctx, idempotency.Pending, idempotency.Unknown)
	if err != nil {
		return err
	}
	var mine []idempotency.Record
	for _, rec := range open {
		if rec.AccountNumber == p.account {
			mine = append(mine, rec)
		}
	}
	bySymbol := map[string][]int{}
	var symbols []string
	for i, rec := range mine {
		if _, ok := bySymbol[rec.Symbol]; !ok {
			symbols = append(symbols, rec.Symbol)
		}
		bySymbol[rec.Symbol] = append(bySymbol[rec.Symbol], i)
	}
	results := make([]*recovered, len(mine))
	holder := uuid.NewString() // this Recover's claims
	var ended error
	for _, sym := range symbols {
		group := make([]*recovered, len(bySymbol[sym]))
		for k, i := range bySymbol[sym] {
			group[k] = &recovered{rec: mine[i]}
			group[k].rec.Holder = holder
			results[i] = group[k]
		}
		p.recoverGroup(ctx, sym, group, patient)
		if unresolved(group) {
			select { // read Err only once done: some contexts block in it
			case <-ctx.Done():
				ended = ctx.Err()
			default:
			}
		}
		if ended != nil {
			break
		}
	}
	for _, r := range results {
		if r == nil || !r.done {
			continue
		}
		rec, err := r.report()
		if !patient && err == nil && !r.recorded {
			continue // settled by another holder, not by this call
		}
		each(rec, err)
	}
	return ended
}

// recovered is one intent as Recover works on it: its record, and once
// done, the error that settled or left it (see report).
type recovered struct {
	rec    idempotency.Record
	err    error
	done   bool
	unlock func()
	// recorded: this call wrote the intent's settled state.
	recorded bool
}

// finish records what became of the intent and releases its lock.
func (r *recovered) finish(err error) {
	r.err, r.done = err, true
	if r.unlock != nil {
		r.unlock()
		r.unlock = nil
	}
}

// report is what Recover tells its caller of the intent. An error matching
// idempotency.ErrInProgress or ErrClaimLost means another process holds
// it; any other error leaves it unresolved.
func (r *recovered) report() (idempotency.Record, error) {
	rec, err := r.rec, r.err
	switch {
	case errors.Is(err, idempotency.ErrInProgress), errors.Is(err, idempotency.ErrClaimLost):
		return rec, &Error{Kind: idempotency.ErrInProgress, ClientOrderID: rec.ClientOrderID, Key: rec.Key, Err: err}
	case err == nil && rec.State != idempotency.Acknowledged && rec.State != idempotency.Rejected && rec.State != idempotency.NotPlaced:
		err = fmt.Errorf("the intent is still %s", rec.State)
		fallthrough
	case err != nil:
		return rec, &Error{Kind: transport.ErrUnknownOutcome, ClientOrderID: rec.ClientOrderID, Key: rec.Key,
			Answered2xx: rec.Answered2xx, Err: err}
	}
	return rec, nil
}

// unresolved reports whether an intent of the group was left open for a
// reason other than another process holding it.
func unresolved(group []*recovered) bool {
	for _, r := range group {
		if r.done && r.err != nil && !errors.Is(r.err, idempotency.ErrInProgress) && !errors.Is(r.err, idempotency.ErrClaimLost) {
			return true
		}
	}
	return false
}

// errUnread: a 2xx answered the create, and its order is not listed yet.
var errUnread = errors.New("a 2xx answered the create, and its order is not listed yet")

// recoverGroup settles the open intents of one symbol. Each is locked in
// this process and claimed in the store on its own; the reads of the
// orders list are shared (lookupAll). An intent not found by a read that
// began before its last signature expired waits for the expiry and is
// looked up again, with the others still waiting, in one more read.
// Without patient, an intent locked by another call of this Placer is left
// to it, and one whose signatures have not expired is left unresolved.
func (p *Placer) recoverGroup(ctx context.Context, symbol string, group []*recovered, patient bool) {
	holder := ""
	if len(group) > 0 {
		holder = group[0].rec.Holder
	}
	defer func() { // every path finishes each intent; this releases any left
		for _, r := range group {
			if !r.done {
				r.finish(errors.New("recover: left unsettled"))
			}
			p.release(ctx, &r.rec, holder)
		}
	}()
	// Lock in client_order_id order, so that two Recovers of one process
	// never wait on each other in a cycle; Place takes one lock only.
	byID := slices.Clone(group)
	slices.SortFunc(byID, func(a, b *recovered) int { return strings.Compare(a.rec.ClientOrderID, b.rec.ClientOrderID) })
	for _, r := range byID {
		lock := p.lock
		if !patient {
			lock = p.tryLock
		}
		unlock, err := lock(ctx, r.rec.ClientOrderID)
		if err != nil {
			r.finish(err)
			continue
		}
		r.unlock = unlock
	}
	var active []*recovered
	var settle settlements
	for _, r := range group {
		if !r.done && p.claim(ctx, r, &settle) {
			active = append(active, r)
		}
	}
	p.recordAll(ctx, settle)
	for round := 0; len(active) > 0; round++ {
		if round > 0 {
			// Renew each claim before reading again: a store shared by
			// several processes lets a claim lapse after a quiet lease.
			kept := active[:0]
			settle = nil
			for _, r := range active {
				if p.claim(ctx, r, &settle) {
					kept = append(kept, r)
				}
			}
			p.recordAll(ctx, settle)
			if active = kept; len(active) == 0 {
				return
			}
		}
		answers := p.lookupAll(ctx, symbol, active)
		var waiting []*recovered
		var wait time.Duration // the longest wait among the waiting
		settle = nil
		for k, r := range active {
			a, rec := answers[k], &r.rec
			switch {
			case a.found != nil:
				rec.OrderID = a.found.facts.ID
				if a.found.facts.Failed {
					settle.add(r, idempotency.Rejected, reasonFailed, settleRejected) // as acknowledge decides
				} else {
					rec.Order = a.found.raw
					settle.add(r, idempotency.Acknowledged, "", settleAcknowledged)
				}
			case a.err != nil:
				r.finish(a.err)
			case rec.Sends == 0:
				settle.add(r, idempotency.NotPlaced, "recorded but never sent, and not found at the venue", settleNotPlaced)
			case p.wasAnswered(rec):
				r.finish(errUnread)
			case p.untilExpired(*rec, a.asOf) > 0:
				waiting = append(waiting, r)
				wait = max(wait, p.untilExpired(*rec, a.asOf))
			case p.noResend():
				r.finish(fmt.Errorf("recover: not found after %d send(s) and the expiry of every signature; re-sends are forbidden (MaxSends 1), so it stays unknown", rec.Sends))
			default:
				reason := fmt.Sprintf("recover: not found after %d send(s) and the expiry of every signature", rec.Sends)
				settle.add(r, idempotency.NotPlaced, reason, settleNotPlaced)
			}
		}
		p.recordAll(ctx, settle)
		if len(waiting) > 0 && !patient {
			for _, r := range waiting {
				r.finish(errNotExpired)
			}
			return
		}
		if len(waiting) > 0 {
			if err := p.sleep(ctx, wait); err != nil {
				for _, r := range waiting {
					r.finish(err)
				}
				return
			}
		}
		active = waiting
	}
}

// claim claims r's intent in the store (or renews the claim), taking the
// record as the store holds it, and adds to settle what needs no lookup.
// It reports whether the intent is still to be looked up.
func (p *Placer) claim(ctx context.Context, r *recovered, settle *settlements) bool {
	// A store shared by several processes lets only the holder of an
	// intent change it. A local store returns it as it is.
	fresh, _, err := p.store.Create(ctx, r.rec)
	if err != nil {
		r.finish(err)
		return false
	}
	r.rec = fresh
	switch {
	case !fresh.State.Open():
		r.finish(nil)
		return false
	case fresh.Sends == 0 && p.vouches():
		settle.add(r, idempotency.NotPlaced, "recorded but never sent", settleNotPlaced)
		return false
	}
	return true
}

// What Recover settles an intent as: the outcomes differ in what a failed
// write of it leaves to report.
const (
	// settleAcknowledged: the venue holds the order; that stays true
	// whether or not the store records it.
	settleAcknowledged = iota
	// settleRejected: the venue reports the order failed; that stays
	// true, unless another holder took the intent over.
	settleRejected
	// settleNotPlaced: settled only once recorded.
	settleNotPlaced
)

// settlements are the outcomes Recover has reached and not yet recorded.
type settlements []settlement

type settlement struct {
	r    *recovered
	kind int
	prev idempotency.State // before the settlement
}

// add sets r's record to state s with reason, to be recorded.
func (ss *settlements) add(r *recovered, s idempotency.State, reason string, kind int) {
	prev := r.rec.State
	r.rec.State, r.rec.Reason = s, reason
	*ss = append(*ss, settlement{r: r, kind: kind, prev: prev})
}

// recordAll records the settlements, with one commit when the store can
// make several updates durable at once (idempotency.BatchUpdater), and
// finishes each intent with what it may report.
func (p *Placer) recordAll(ctx context.Context, ss settlements) {
	if len(ss) == 0 {
		return
	}
	now := p.clock.Now()
	recs := make([]idempotency.Record, len(ss))
	for i, s := range ss {
		s.r.rec.UpdatedAt = now
		recs[i] = s.r.rec
		p.amu.Lock()
		delete(p.signed, s.r.rec.ClientOrderID)
		p.amu.Unlock()
	}
	var errs []error
	if b, ok := p.store.(idempotency.BatchUpdater); ok {
		errs = b.UpdateAll(ctx, recs)
	} else {
		errs = make([]error, len(recs))
		for i, rec := range recs {
			errs[i] = p.store.Update(ctx, rec)
		}
	}
	for i, s := range ss {
		err, rec := errs[i], &s.r.rec
		if err != nil {
			p.log.Error().Str("client_order_id", rec.ClientOrderID).Str("state", string(rec.State)).Str("error", err.Error()).Msg("recording the intent")
		} else {
			rec.Holder = "" // the store released the claim with this write
			s.r.recorded = true
			p.tel.settled(ctx, s.prev, rec.State)
		}
		switch {
		case s.kind == settleAcknowledged:
			err = nil
		case s.kind == settleRejected && !errors.Is(err, idempotency.ErrClaimLost):
			err = nil
		}
		s.r.finish(err)
	}
}

// answer is what the reads of lookupAll say of one intent: its order, or
// that a read covering its window saw every order and not this one (asOf:
// when that read began), or why they could not tell (err).
type answer struct {
	found *sighting
	asOf  readTime
	err   error
}

// lookupAll looks up the intents of one symbol, sharing the reads of the
// orders list among them: the requests it sends depend on how many
// orders the venue lists, not on how many intents it looks for.
//
// Each intent's own lookup would list the orders created since its window
// starts (recoverSince) up to now; all those windows end at now, so the
// widest contains every other. One read of the widest, matched against
// every client_order_id, answers each intent as its own lookup would:
//
//   - found: a row with the intent's client_order_id is its order (the id
//     is derived from the account, namespace and key), wherever in the
//     wider window it lies;
//   - not found, the read complete: every order of the intent's own
//     window was read, and none is its order;
//   - the read incomplete: no intent it did not find is concluded absent,
//     even when what went wrong lies outside that intent's own window.
//
// An incomplete read (errLookupIncomplete: the page cap, a row or page
// that does not decode, a next link that vanished or repeats) of the
// widest window does not condemn the narrower ones: a narrower window
// holds no more orders, so it may be read whole. lookupAll then bisects
// over the windows, widest to narrowest, for the widest that reads
// whole; each read answers the intents whose windows it covers, and any
// intent it finds. That costs one read, or 1 + ⌈log₂ n⌉ for n distinct
// windows when the widest cannot be read whole. A failure of the venue or
// the transport ends the lookup: every intent not found takes it.
func (p *Placer) lookupAll(ctx context.Context, symbol string, intents []*recovered) []answer {
	answers := make([]answer, len(intents))
	since := make([]time.Time, len(intents))
	for k, r := range intents {
		since[k] = p.recoverSince(r.rec)
	}
	answered := make([]bool, len(intents))
	// read reads the window starting at s: it answers every intent it
	// finds, and, if it saw every order, every intent whose window it
	// covers.
	read := func(s time.Time) listing {
		want := map[string]bool{}
		for k, r := range intents {
			if !answered[k] {
				want[r.rec.ClientOrderID] = true
			}
		}
		l := p.find(ctx, symbol, s, want)
		for k, r := range intents {
			if answered[k] {
				continue
			}
			if f, ok := l.found[r.rec.ClientOrderID]; ok {
				answers[k], answered[k] = answer{found: &f}, true
			} else if l.err == nil && !since[k].Before(s) {
				answers[k], answered[k] = answer{asOf: l.asOf}, true
			}
		}
		return l
	}
	fail := func(err error) {
		for k := range intents {
			if !answered[k] {
				answers[k], answered[k] = answer{err: err}, true
			}
		}
	}
	windows := slices.Clone(since)
	slices.SortFunc(windows, func(a, b time.Time) int { return a.Compare(b) })
	windows = slices.Compact(windows)
	first := read(windows[0])
	switch {
	case first.err == nil:
		return answers
	case !first.incomplete():
		fail(first.err)
		return answers
	}
	// windows[:lo] cannot be read whole; windows[hi:] are answered.
	lo, hi := 1, len(windows)
	for lo < hi {
		mid := (lo + hi) / 2
		switch l := read(windows[mid]); {
		case l.err == nil:
			hi = mid
		case l.incomplete():
			lo = mid + 1
		default:
			fail(l.err)
			return answers
		}
	}
	fail(first.err)
	return answers
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
