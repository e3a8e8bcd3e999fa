package redisstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/redis/go-redis/v9"

	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/signing"
)

// Defaults a Store uses unless told otherwise.
const (
	// DefaultLease is how long a claim lasts after its last Create or
	// Update. It should outlast the longest quiet stretch of one Place
	// (a reconcile can wait out a signature's 30 s validity plus the
	// margin without writing).
	DefaultLease = time.Minute
	// DefaultSkewMargin is added to a signature's 30 s validity before an
	// abandoned intent may be taken over: the venue's clock may run behind.
	// It matches orders.DefaultSkewMargin.
	DefaultSkewMargin = 10 * time.Second
)

var accountShape = regexp.MustCompile(`^[A-Za-z0-9]{1,64}$`)

// Errors a Store returns besides idempotency's.
var (
	// ErrInProgress: another process holds the claim on the intent, or
	// abandoned it while a signature it sent can still be accepted.
	// Returned by Create as an *InProgressError.
	// It is idempotency.ErrInProgress, so callers need not import this
	// package to branch on it.
	ErrInProgress = idempotency.ErrInProgress
	// ErrClaimLost: Update was refused because this Store no longer holds
	// the intent's claim: another process took it over, or the claim was
	// released when the intent reached a final state.
	// It is idempotency.ErrClaimLost.
	ErrClaimLost = idempotency.ErrClaimLost
	// ErrNotDurable: the Redis server does not fsync every write
	// (appendonly yes, appendfsync always) or may evict intents.
	ErrNotDurable = errors.New("redisstore: Redis does not make every write durable")
)

// InProgressError is a Create refused because another process holds the
// intent's claim. Nothing was written. It matches ErrInProgress. The
// holder will usually settle the intent; Create again later returns the
// settled record, or transfers the claim once it is abandoned.
type InProgressError struct {
	ClientOrderID string
	// Owner identifies the holder (host/pid/random); empty when the
	// claim lapsed but a signature it sent may still be accepted.
	Owner string
	// LeaseExpires is when the holder's claim lapses unless renewed, on
	// Redis's clock.
	LeaseExpires time.Time
	// SignaturesExpire is when no signature the intent was sent with can
	// be accepted any more (last signature + 30 s + margin); zero when
	// nothing was signed. An abandoned intent is taken over only after
	// both times.
	SignaturesExpire time.Time
}

// Error implements error.
func (e *InProgressError) Error() string {
	s := fmt.Sprintf("redisstore: client_order_id %s is in progress in another process", e.ClientOrderID)
	if e.Owner != "" {
		s += fmt.Sprintf(" (%s, claim until %s)", e.Owner, e.LeaseExpires.UTC().Format(time.RFC3339Nano))
	}
	if !e.SignaturesExpire.IsZero() {
		s += fmt.Sprintf("; its signatures expire at %s", e.SignaturesExpire.UTC().Format(time.RFC3339Nano))
	}
	return s
}

// Is matches ErrInProgress.
func (e *InProgressError) Is(target error) bool { return target == ErrInProgress }

// Store is an idempotency.Store kept in Redis and shared by every process
// that trades one account, with claims that keep two processes from
// working on one intent at once. It is safe for concurrent use; the zero
// value is not usable: construct one with New or Open. One Store is one
// claimant: goroutines sharing it share its claims (orders.Placer keeps
// them apart per key), so give each process its own Store.
type Store struct {
	rdb     redis.UniversalClient
	owned   bool
	account string
	ns      string // tradewire:{ACCOUNT}:
	index   string
	owner   string
	lease   time.Duration
	skew    time.Duration
	clock   clockwork.Clock

	mu     sync.Mutex
	closed bool
}

var _ idempotency.Store = (*Store)(nil)

type config struct {
	lease          time.Duration
	skew           time.Duration
	clock          clockwork.Clock
	weakDurability bool
}

// Option configures a Store.
type Option func(*config)

