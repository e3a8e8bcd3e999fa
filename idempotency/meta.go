package idempotency

import (
	"context"
	"errors"
	"slices"

	bolt "go.etcd.io/bbolt"
)

// Meta is implemented by a Store that keeps small named values beside its intents: durable, and
// shared by every holder of the store (every goroutine; for Redis every process of the fleet).
type Meta interface {
	GetMeta(ctx context.Context, name string) ([]byte, error) // ErrNotFound when unset
	PutMeta(ctx context.Context, name string, value []byte) error
}

var (
	_ Meta = (*memoryStore)(nil)
	_ Meta = (*boltStore)(nil)
)

// bucketNamed holds the values of Meta, by name. Retention's sweep reads
// only bucketSettled, so it never deletes one.
var bucketNamed = []byte("named")

// errNoName refuses a named value without a name.
var errNoName = errors.New("idempotency: a named value needs a name")

// GetMeta implements Meta.
func (m *memoryStore) GetMeta(_ context.Context, name string) ([]byte, error) {
	if name == "" {
		return nil, errNoName
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrClosed
	}
	v, ok := m.named[name]
	if !ok {
		return nil, ErrNotFound
	}
	return slices.Clone(v), nil
}

// PutMeta implements Meta.
func (m *memoryStore) PutMeta(_ context.Context, name string, value []byte) error {
	if name == "" {
		return errNoName
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	if m.named == nil {
		m.named = map[string][]byte{}
	}
	m.named[name] = slices.Clone(value)
	return nil
}

// GetMeta implements Meta.
func (s *boltStore) GetMeta(_ context.Context, name string) ([]byte, error) {
	if name == "" {
		return nil, errNoName
	}
	var v []byte
	err := s.db.View(func(tx *bolt.Tx) error {
		got := tx.Bucket(bucketNamed).Get([]byte(name))
		if got == nil {
			return ErrNotFound
		}
		v = slices.Clone(got)
		return nil
	})
	if err != nil {
		return nil, s.wrap(err)
	}
	return v, nil
}

// PutMeta implements Meta, synced to disk before it returns.
func (s *boltStore) PutMeta(_ context.Context, name string, value []byte) error {
	if name == "" {
		return errNoName
	}
	return s.wrap(s.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketNamed).Put([]byte(name), slices.Clone(value))
	}))
}
