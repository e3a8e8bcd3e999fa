package idempotency

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// The buckets of a store file. Every key is keyOf(client_order_id).
var (
	// bucketOpen holds the open intents, whole (JSON): listing them costs
	// what is open, not the history.
	bucketOpen = []byte("open")
	// bucketSettled holds the settled intents, compacted (codec.go).
	bucketSettled = []byte("settled")
	// bucketMeta holds the store's own state: keySweep.
	bucketMeta = []byte("meta")
	// keySweep is the key where retention's sweep of the settled intents
	// stopped.
	keySweep = []byte("sweep")
	// bucketLegacy held every intent, as JSON keyed by client_order_id,
	// in files written before the buckets above; Open moves them.
	bucketLegacy = []byte("intents")
)

// keyOf is the key of intent id: 0x01 and the 16 bytes of a canonical
// UUID (as every client_order_id tradewire makes is), or 0x00 and the id.
func keyOf(id string) []byte {
	if len(id) == 36 {
		if u, err := uuid.Parse(id); err == nil && u.String() == id {
			return append([]byte{1}, u[:]...)
		}
	}
	return append([]byte{0}, id...)
}

// idOf is the client_order_id of key k.
func idOf(k []byte) string {
	if len(k) == 17 && k[0] == 1 {
		u, _ := uuid.FromBytes(k[1:])
		return u.String()
	}
	if len(k) > 0 {
		return string(k[1:])
	}
	return ""
}

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
// Create or Update returns. The store is safe for concurrent use; cfg
// sets its retention.
//
// Open intents are kept whole, apart from the settled ones, so listing
// them (List(ctx, Pending, Unknown), what Recover reads at start-up)
// reads only those. A settled intent is compacted by the write that
// settles it: its record keeps the key, fingerprint, state, order id,
// reason, sends and times, and drops the create's body and target and
// the order's JSON. Once it has been settled for the retention it is
// deleted by a later write: each write looks at the next 16 settled
// intents in turn and deletes those due, judged by the times the records
// it writes carry (the store has no clock), so an intent goes within one
// round of that sweep after its retention ends (at one order every 5 s
// and a 7-day retention, a round is a few hours). An open intent, or one
// a holder has claimed, is never compacted or deleted.
//
// Only one process may hold the file at a time: if another holds it, Open
// returns an error matching ErrLocked at once rather than hang. A file
// that is not a whole intent store (empty, cut short, with a damaged meta
// page, garbage, a directory) is refused with an error naming
// it, before bbolt maps it.
//
// Because the file is held under that lock and every change is synced,
// the store implements Witness and vouches for newness (VouchesNew is
// true): a record written before a send is there for whoever opens the
// file next.
func Open(path string, cfg Config) (Store, error) {
	retention, err := cfg.retention()
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
	return &boltStore{db: db, path: path, retention: retention, claims: claims{}}, nil
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
			db, err = nil, &storeFileError{Path: path, Reason: fmt.Sprintf("bbolt failed reading it (%v); it is damaged", r)}
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

// ensureBuckets creates the buckets a store file needs, and moves the
// intents of an older file (bucketLegacy) into them, once.
func ensureBuckets(tx *bolt.Tx) error {
	for _, name := range [][]byte{bucketOpen, bucketSettled, bucketMeta, bucketNamed} {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return err
		}
	}
	legacy := tx.Bucket(bucketLegacy)
	if legacy == nil {
		return nil
	}
	err := legacy.ForEach(func(k, v []byte) error {
		rec, err := decodeRecord(string(k), v)
		if err != nil {
			return fmt.Errorf("moving intent %q: %w", k, err)
		}
		rec.ClientOrderID = string(k)
		return write(tx, rec)
	})
	if err != nil {
		return err
	}
	return tx.DeleteBucket(bucketLegacy)
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
		if err := write(tx, rec); err != nil {
			return err
		}
		return s.sweep(tx, latest(rec))
	})
	if err != nil {
		return Record{}, false, s.wrap(err)
	}
	s.claims.set(rec.ClientOrderID, rec.Holder, rec.State)
	return rec, true, nil
}

