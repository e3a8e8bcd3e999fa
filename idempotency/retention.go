package idempotency

import (
	"context"
	"fmt"
	"time"
)

// defaultRetention is how long a store keeps a settled intent
// (acknowledged, rejected, not placed) after it settled, unless
// Config.Retention says otherwise: 7 days.
//
// Until then, Place of its key answers from the record: the order it
// placed, the rejection, or (not placed) a fresh send under the record's
// claim. Once the record is deleted the key is new again: Place records a
// new intent and sends a create, so a key reused after the retention can
// place a second order (the client_order_id is the same, and a venue that
// accepts a reused one makes a second order). A job queue that may
// re-deliver a job later than that needs a longer retention. Stripe keeps
// its keys 24 h; 7 days outlasts a job queue's redelivery after a long
// weekend's outage, at about 250 bytes per settled intent in the bolt
// file (a day at one order every 5 s fits in 4 MiB).
const defaultRetention = 7 * 24 * time.Hour

// minRetention is the shortest retention Open accepts.
const minRetention = time.Hour

// Config configures the store Open returns. The zero Config keeps a
// settled intent 7 days.
type Config struct {
	// Retention is how long a settled intent (acknowledged, rejected, not
	// placed) is kept after it settled; at least an hour. Until then,
	// Place of its key answers from the record; once it is deleted the key
	// is new again: Place records a new intent and sends a create, so a
	// key reused after the retention can place a second order. A job
	// queue that may re-deliver a job later than that needs a longer
	// retention. Zero means 7 days (Stripe keeps its keys 24 h; 7 days
	// outlasts a job queue's redelivery after a long weekend's outage, at
	// about 250 bytes per settled intent in the bolt file).
	Retention time.Duration
}

func (c Config) retention() (time.Duration, error) {
	if c.Retention == 0 {
		return defaultRetention, nil
	}
	if c.Retention < minRetention {
		return 0, fmt.Errorf("idempotency: Retention %v: want at least %v", c.Retention, minRetention)
	}
	return c.Retention, nil
}

// purgeBatch bounds how many settled intents one write deletes (the bolt
// store: looks at), so that the cost of retention is spread over the
// writes.
const purgeBatch = 16

// RecentLister is implemented by a Store that can leave the intents
// settled long ago out of a listing without reading them whole. The risk
// limits of package broker, which count the last day's orders, use it
// when the store has it, so that a store holding a week of settled
// intents is not decoded whole on every Place.
type RecentLister interface {
	// ListRecent is List, except that a settled record (not Open) whose
	// UpdatedAt and LastSignedAt are both before since may be left out.
	ListRecent(ctx context.Context, since time.Time, states ...State) ([]Record, error)
}

// settledBefore reports whether a record settled before since: not
// open, and its UpdatedAt and LastSignedAt both before since.
func settledBefore(rec Record, since time.Time) bool {
	return !rec.State.Open() && rec.UpdatedAt.Before(since) && rec.LastSignedAt.Before(since)
}

// BatchUpdater is implemented by a Store that can make several updates
// durable in one commit. orders.Placer's Recover uses it, when the store
// has it, to record what it settled with one commit per lookup instead of
// one per intent.
type BatchUpdater interface {
	// UpdateAll applies each record as Update would, under the same claim
	// rules, and makes every one it applied durable with one commit. It
	// returns one error per record, nil for each one written: ErrNotFound,
	// an error matching ErrClaimLost, or the commit's failure (then for
	// every record: none was written).
	UpdateAll(ctx context.Context, recs []Record) []error
}

// compacted returns rec as a store keeps it once it is settled: without
// the create's Body and Target and the order's JSON, which no answer
// about a settled intent needs (its OrderID, State and Reason stay). An
// open record is returned whole.
func compacted(rec Record) Record {
	if rec.State.Open() {
		return rec
	}
	rec.Body, rec.Order, rec.Target = nil, nil, ""
	return rec
}

// refill gives a compacted record returned by Create the Body and Target
// of the caller's record for the same request (equal Fingerprint), so
// that a not-placed intent taken up again sends the bytes it recorded.
func refill(old, rec Record) Record {
	if len(old.Body) == 0 && old.Target == "" && old.Fingerprint == rec.Fingerprint {
		old.Body, old.Target = rec.Body, rec.Target
	}
	return old
}

// settledAt is when rec settled, as its own times say: the retention runs
// from it. Zero for a record that carries no time (never deleted).
func settledAt(rec Record) time.Time {
	if !rec.UpdatedAt.IsZero() {
		return rec.UpdatedAt
	}
	return rec.CreatedAt
}

// latest is the latest time a record carries: a store has no clock of its
// own, and judges its retention by the times the records written to it
// carry (their Placer's clock).
func latest(rec Record) time.Time {
	t := rec.CreatedAt
	for _, u := range []time.Time{rec.UpdatedAt, rec.FirstSentAt, rec.LastSignedAt} {
		if u.After(t) {
			t = u
		}
	}
	return t
}
