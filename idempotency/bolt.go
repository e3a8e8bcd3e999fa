package idempotency

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

var bucketIntents = []byte("intents")

// lockWait is how long Open waits for another process's lock before
// returning ErrLocked.
const lockWait = 250 * time.Millisecond

// boltStore is the Store Open returns. Its claims live in memory: one
// process holds the file at a time, so every holder of a claim is in this
// process, and a claim of an earlier process ended with it.
type boltStore struct {
	db   *bolt.DB
	path string

	mu     sync.Mutex // guards claims, and orders each write against them
	claims claims
}

// DefaultPath returns where the intent store lives unless told otherwise:
// $XDG_STATE_HOME/tradewire/intents.db, or ~/.local/state/tradewire/intents.db.
func DefaultPath() (string, error) {
	dir := os.Getenv("XDG_STATE_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("idempotency: no state directory: %w", err)
		}
		dir = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(dir, "tradewire", "intents.db"), nil
}

// Open opens (creating if needed) the durable intent store at path: an
// embedded bbolt database whose every change is synced to disk before
// Create or Update returns. The store is safe for concurrent use.
//
// Only one process may hold the file at a time: if another holds it, Open
// returns an error matching ErrLocked at once rather than hang. A file
// that is not a whole intent store (empty, cut short, with a damaged meta
// page, garbage, a directory) is refused with a *StoreFileError naming
// it, before bbolt maps it.
//
// Because the file is held under that lock and every change is synced,
// the store implements Witness and vouches for newness (VouchesNew is
// true): a record written before a send is there for whoever opens the
// file next.
func Open(path string) (Store, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("idempotency: open %s: %w", path, err)
	}
	if err := checkStoreFile(path); err != nil {
		// A process writing the file can make a meta page read torn:
		// say it is in use rather than damaged.
		if lockedElsewhere(path) {
			return nil, lockedError(path)
		}
		return nil, err
	}
	db, err := openBolt(path)
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, lockedError(path)
	}
	if err != nil {
		return nil, fmt.Errorf("idempotency: open %s: %w", path, err)
	}
	return &boltStore{db: db, path: path, claims: claims{}}, nil
}

func lockedError(path string) error {
	return fmt.Errorf("%w: %s (another tradewire process has it open; stop it or use another --store)", ErrLocked, path)
}

// openBolt opens the checked file with bbolt. A memory fault while bbolt
// reads its mapping (a page damaged in a way the check cannot see) is an
// error naming the file, not a crash.
func openBolt(path string) (db *bolt.DB, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if db != nil {
				_ = db.Close()
			}
			db, err = nil, &StoreFileError{Path: path, Reason: fmt.Sprintf("bbolt failed reading it (%v); it is damaged", r)}
		}
	}()
	db, err = bolt.Open(path, 0o600, &bolt.Options{Timeout: lockWait})
	if err != nil {
		return nil, err
	}
	err = db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(bucketIntents)
		return err
	})
	if err != nil {
		_ = db.Close()
		return nil, err
	}
	return db, nil
}

// Create implements Store.
func (s *boltStore) Create(_ context.Context, rec Record) (Record, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// The lock orders every write of this process, and no other process
	// holds the file: a record not found here is not written before the
	// put below.
	existing, err := s.Get(context.Background(), rec.ClientOrderID)
	switch {
	case err == nil:
		got, err := s.claims.take(rec, existing)
		return got, false, err
	case !errors.Is(err, ErrNotFound):
		return Record{}, false, err
	}
	err = s.db.Update(func(tx *bolt.Tx) error { return put(tx.Bucket(bucketIntents), rec) })
	if err != nil {
		return Record{}, false, s.wrap(err)
	}
	s.claims.set(rec.ClientOrderID, rec.Holder, rec.State)
	return rec, true, nil
}

// Get implements Store.
func (s *boltStore) Get(_ context.Context, id string) (Record, error) {
	var rec Record
	err := s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketIntents).Get([]byte(id))
		if v == nil {
			return ErrNotFound
		}
		return json.Unmarshal(v, &rec)
	})
	if err != nil {
		return Record{}, s.wrap(err)
	}
	return rec, nil
}

// Update implements Store.
func (s *boltStore) Update(_ context.Context, rec Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketIntents)
		if b.Get([]byte(rec.ClientOrderID)) == nil {
			return ErrNotFound
		}
		if err := s.claims.check(rec); err != nil {
			return err
		}
		return put(b, rec)
	})
	if err != nil {
		return s.wrap(err)
	}
	s.claims.set(rec.ClientOrderID, rec.Holder, rec.State)
	return nil
}

// Release implements Store.
func (s *boltStore) Release(_ context.Context, id, holder string) error {
	s.mu.Lock()
	s.claims.release(id, holder)
	s.mu.Unlock()
	return nil
}

// List implements Store.
func (s *boltStore) List(_ context.Context, states ...State) ([]Record, error) {
	var out []Record
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketIntents).ForEach(func(_, v []byte) error {
			var rec Record
			if err := json.Unmarshal(v, &rec); err != nil {
				return err
			}
			if len(states) == 0 || slices.Contains(states, rec.State) {
				out = append(out, rec)
			}
			return nil
		})
	})
	if err != nil {
		return nil, s.wrap(err)
	}
	slices.SortStableFunc(out, func(a, b Record) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out, nil
}

// Close implements Store.
func (s *boltStore) Close() error { return s.db.Close() }

func put(b *bolt.Bucket, rec Record) error {
	v, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return b.Put([]byte(rec.ClientOrderID), v)
}

func (s *boltStore) wrap(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrNotFound), errors.Is(err, ErrClaimLost):
		return err
	case errors.Is(err, bolterrors.ErrDatabaseNotOpen):
		return ErrClosed
	}
	return fmt.Errorf("idempotency: store %s: %w", s.path, err)
}