// write puts rec in the bucket of its state, whole while open, compacted
// once settled, and deletes it from the other.
func write(tx *bolt.Tx, rec Record) error {
	id := keyOf(rec.ClientOrderID)
	to, from := tx.Bucket(bucketOpen), tx.Bucket(bucketSettled)
	if !rec.State.Open() {
		to, from = from, to
	}
	v, err := encodeRecord(rec)
	if err != nil {
		return err
	}
	if err := to.Put(id, v); err != nil {
		return err
	}
	return from.Delete(id)
}

// lookup returns the stored bytes of intent id, or nil.
func lookup(tx *bolt.Tx, id []byte) []byte {
	if v := tx.Bucket(bucketOpen).Get(id); v != nil {
		return v
	}
	return tx.Bucket(bucketSettled).Get(id)
}

// sweep moves retention's sweep on by up to purgeBatch settled intents,
// from where it stopped (wrapping round at the end), and deletes those
// settled longer than the retention before now, unless a holder has
// claimed one (a not-placed intent taken up again). Every write moves
// it, so each settled intent is looked at once every n/purgeBatch writes
// for n settled intents. The caller holds s.mu.
func (s *boltStore) sweep(tx *bolt.Tx, now time.Time) error {
	if now.IsZero() {
		return nil
	}
	cutoff := now.Add(-s.retention)
	b, meta := tx.Bucket(bucketSettled), tx.Bucket(bucketMeta)
	c := b.Cursor()
	from := meta.Get(keySweep)
	k, v := c.First()
	if from != nil {
		if k, v = c.Seek(from); bytes.Equal(k, from) {
			k, v = c.Next()
		}
	}
	var due [][]byte
	var last []byte
	for n := 0; n < purgeBatch; n++ {
		if k == nil {
			if k, v = c.First(); k == nil || (last != nil && bytes.Compare(k, last) <= 0) {
				break // empty, or at the end: the next sweep starts at the first
			}
		}
		last = slices.Clone(k)
		if rec, err := decodeRecord(idOf(k), v); err == nil {
			t := settledAt(rec)
			if !t.IsZero() && t.Before(cutoff) && s.claims[rec.ClientOrderID] == "" {
				due = append(due, last)
			}
		}
		k, v = c.Next()
	}
	for _, k := range due {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	if last == nil {
		return nil
	}
	return meta.Put(keySweep, last)
}

// Get implements Store.
func (s *boltStore) Get(_ context.Context, id string) (Record, error) {
	var rec Record
	err := s.db.View(func(tx *bolt.Tx) error {
		v := lookup(tx, keyOf(id))
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
		var now time.Time
		for i, rec := range recs {
			if lookup(tx, keyOf(rec.ClientOrderID)) == nil {
				errs[i] = ErrNotFound
				continue
			}
			if errs[i] = s.claims.check(rec); errs[i] != nil {
				continue
			}
			if err := write(tx, rec); err != nil {
				return err
			}
			if t := latest(rec); t.After(now) {
				now = t
			}
		}
		return s.sweep(tx, now)
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

// List implements Store. Listing only open states reads the open
// intents alone.
func (s *boltStore) List(ctx context.Context, states ...State) ([]Record, error) {
	return s.ListRecent(ctx, time.Time{}, states...)
}

// ListRecent implements RecentLister: a settled record's times are read
// before it is decoded, and one settled before since is left out.
func (s *boltStore) ListRecent(_ context.Context, since time.Time, states ...State) ([]Record, error) {
	onlyOpen := len(states) > 0
	for _, st := range states {
		onlyOpen = onlyOpen && st.Open()
	}
	var out []Record
	keep := func(k, v []byte) error {
		if !since.IsZero() && compactBefore(v, since) {
			return nil
		}
		rec, err := decodeRecord(idOf(k), v)
		if err != nil {
			return err
		}
		if len(states) == 0 || slices.Contains(states, rec.State) {
			out = append(out, rec)
		}
		return nil
	}
	err := s.db.View(func(tx *bolt.Tx) error {
		if err := tx.Bucket(bucketOpen).ForEach(keep); err != nil || onlyOpen {
			return err
		}
		return tx.Bucket(bucketSettled).ForEach(keep)
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