// WithLease sets how long a claim lasts after its last write (default
// DefaultLease).
func WithLease(d time.Duration) Option { return func(c *config) { c.lease = d } }

// WithSkewMargin sets the margin added to a signature's 30 s validity
// before an abandoned intent may be taken over (default
// DefaultSkewMargin). Use the orders.Placer's margin.
func WithSkewMargin(d time.Duration) Option { return func(c *config) { c.skew = d } }

// WithClock sets the clock that judges, with Redis's, whether an abandoned
// intent's signatures have expired (default: the real clock). Use the
// clock the transport signs with: record times come from it.
func WithClock(clk clockwork.Clock) Option { return func(c *config) { c.clock = clk } }

// WithWeakDurability skips the check that Redis fsyncs every write
// (appendonly yes, appendfsync always) and evicts no intents. A Redis that
// loses acknowledged writes in a crash can forget an intent whose order
// was sent, and a later Place could then send it again. Use it only where
// CONFIG is disabled and durability is known by other means.
func WithWeakDurability() Option { return func(c *config) { c.weakDurability = true } }

// Open connects to the Redis at url (redis://[:password@]host:port/db,
// rediss:// for TLS) and returns a Store for accountNumber as New does,
// owning the connection: Close closes it.
func Open(ctx context.Context, url, accountNumber string, opts ...Option) (*Store, error) {
	o, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("redisstore: Redis URL: %w", err)
	}
	rdb := redis.NewClient(o)
	s, err := New(ctx, rdb, accountNumber, opts...)
	if err != nil {
		rdb.Close()
		return nil, err
	}
	s.owned = true
	return s, nil
}

// New returns a Store for accountNumber's intents kept in rdb. It checks
// that Redis answers PING, and that it runs with appendonly yes and
// appendfsync always and a maxmemory-policy that cannot evict intents
// (noeviction or volatile-*), refusing with an error matching
// ErrNotDurable otherwise (see WithWeakDurability). Close does not close
// rdb.
func New(ctx context.Context, rdb redis.UniversalClient, accountNumber string, opts ...Option) (*Store, error) {
	if rdb == nil {
		return nil, errors.New("redisstore: a Redis client is required")
	}
	if !accountShape.MatchString(accountNumber) {
		return nil, fmt.Errorf("redisstore: account number %q: want 1 to 64 letters and digits", accountNumber)
	}
	cfg := config{lease: DefaultLease, skew: DefaultSkewMargin}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.clock == nil {
		cfg.clock = clockwork.NewRealClock()
	}
	if cfg.lease < time.Millisecond || cfg.skew < 0 {
		return nil, fmt.Errorf("redisstore: lease %v and skew margin %v: want a lease of at least 1ms and a margin not negative", cfg.lease, cfg.skew)
	}
	if err := rdb.Ping(ctx).Err(); err != nil {
		return nil, fmt.Errorf("redisstore: Redis does not answer PING: %w", err)
	}
	if !cfg.weakDurability {
		if err := checkDurable(ctx, rdb); err != nil {
			return nil, err
		}
	}
	ns := "tradewire:{" + accountNumber + "}:"
	return &Store{
		rdb: rdb, account: accountNumber, ns: ns, index: ns + "intents",
		owner: newOwner(), lease: cfg.lease, skew: cfg.skew, clock: cfg.clock,
	}, nil
}

// checkDurable reads the server's persistence settings with CONFIG GET.
func checkDurable(ctx context.Context, rdb redis.UniversalClient) error {
	want := map[string]func(string) bool{
		"appendonly":       func(v string) bool { return v == "yes" },
		"appendfsync":      func(v string) bool { return v == "always" },
		"maxmemory-policy": func(v string) bool { return v == "noeviction" || strings.HasPrefix(v, "volatile-") },
	}
	for _, name := range []string{"appendonly", "appendfsync", "maxmemory-policy"} {
		got, err := rdb.ConfigGet(ctx, name).Result()
		if err != nil {
			return fmt.Errorf("%w: cannot verify it (CONFIG GET %s: %v); pass WithWeakDurability to run anyway", ErrNotDurable, name, err)
		}
		if v, ok := got[name]; !ok || !want[name](v) {
			return fmt.Errorf("%w: %s is %q; run redis-server with --appendonly yes --appendfsync always (and maxmemory-policy noeviction), or pass WithWeakDurability", ErrNotDurable, name, got[name])
		}
	}
	return nil
}

