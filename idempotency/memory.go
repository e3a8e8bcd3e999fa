package idempotency

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"
)

// memoryStore is the Store NewMemoryStore returns.
type memoryStore struct {
	retention time.Duration

	mu      sync.Mutex
	recs    map[string]Record
	seq     map[string]uint64 // client_order_id → when it was created, for List's order
	next    uint64
	settled []settledHint // in the order they settled: retention's queue
	claims  claims
	named   map[string][]byte // Meta's values
	closed  bool
}

// settledHint says that the intent id settled at at. The record decides.
type settledHint struct {
	at time.Time
	id string
}

// NewMemoryStore returns an empty Store in memory, for tests and
// simulations. It is safe for concurrent use and lives as long as the
// process: it forgets everything when the process ends, claims included
// (every holder of one is in the process, so a claim lasts until its
// holder settles or releases it). For that reason it implements Witness
// but does not vouch for newness (VouchesNew is false), so package orders
// looks an intent up at the venue before its first send.
//
// It deletes settled intents after 7 days, as the store Open
// returns does, but keeps them whole until then.
func NewMemoryStore() Store { return newMemoryStore(defaultRetention) }

func newMemoryStore(retention time.Duration) *memoryStore {
	return &memoryStore{retention: retention, recs: map[string]Record{}, seq: map[string]uint64{}, claims: map[string]string{}}
}

// Create implements Store.
func (m *memoryStore) Create(_ context.Context, rec Record) (Record, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return Record{}, false, ErrClosed
	}
	if old, ok := m.recs[rec.ClientOrderID]; ok {
		got, err := m.claims.take(rec, clone(old))
		if err != nil {
			return Record{}, false, err
		}
		return refill(got, rec), false, nil
	}
	m.put(rec)
	m.seq[rec.ClientOrderID] = m.next
	m.next++
	m.purge(latest(rec))
	return clone(rec), true, nil
}

// put stores rec and its claim; the lock is held.
func (m *memoryStore) put(rec Record) {
	m.claims.set(rec.ClientOrderID, rec.Holder, rec.State)
	rec = clone(rec)
	rec.Holder = ""
	m.recs[rec.ClientOrderID] = rec
	if t := settledAt(rec); !rec.State.Open() && !t.IsZero() {
		m.settled = append(m.settled, settledHint{at: t, id: rec.ClientOrderID})
	}
}

// purge deletes up to purgeBatch intents settled longer than the
// retention before now, unless a holder has claimed one; the lock is
// held.
func (m *memoryStore) purge(now time.Time) {
	if now.IsZero() {
		return
	}
	cutoff := now.Add(-m.retention)
	n := 0
	for n < purgeBatch && n < len(m.settled) && m.settled[n].at.Before(cutoff) {
		h := m.settled[n]
		n++
		rec, ok := m.recs[h.id]
		if ok && !rec.State.Open() && settledAt(rec).Equal(h.at) && m.claims[h.id] == "" {
			delete(m.recs, h.id)
			delete(m.seq, h.id)
		}
	}
	m.settled = m.settled[n:]
}

// Get implements Store.
func (m *memoryStore) Get(_ context.Context, id string) (Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return Record{}, ErrClosed
	}
	rec, ok := m.recs[id]
	if !ok {
		return Record{}, ErrNotFound
	}
	return clone(rec), nil
}

// Update implements Store.
func (m *memoryStore) Update(ctx context.Context, rec Record) error {
	return m.UpdateAll(ctx, []Record{rec})[0]
}

// UpdateAll implements BatchUpdater.
func (m *memoryStore) UpdateAll(_ context.Context, recs []Record) []error {
	m.mu.Lock()
	defer m.mu.Unlock()
	errs := make([]error, len(recs))
	var now time.Time
	for i, rec := range recs {
		switch _, ok := m.recs[rec.ClientOrderID]; {
		case m.closed:
			errs[i] = ErrClosed
		case !ok:
			errs[i] = ErrNotFound
		default:
			if errs[i] = m.claims.check(rec); errs[i] == nil {
				m.put(rec)
				if t := latest(rec); t.After(now) {
					now = t
				}
			}
		}
	}
	m.purge(now)
	return errs
}

// Release implements Store.
func (m *memoryStore) Release(_ context.Context, id, holder string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	m.claims.release(id, holder)
	return nil
}

// List implements Store.
func (m *memoryStore) List(ctx context.Context, states ...State) ([]Record, error) {
	return m.ListRecent(ctx, time.Time{}, states...)
}

// ListRecent implements RecentLister: it leaves out every record settled
// before since.
func (m *memoryStore) ListRecent(_ context.Context, since time.Time, states ...State) ([]Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrClosed
	}
	var out []Record
	for _, rec := range m.recs {
		if (len(states) == 0 || slices.Contains(states, rec.State)) && !settledBefore(rec, since) {
			out = append(out, clone(rec))
		}
	}
	slices.SortFunc(out, func(a, b Record) int {
		return cmp.Compare(m.seq[a.ClientOrderID], m.seq[b.ClientOrderID])
	})
	return out, nil
}

// Close implements Store.
func (m *memoryStore) Close() error {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	return nil
}

func clone(r Record) Record {
	r.Order = slices.Clone(r.Order)
	r.Body = slices.Clone(r.Body)
	return r
}
