package idempotency

import (
	"bytes"
	"context"
	"encoding/binary"
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

// The buckets of a store file.
var (
	// bucketIntents holds every record by client_order_id (codec.go).
	bucketIntents = []byte("intents")
	// bucketOpen holds the client_order_id of every open intent, so that
	// listing them costs what is open, not the history.
	bucketOpen = []byte("open")
	// bucketSettled holds settledKey(settled-at, client_order_id) for
	// every settled intent that carries a time, oldest first: the order
	// retention deletes them in. An entry is a hint; the record decides.
	bucketSettled = []byte("settled")
)

// lockWait is how long Open waits for another process's lock before
// returning ErrLocked.
const lockWait = 250 * time.Millisecond

// boltStore is the Store Open returns. Its claims live in memory: one
// process holds the file at a time, so every holder of a claim is in this
// process, and a claim of an earlier process ended with it.
type boltStore struct {
	db        *bolt.DB
	path      string
	retention time.Duration

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
// Create or Update returns. The store is safe for concurrent use. Its one
// option is WithRetention.
//
// A settled intent is compacted by the write that settles it: its record
// keeps the key, fingerprint, state, order id, reason, sends and times,
// and drops the create's body and target and the order's JSON. Once it
// has been settled for the retention it is deleted by a later write: each
// write deletes up to 16 such intents, judged by the times the records it
// writes carry (the store has no clock). An open intent, or one a holder
// has claimed, is never compacted or deleted.
// Listing the open intents (List(ctx, Pending, Unknown), what Recover
// reads at start-up) reads only those, through an index kept in the same
// commits.
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
func Open(path string, opts ...Option) (Store, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
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
	return &boltStore{db: db, path: path, retention: cfg.retention, claims: claims{}}, nil
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
	err = db.Update(ensureBuckets)
	if err != nil {
		_ = db.Close()
		return nil, err
	}
	return db, nil
}

// ensureBuckets creates the buckets a store file needs. A file written
// before the indexes existed gets them built from its records, once.
func ensureBuckets(tx *bolt.Tx) error {
	b, err := tx.CreateBucketIfNotExists(bucketIntents)
	if err != nil {
		return err
	}
	if tx.Bucket(bucketOpen) != nil {
		_, err := tx.CreateBucketIfNotExists(bucketSettled)
		return err
	}
	open, err := tx.CreateBucket(bucketOpen)
	if err != nil {
		return err
	}
	settled, err := tx.CreateBucketIfNotExists(bucketSettled)
	if err != nil {
		return err
	}
	return b.ForEach(func(k, v []byte) error {
		rec, err := decodeRecord(string(k), v)
		if err != nil {
			return err
		}
		return index(open, settled, rec, k)
	})
}

// index records rec (whose key is id) in the open or settled index.
func index(open, settled *bolt.Bucket, rec Record, id []byte) error {
	if rec.State.Open() {
		return open.Put(id, []byte{})
	}
	if err := open.Delete(id); err != nil {
		return err
	}
	if t := settledAt(rec); !t.IsZero() {
		return settled.Put(settledKey(t, id), []byte{})
	}
	return nil
}

// settledKey orders settled intents by when they settled.
func settledKey(t time.Time, id []byte) []byte {
	k := binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(id)), uint64(t.UnixNano())^1<<63)
	return append(k, id...)
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
		if err != nil {
			return Record{}, false, err
		}
		return refill(got, rec), false, nil
	case !errors.Is(err, ErrNotFound):
		return Record{}, false, err
	}
	err = s.db.Update(func(tx *bolt.Tx) error {
		if err := s.write(tx, rec, nil); err != nil {
			return err
		}
		return s.purge(tx, latest(rec))
	})
	if err != nil {
		return Record{}, false, s.wrap(err)
	}
	s.claims.set(rec.ClientOrderID, rec.Holder, rec.State)
	return rec, true, nil
}