func newOwner() string {
	host, _ := os.Hostname()
	var b [6]byte
	rand.Read(b[:])
	return fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// Owner returns the id this Store claims intents under:
// host/pid/random, new for every Store.
func (s *Store) Owner() string { return s.owner }

// Account returns the account whose intents the Store keeps.
func (s *Store) Account() string { return s.account }

func (s *Store) key(cid string) string { return s.ns + "intent:" + cid }

func (s *Store) check(rec idempotency.Record) error {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	switch {
	case closed:
		return idempotency.ErrClosed
	case rec.ClientOrderID == "":
		return errors.New("redisstore: record: client_order_id is empty")
	case rec.AccountNumber != s.account:
		return fmt.Errorf("redisstore: record %s: account_number %q is not this store's account %q", rec.ClientOrderID, rec.AccountNumber, s.account)
	}
	return nil
}

func (s *Store) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// signExpiry is when the record's latest signature can no longer be
// accepted, in Unix ms; 0 when nothing was signed.
func (s *Store) signExpiry(rec idempotency.Record) int64 {
	if rec.LastSignedAt.IsZero() {
		return 0
	}
	return rec.LastSignedAt.Add(signing.ValidFor + s.skew).UnixMilli()
}

// Create implements idempotency.Store, atomically across processes. It
// writes rec and a claim for this Store unless an intent with its
// ClientOrderID exists. For an existing intent it returns it with created
// false and:
//   - acknowledged or rejected: nothing else happens;
//   - claimed by this Store: the claim is renewed;
//   - claimed by another process: an *InProgressError, and nothing changes;
//   - not placed, or abandoned (its claim lapsed and, if it is pending or
//     unknown, every signature it was sent with has expired on both
//     Redis's clock and this Store's): the claim passes to this Store. The
//     caller must then look the order up before sending anything again, as
//     orders.Placer does for pending and unknown intents.
func (s *Store) Create(ctx context.Context, rec idempotency.Record) (idempotency.Record, bool, error) {
	if err := s.check(rec); err != nil {
		return idempotency.Record{}, false, err
	}
	js, err := json.Marshal(rec)
	if err != nil {
		return idempotency.Record{}, false, fmt.Errorf("redisstore: encoding record %s: %w", rec.ClientOrderID, err)
	}
	v, err := createScript.Run(ctx, s.rdb, []string{s.key(rec.ClientOrderID), s.index},
		s.owner, s.lease.Milliseconds(), js, string(rec.State), s.signExpiry(rec),
		s.clock.Now().UnixMilli(), rec.CreatedAt.UnixMilli(), rec.ClientOrderID).Slice()
	if err != nil {
		return idempotency.Record{}, false, fmt.Errorf("redisstore: create %s: %w", rec.ClientOrderID, err)
	}
	code, _ := v[0].(int64)
	if code == 1 {
		return rec, true, nil
	}
	existing, err := decode(rec.ClientOrderID, v[1])
	if err != nil {
		return idempotency.Record{}, false, err
	}
	if code == 2 {
		e := &InProgressError{ClientOrderID: rec.ClientOrderID}
		e.Owner, _ = v[2].(string)
		if ms, _ := v[3].(int64); ms > 0 && e.Owner != "" {
			e.LeaseExpires = time.UnixMilli(ms)
		}
		if ms, _ := v[4].(int64); ms > 0 {
			e.SignaturesExpire = time.UnixMilli(ms)
		}
		return idempotency.Record{}, false, e
	}
	return existing, false, nil
}

func decode(cid string, v any) (idempotency.Record, error) {
	var rec idempotency.Record
	str, ok := v.(string)
	if !ok {
		return rec, fmt.Errorf("redisstore: intent %s has no record", cid)
	}
	if err := json.Unmarshal([]byte(str), &rec); err != nil {
		return rec, fmt.Errorf("redisstore: decoding intent %s: %w", cid, err)
	}
	return rec, nil
}

// Get implements idempotency.Store.
func (s *Store) Get(ctx context.Context, id string) (idempotency.Record, error) {
	if s.isClosed() {
		return idempotency.Record{}, idempotency.ErrClosed
	}
	v, err := s.rdb.HGet(ctx, s.key(id), "rec").Result()
	if errors.Is(err, redis.Nil) {
		return idempotency.Record{}, idempotency.ErrNotFound
	}
	if err != nil {
		return idempotency.Record{}, fmt.Errorf("redisstore: get %s: %w", id, err)
	}
	return decode(id, v)
}

// Update implements idempotency.Store, fenced by the claim: only the
// Store holding the intent's claim may update it; any other gets an error
// matching ErrClaimLost. An update renews the claim, or releases it when
// the state is final (acknowledged, rejected, not placed), so that another
// process may then take a not-placed intent up again.
func (s *Store) Update(ctx context.Context, rec idempotency.Record) error {
	if err := s.check(rec); err != nil {
		return err
	}
	js, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("redisstore: encoding record %s: %w", rec.ClientOrderID, err)
	}
	v, err := updateScript.Run(ctx, s.rdb, []string{s.key(rec.ClientOrderID)},
		s.owner, s.lease.Milliseconds(), js, string(rec.State), s.signExpiry(rec)).Result()
	if err != nil {
		return fmt.Errorf("redisstore: update %s: %w", rec.ClientOrderID, err)
	}
	switch r := v.(type) {
	case int64:
		if r == -1 {
			return idempotency.ErrNotFound
		}
		return nil
	case []any:
		holder, _ := r[1].(string)
		if holder == "" {
			holder = "nobody (released)"
		}
		return fmt.Errorf("%w: client_order_id %s is held by %s", ErrClaimLost, rec.ClientOrderID, holder)
	}
	return fmt.Errorf("redisstore: update %s: unexpected reply %v", rec.ClientOrderID, v)
}

