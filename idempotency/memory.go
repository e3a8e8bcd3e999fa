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
	order  []string
	closed bool
}

// NewMemoryStore returns an empty Store in memory, for tests and
// simulations. It is safe for concurrent use and lives as long as the
// process: it forgets everything when the process ends. For that reason
// it implements Witness but does not vouch for newness (VouchesNew is
// false), so package orders looks an intent up at the venue before its
// first send.
func NewMemoryStore() Store { return &memoryStore{recs: map[string]Record{}} }

// Create implements Store.
func (m *memoryStore) Create(_ context.Context, rec Record) (Record, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return Record{}, false, ErrClosed
	}
	if old, ok := m.recs[rec.ClientOrderID]; ok {
		return clone(old), false, nil
	}
	m.recs[rec.ClientOrderID] = clone(rec)
	m.order = append(m.order, rec.ClientOrderID)
	return clone(rec), true, nil
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
	m.recs[rec.ClientOrderID] = clone(rec)
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