// write puts rec, replacing the record old (nil for none), and keeps the
// indexes. The caller holds s.mu.
func (s *boltStore) write(tx *bolt.Tx, rec Record, old []byte) error {
	id := []byte(rec.ClientOrderID)
	settled := tx.Bucket(bucketSettled)
	if old != nil {
		if prev, err := decodeRecord(rec.ClientOrderID, old); err == nil && !prev.State.Open() {
			if t := settledAt(prev); !t.IsZero() {
				if err := settled.Delete(settledKey(t, id)); err != nil {
					return err
				}
			}
		}
	}
	v, err := encodeRecord(rec)
	if err != nil {
		return err
	}
	if err := tx.Bucket(bucketIntents).Put(id, v); err != nil {
		return err
	}
	return index(tx.Bucket(bucketOpen), settled, rec, id)
}

// purge deletes up to purgeBatch intents settled longer than the
// retention before now. An intent a holder has claimed (a not-placed one
// taken up again) is left alone. The caller holds s.mu.
func (s *boltStore) purge(tx *bolt.Tx, now time.Time) error {
	if now.IsZero() {
		return nil
	}
	cutoff := settledKey(now.Add(-s.retention), nil)
	idx, b := tx.Bucket(bucketSettled), tx.Bucket(bucketIntents)
	var due [][]byte
	c := idx.Cursor()
	for k, _ := c.First(); k != nil && len(due) < purgeBatch && bytes.Compare(k, cutoff) < 0; k, _ = c.Next() {
		due = append(due, slices.Clone(k))
	}
	for _, k := range due {
		id := k[8:]
		if s.claims[string(id)] != "" {
			continue
		}
		if v := b.Get(id); v != nil {
			rec, err := decodeRecord(string(id), v)
			if err == nil && !rec.State.Open() && bytes.Equal(settledKey(settledAt(rec), id), k) {
				if err := b.Delete(id); err != nil {
					return err
				}
			}
		}
		// Deleted, or a stale hint: the record is open again, settled
		// at another time, or does not decode (then it is kept).
		if err := idx.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// Get implements Store.
func (s *boltStore) Get(_ context.Context, id string) (Record, error) {
	var rec Record
	err := s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketIntents).Get([]byte(id))
		if v == nil {
			return ErrNotFound
		}
		var err error
		rec, err = decodeRecord(id, v)
		return err
	})
	if err != nil {
		return Record{}, s.wrap(err)
	}
	return rec, nil
}

// Update implements Store.
func (s *boltStore) Update(ctx context.Context, rec Record) error {
	return s.UpdateAll(ctx, []Record{rec})[0]
}

// UpdateAll implements BatchUpdater: one commit for all of recs.
func (s *boltStore) UpdateAll(_ context.Context, recs []Record) []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	errs := make([]error, len(recs))
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketIntents)
		var now time.Time
		for i, rec := range recs {
			old := b.Get([]byte(rec.ClientOrderID))
			if old == nil {
				errs[i] = ErrNotFound
				continue
			}
			if errs[i] = s.claims.check(rec); errs[i] != nil {
				continue
			}
			if err := s.write(tx, rec, old); err != nil {
				return err
			}
			if t := latest(rec); t.After(now) {
				now = t
			}
		}
		return s.purge(tx, now)
	})
	for i, rec := range recs {
		switch {
		case err != nil:
			errs[i] = s.wrap(err)
		case errs[i] == nil:
			s.claims.set(rec.ClientOrderID, rec.Holder, rec.State)
		}
	}
	return errs
}

// Release implements Store.
func (s *boltStore) Release(_ context.Context, id, holder string) error {
	s.mu.Lock()
	s.claims.release(id, holder)
	s.mu.Unlock()
	return nil
}

// List implements Store. Listing only open states reads the open index.
func (s *boltStore) List(_ context.Context, states ...State) ([]Record, error) {
	onlyOpen := len(states) > 0
	for _, st := range states {
		onlyOpen = onlyOpen && st.Open()
	}
	var out []Record
	keep := func(k, v []byte) error {
		rec, err := decodeRecord(string(k), v)
		if err != nil {
			return err
		}
		if len(states) == 0 || slices.Contains(states, rec.State) {
			out = append(out, rec)
		}
		return nil
	}
	err := s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketIntents)
		if !onlyOpen {
			return b.ForEach(keep)
		}
		return tx.Bucket(bucketOpen).ForEach(func(k, _ []byte) error {
			if v := b.Get(k); v != nil {
				return keep(k, v)
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