// List implements idempotency.Store. It reads every intent of the
// account, in batches, and returns those in the given states (all when
// none are given), oldest first.
func (s *Store) List(ctx context.Context, states ...idempotency.State) ([]idempotency.Record, error) {
	if s.isClosed() {
		return nil, idempotency.ErrClosed
	}
	ids, err := s.rdb.ZRange(ctx, s.index, 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("redisstore: list: %w", err)
	}
	var out []idempotency.Record
	for batch := range slices.Chunk(ids, 500) {
		pipe := s.rdb.Pipeline()
		cmds := make([]*redis.StringCmd, len(batch))
		for i, id := range batch {
			cmds[i] = pipe.HGet(ctx, s.key(id), "rec")
		}
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return nil, fmt.Errorf("redisstore: list: %w", err)
		}
		for i, c := range cmds {
			v, err := c.Result()
			if errors.Is(err, redis.Nil) {
				continue // deleted by hand; the index is behind
			}
			rec, err := decode(batch[i], v)
			if err != nil {
				return nil, err
			}
			if len(states) == 0 || slices.Contains(states, rec.State) {
				out = append(out, rec)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b idempotency.Record) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out, nil
}

// Close implements idempotency.Store. Claims this Store holds are not
// released: they lapse with their lease. It closes the connection only if
// the Store opened it (Open).
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if s.owned {
		return s.rdb.Close()
	}
	return nil
}
