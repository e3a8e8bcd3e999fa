package idempotency

import (
	"context"
	"slices"
	"sync"
)

// memoryStore is the Store NewMemoryStore returns.
type memoryStore struct {
	mu     sync.Mutex
	recs   map[string]Record
	claims claims
	order  []string
	closed bool
}

// NewMemoryStore returns an empty Store in memory, for tests and
// simulations. It is safe for concurrent use and lives as long as the
// process: it forgets everything when the process ends, claims included
// (every holder of one is in the process, so a claim lasts until its
// holder settles or releases it). For that reason it implements Witness
// but does not vouch for newness (VouchesNew is false), so package orders
// looks an intent up at the venue before its first send.
func NewMemoryStore() Store {
	return &memoryStore{recs: map[string]Record{}, claims: map[string]string{}}
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
		return got, false, err
	}
	m.put(rec)
	m.order = append(m.order, rec.ClientOrderID)
	return clone(rec), true, nil
}

// put stores rec and its claim; the lock is held.
func (m *memoryStore) put(rec Record) {
	m.claims.set(rec.ClientOrderID, rec.Holder, rec.State)
	rec = clone(rec)
	rec.Holder = ""
	m.recs[rec.ClientOrderID] = rec
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
func (m *memoryStore) Update(_ context.Context, rec Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	if _, ok := m.recs[rec.ClientOrderID]; !ok {
		return ErrNotFound
	}
	if err := m.claims.check(rec); err != nil {
		return err
	}
	m.put(rec)
	return nil
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
func (m *memoryStore) List(_ context.Context, states ...State) ([]Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrClosed
	}
	var out []Record
	for _, id := range m.order {
		if rec := m.recs[id]; len(states) == 0 || slices.Contains(states, rec.State) {
			out = append(out, clone(rec))
		}
	}
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
