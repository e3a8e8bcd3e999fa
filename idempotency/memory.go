package idempotency

import (
	"context"
	"slices"
	"sync"
)

// MemoryStore is a Store in memory, for tests and simulations: it forgets
// everything when the process ends. It is safe for concurrent use; the
// zero value is not: use NewMemoryStore.
type MemoryStore struct {
	mu     sync.Mutex
	recs   map[string]Record
	order  []string
	closed bool
}

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore { return &MemoryStore{recs: map[string]Record{}} }

// Create implements Store.
func (m *MemoryStore) Create(_ context.Context, rec Record) (Record, bool, error) {
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
func (m *MemoryStore) Get(_ context.Context, id string) (Record, error) {
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
func (m *MemoryStore) Update(_ context.Context, rec Record) error {
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
func (m *MemoryStore) List(_ context.Context, states ...State) ([]Record, error) {
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
func (m *MemoryStore) Close() error {
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
