package redisstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/redis/go-redis/v9"

	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/internal/claim"
	"github.com/tradewire/tradewire/internal/wire"
	"github.com/tradewire/tradewire/signing"
	"github.com/tradewire/tradewire/transport"
)

// The defaults a zero Config field stands for.
const (
	defaultLease          = time.Minute
	defaultSkewMargin     = 10 * time.Second
	defaultReplicaTimeout = 2 * time.Second
)

// Errors a Store returns besides idempotency's. A Store that could not
// read or write Redis (unreachable, an error reply, replicas that did not
// acknowledge a claim in time, or ErrStoreReset) returns an error matching
// transport.ErrUnavailable, "try again later", as for a venue outage: the
// call did nothing a caller can rely on, and orders.Placer sent nothing.
// Create refuses an intent
// another process holds, or abandoned while a signature it sent can still
// be accepted, with an error matching idempotency.ErrInProgress whose
// message names the holder, when its claim lapses and when its signatures
// expire; Update refuses a Store that no longer holds the intent's claim
// (another process took it over, or the claim was released when the
// intent reached a final state) with one matching idempotency.ErrClaimLost.
var (
	// ErrNotDurable: the Redis server does not fsync every write
	// (appendonly yes, appendfsync always) or may evict intents.
	ErrNotDurable = errors.New("redisstore: Redis does not make every write durable")
	// ErrStoreReset: Redis no longer holds what this Store saw before: the
	// account's generation marker is gone or different (Redis was wiped,
	// restarted without its append-only file, or failed over to a replica
	// that never had the marker), or its write counter went back (an older
	// snapshot, a replica that lacks recent claims). Intents may be lost,
	// so a fresh-looking intent proves nothing. The Store refuses this and
	// every later call (it fails closed); an operator must look at the
	// account's orders before any process places again. It matches
	// transport.ErrUnavailable too.
	ErrStoreReset = errors.New("redisstore: Redis lost intents")
)

// unavailableError is a Redis failure: it matches
// transport.ErrUnavailable, and ErrStoreReset when reset is set.
type unavailableError struct {
	reset bool
	msg   string
	err   error
}

func (e *unavailableError) Error() string {
	if e.err != nil {
		return e.msg + ": " + e.err.Error()
	}
	return e.msg
}

func (e *unavailableError) Unwrap() error { return e.err }

func (e *unavailableError) Is(target error) bool {
	return target == transport.ErrUnavailable || (e.reset && target == ErrStoreReset)
}

func unavailable(err error, format string, args ...any) error {
	return &unavailableError{msg: fmt.Sprintf(format, args...), err: err}
}

// Store is an idempotency.Store kept in Redis and shared by every process
// that trades one account, with claims that keep two holders (Places or
// Recovers, in one process or several) from working on one intent at
// once. It is safe for concurrent use and may be shared by every Client of
// a process; the zero value is not usable: construct one with New or
// Open.
type store struct {
	rdb     redis.UniversalClient
	owned   bool
	account string
	ns      string // tradewire:{ACCOUNT}:
	index   string // every intent
	open    string // the open intents
	settled string // the settled intents, by when they are due for deletion
	keep    time.Duration
	owner   string
	lease   time.Duration
	skew    time.Duration
	clock   clockwork.Clock
	genKey  string
	gen     string // the account's generation id, read or written by New
	// replicas is how many replicas every write waits for (WAIT), as
	// connected when New ran; 0 for none.
	replicas       int
	replicaTimeout time.Duration

	mu     sync.Mutex
	closed bool
	seq    int64 // the highest generation seq seen
	reset  error // set once Redis is found reset: every call returns it
	// ended are the holders of this Store whose claims may be left
	// behind; its next Create of the intent releases them.
	ended claim.Ended
}

var (
	_ idempotency.Store        = (*store)(nil)
	_ idempotency.BatchUpdater = (*store)(nil)
)

// Config configures a Store. The zero Config is the defaults below, on
// the real clock, with Redis's durability checked.
type Config struct {
	// Lease is how long a claim lasts after its last Create or Update. It
	// outlasts the longest quiet stretch of one Place (a reconcile can
	// wait out a signature's 30 s validity plus the margin without
	// writing). New refuses a lease shorter than signing.ValidFor plus
	// SkewMargin (40 s with the default margin): a shorter one would let
	// another process take over a claim whose holder, paused between
	// signing a create and sending it, can still land it. Zero means a
	// minute.
	Lease time.Duration
	// Retention is how long a settled intent (acknowledged, rejected, not
	// placed) is kept after it settled, on Redis's clock; at least an
	// hour. A settled intent is kept compacted (see package idempotency,
	// # Retention); once deleted, its key is new again and Place can place
	// a second order with it. Zero means 7 days, as idempotency.Config's.
	Retention time.Duration
	// ReplicaTimeout is how long a Create or Update waits for the server's
	// replicas to acknowledge it (WAIT), when the server had replicas
	// connected when New ran. Zero means 2 s.
	ReplicaTimeout time.Duration
	// SkewMargin is added to a signature's 30 s validity before an
	// abandoned intent may be taken over: the venue's clock may run
	// behind. Use the orders.Placer's margin. Zero means 10 s, the
	// Placer's default.
	SkewMargin time.Duration
	// Clock judges, with Redis's, whether an abandoned intent's signatures
	// have expired. Use the time the transport signs with
	// (transport.Client.VenueNow, the venue's clock as measured): record
	// times come from it; broker.Client does. Nil means the real clock.
	Clock clockwork.Clock
	// WeakDurability skips the check that Redis fsyncs every write
	// (appendonly yes, appendfsync always) and evicts no intents. A Redis
	// that loses acknowledged writes in a crash can forget an intent whose
	// order was sent, and a later Place could then send it again. Set it
	// only where CONFIG is disabled and durability is known by other
	// means.
	WeakDurability bool

	// shortLease lets tests use a lease under the floor; set only by
	// export_test.go.
	shortLease bool
}

// Open connects to the Redis at url (redis://[:password@]host:port/db,
// rediss:// for TLS) and returns a Store for accountNumber as New does,
// owning the connection: Close closes it.
func Open(ctx context.Context, url, accountNumber string, cfg Config) (idempotency.Store, error) {
	o, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("redisstore: Redis URL: %w", err)
	}
	rdb := redis.NewClient(o)
	s, err := newStore(ctx, rdb, accountNumber, cfg)
	if err != nil {
		rdb.Close()
		return nil, err
	}
	s.owned = true
	return s, nil
}

// New returns the Store (an idempotency.Store that is also an
// idempotency.BatchUpdater and an idempotency.Meta) for accountNumber's
// intents kept in rdb. It checks
// that Redis answers PING (an error matching transport.ErrUnavailable
// otherwise),
// and that it runs with appendonly yes and appendfsync always and a
// maxmemory-policy that cannot evict intents (noeviction or volatile-*),
// refusing with an error matching ErrNotDurable otherwise (see
// Config.WeakDurability). It reads the account's generation marker, writing
// one if the account has neither a marker nor intents; intents without a
// marker are refused with ErrStoreReset (see the package doc, Wipes and
// failovers). It counts the server's connected replicas: with any, every
// Create and Update waits for them. Close does not close rdb.
func New(ctx context.Context, rdb redis.UniversalClient, accountNumber string, cfg Config) (idempotency.Store, error) {
	s, err := newStore(ctx, rdb, accountNumber, cfg)
	if err != nil {
		return nil, err
	}
	return s, nil
}

func newStore(ctx context.Context, rdb redis.UniversalClient, accountNumber string, cfg Config) (*store, error) {
	if rdb == nil {
		return nil, errors.New("redisstore: a Redis client is required")
	}
	if !wire.ValidAccountNumber(accountNumber) {
		return nil, fmt.Errorf("redisstore: account number %q: want 1 to 64 letters and digits", accountNumber)
	}
	if cfg.Clock == nil {
		cfg.Clock = clockwork.NewRealClock()
	}
	if cfg.Lease == 0 {
		cfg.Lease = defaultLease
	}
	if cfg.Retention == 0 {
		cfg.Retention = 7 * 24 * time.Hour // idempotency.Config's default
	}
	if cfg.ReplicaTimeout == 0 {
		cfg.ReplicaTimeout = defaultReplicaTimeout
	}
	if cfg.SkewMargin == 0 {
		cfg.SkewMargin = defaultSkewMargin
	}
	if cfg.SkewMargin < 0 {
		return nil, fmt.Errorf("redisstore: SkewMargin %v: want a margin not negative", cfg.SkewMargin)
	}
	if floor := signing.ValidFor + cfg.SkewMargin; cfg.Lease < floor && !(cfg.shortLease && cfg.Lease >= time.Millisecond) {
		return nil, fmt.Errorf("redisstore: Lease %v: want at least %v, the signature window (%v) plus the skew margin (%v)", cfg.Lease, floor, signing.ValidFor, cfg.SkewMargin)
	}
	if cfg.Retention < time.Hour {
		return nil, fmt.Errorf("redisstore: Retention %v: want at least 1h", cfg.Retention)
	}
	if cfg.ReplicaTimeout < time.Millisecond {
		return nil, fmt.Errorf("redisstore: ReplicaTimeout %v: want at least 1ms", cfg.ReplicaTimeout)
	}
	if err := rdb.Ping(ctx).Err(); err != nil {
		return nil, unavailable(err, "redisstore: Redis does not answer PING")
	}
	if !cfg.WeakDurability {
		if err := checkDurable(ctx, rdb); err != nil {
			return nil, err
		}
	}
	replicas, err := connectedReplicas(ctx, rdb)
	if err != nil {
		return nil, err
	}
	ns := "tradewire:{" + accountNumber + "}:"
	s := &store{
		rdb: rdb, account: accountNumber, ns: ns, index: ns + "intents", genKey: ns + "generation",
		open: ns + "open", settled: ns + "settled", keep: cfg.Retention,
		owner: claim.NewOwner(), lease: cfg.Lease, skew: cfg.SkewMargin, clock: cfg.Clock,
		replicas: replicas, replicaTimeout: cfg.ReplicaTimeout,
	}
	if err := s.readGeneration(ctx); err != nil {
		return nil, err
	}
	if _, err := s.run(ctx, indexScript, []string{s.genKey, s.index, s.open, s.settled}, s.key(""), s.keep.Milliseconds()); err != nil {
		return nil, unavailable(err, "redisstore: indexing the intents of account %s", s.account)
	}
	return s, nil
}

// connectedReplicas reads connected_slaves from INFO replication.
func connectedReplicas(ctx context.Context, rdb redis.UniversalClient) (int, error) {
	info, err := rdb.Info(ctx, "replication").Result()
	if err != nil {
		return 0, unavailable(err, "redisstore: INFO replication")
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "connected_slaves:"); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				return 0, fmt.Errorf("redisstore: INFO replication: connected_slaves %q", v)
			}
			return n, nil
		}
	}
	return 0, nil
}

// readGeneration reads the account's generation marker, or writes a new
// one on an account that has no intents.
func (s *store) readGeneration(ctx context.Context) error {
	var b [12]byte
	rand.Read(b[:])
	v, err := s.run(ctx, generationScript, []string{s.genKey, s.index}, hex.EncodeToString(b[:]))
	if err != nil {
		return unavailable(err, "redisstore: reading the generation marker of account %s", s.account)
	}
	if code, _ := v[0].(int64); code == -1 {
		n, _ := v[1].(int64)
		return &unavailableError{reset: true, msg: fmt.Sprintf(
			"redisstore: account %s has %d intents in Redis but no generation marker (%s): Redis may have lost some of them, or they were written by a tradewire without markers; "+
				"refusing to trust it. Once the account's open orders are reconciled, adopt the intents with: redis-cli HSET '%s' id adopted seq 0",
			s.account, n, s.genKey, s.genKey)}
	}
	s.gen, _ = v[1].(string)
	seq, _ := v[2].(int64)
	s.saw(seq)
	return nil
}

// run runs a script that writes, and with replicas waits for them to
// acknowledge it (WAIT, on the same connection). Redis errors are
// returned as they are.
func (s *store) run(ctx context.Context, script *redis.Script, keys []string, args ...any) ([]any, error) {
	if s.replicas == 0 {
		return script.Run(ctx, s.rdb, keys, args...).Slice()
	}
	pipe := s.rdb.Pipeline()
	cmd := script.Eval(ctx, pipe, keys, args...)
	wait := pipe.Do(ctx, "wait", s.replicas, s.replicaTimeout.Milliseconds())
	if _, err := pipe.Exec(ctx); err != nil {
		if cmd.Err() != nil {
			return nil, cmd.Err()
		}
		return nil, err
	}
	v, err := cmd.Slice()
	if err != nil {
		return nil, err
	}
	if n, err := wait.Int64(); err != nil || n < int64(s.replicas) {
		return nil, fmt.Errorf("WAIT: %d of %d replicas acknowledged the write within %v", n, s.replicas, s.replicaTimeout)
	}
	return v, nil
}

// saw records a generation seq Redis reported.
func (s *store) saw(seq int64) {
	s.mu.Lock()
	s.seq = max(s.seq, seq)
	s.mu.Unlock()
}

// guarded runs a claim script with the generation guard's arguments
// first, and turns the guard's refusals into a sticky ErrStoreReset.
func (s *store) guarded(ctx context.Context, what string, script *redis.Script, keys []string, args ...any) ([]any, error) {
	s.mu.Lock()
	last := s.seq
	s.mu.Unlock()
	v, err := s.run(ctx, script, keys, append([]any{s.gen, last}, args...)...)
	if err != nil {
		return nil, unavailable(err, "redisstore: %s (nothing may be sent on it)", what)
	}
	var why string
	switch code, _ := v[0].(int64); code {
	case -9:
		have, _ := v[1].(string)
		if have == "" {
			have = "none"
		}
		why = fmt.Sprintf("the generation marker %s is %s, not %s", s.genKey, have, s.gen)
	case -8:
		have, _ := v[1].(int64)
		why = fmt.Sprintf("its write counter went back from %d to %d", last, have)
	default:
		seq, _ := v[len(v)-1].(int64)
		s.saw(seq)
		return v, nil
	}
	err = &unavailableError{reset: true, msg: fmt.Sprintf(
		"redisstore: Redis lost intents of account %s (wiped, restarted without its data, or failed over to a replica that lacks them): %s; "+
			"refusing every call until this Store is reopened after the account's orders are reconciled", s.account, why)}
	s.mu.Lock()
	if s.reset == nil {
		s.reset = err
	}
	err = s.reset
	s.mu.Unlock()
	return nil, err
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
			return fmt.Errorf("%w: cannot verify it (CONFIG GET %s: %v); set Config.WeakDurability to run anyway", ErrNotDurable, name, err)
		}
		if v, ok := got[name]; !ok || !want[name](v) {
			return fmt.Errorf("%w: %s is %q; run redis-server with --appendonly yes --appendfsync always (and maxmemory-policy noeviction), or set Config.WeakDurability", ErrNotDurable, name, got[name])
		}
	}
	return nil
}

func (s *store) key(cid string) string { return s.ns + "intent:" + cid }

func (s *store) check(rec idempotency.Record) error {
	if err := s.usable(); err != nil {
		return err
	}
	switch {
	case rec.ClientOrderID == "":
		return errors.New("redisstore: record: client_order_id is empty")
	case rec.AccountNumber != s.account:
		return fmt.Errorf("redisstore: record %s: account_number %q is not this store's account %q", rec.ClientOrderID, rec.AccountNumber, s.account)
	}
	return nil
}

// usable returns ErrClosed, or the ErrStoreReset that failed the Store
// closed, or nil.
func (s *store) usable() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return idempotency.ErrClosed
	case s.reset != nil:
		return s.reset
	}
	return nil
}

// signExpiry is when the record's latest signature can no longer be
// accepted, in Unix ms; 0 when nothing was signed.
func (s *store) signExpiry(rec idempotency.Record) int64 {
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
//   - claimed by another process: an error matching
//     idempotency.ErrInProgress that names the holder, and nothing changes;
//   - not placed, or abandoned (its claim lapsed and, if it is pending or
//     unknown, every signature it was sent with has expired on both
//     Redis's clock and this Store's): the claim passes to this Store. The
//     caller must then look the order up before sending anything again, as
//     orders.Placer does for pending and unknown intents.
func (s *store) Create(ctx context.Context, rec idempotency.Record) (idempotency.Record, bool, error) {
	if err := s.check(rec); err != nil {
		return idempotency.Record{}, false, err
	}
	js, err := claim.Encode("redisstore", rec)
	if err != nil {
		return idempotency.Record{}, false, err
	}
	if err := s.releaseEnded(ctx, rec.ClientOrderID); err != nil {
		return idempotency.Record{}, false, err
	}
	v, err := s.guarded(ctx, "claiming "+rec.ClientOrderID, createScript, []string{s.key(rec.ClientOrderID), s.index, s.genKey, s.open, s.settled},
		s.holder(rec.Holder), s.lease.Milliseconds(), js, string(rec.State), s.signExpiry(rec),
		s.clock.Now().UnixMilli(), rec.CreatedAt.UnixMilli(), rec.ClientOrderID, s.key(""), s.keep.Milliseconds())
	if err != nil {
		s.ended.Add(rec.ClientOrderID, rec.Holder)
		return idempotency.Record{}, false, err
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
		e := &claim.InProgressError{Store: "redisstore", ClientOrderID: rec.ClientOrderID}
		e.Owner, _ = v[2].(string)
		if ms, _ := v[3].(int64); ms > 0 && e.Owner != "" {
			e.LeaseExpires = time.UnixMilli(ms)
		}
		if ms, _ := v[4].(int64); ms > 0 {
			e.SignaturesExpire = time.UnixMilli(ms)
		}
		return idempotency.Record{}, false, e
	}
	if st := existing.State; st != idempotency.Acknowledged && st != idempotency.Rejected { // not final for the create sent
		existing.Holder = rec.Holder
	}
	if len(existing.Body) == 0 && existing.Target == "" && existing.Fingerprint == rec.Fingerprint {
		// Compacted: the same request's body is the one recorded.
		existing.Body, existing.Target = rec.Body, rec.Target
	}
	return existing, false, nil
}

// holder is the claim owner a caller's holder token is written as: this
// Store's owner id, then the token, so that the holder names its process.
func (s *store) holder(token string) string { return s.owner + "/" + token }

// Release implements idempotency.Store: it drops holder's claim on the
// intent, leaving the record as it is, so that another Create takes it up
// at once rather than when the lease lapses. A Release that fails (Redis
// unreachable) is remembered: the next Create of the intent from this
// Store releases the claim first, since its holder has ended; other
// processes wait for the lease to lapse.
func (s *store) Release(ctx context.Context, id, holder string) error {
	if err := s.usable(); err != nil {
		return err
	}
	_, err := s.guarded(ctx, "releasing "+id, releaseScript, []string{s.key(id), s.genKey}, s.holder(holder))
	if err != nil {
		s.ended.Add(id, holder)
	}
	return err
}

// releaseEnded releases the claims on id that ended holders of this Store
// may have left behind.
func (s *store) releaseEnded(ctx context.Context, id string) error {
	return s.ended.Release(id, func(h string) error {
		_, err := s.guarded(ctx, "releasing "+id, releaseScript, []string{s.key(id), s.genKey}, s.holder(h))
		return err
	})
}

func decode(cid string, v any) (idempotency.Record, error) {
	str, ok := v.(string)
	if !ok {
		return idempotency.Record{}, fmt.Errorf("redisstore: intent %s has no record", cid)
	}
	return claim.Decode("redisstore", cid, []byte(str))
}

// Get implements idempotency.Store.
func (s *store) Get(ctx context.Context, id string) (idempotency.Record, error) {
	if err := s.usable(); err != nil {
		return idempotency.Record{}, err
	}
	v, err := s.rdb.HGet(ctx, s.key(id), "rec").Result()
	if errors.Is(err, redis.Nil) {
		return idempotency.Record{}, idempotency.ErrNotFound
	}
	if err != nil {
		return idempotency.Record{}, unavailable(err, "redisstore: get %s", id)
	}
	return decode(id, v)
}

// Update implements idempotency.Store, fenced by the claim: only the
// Store holding the intent's claim may update it; any other gets an error
// matching idempotency.ErrClaimLost. An update renews the claim, or
// releases it when the state is final (acknowledged, rejected, not
// placed), so that another process may then take a not-placed intent up
// again.
func (s *store) Update(ctx context.Context, rec idempotency.Record) error {
	return s.UpdateAll(ctx, []idempotency.Record{rec})[0]
}

// UpdateAll implements idempotency.BatchUpdater: it applies each record
// as Update does, with one script, so one durable write (and one wait for
// the replicas) for them all.
func (s *store) UpdateAll(ctx context.Context, recs []idempotency.Record) []error {
	errs := make([]error, len(recs))
	keys := []string{s.genKey, s.open, s.settled, s.index}
	args := []any{s.lease.Milliseconds(), s.key(""), s.keep.Milliseconds()}
	var sent []int
	for i, rec := range recs {
		if errs[i] = s.check(rec); errs[i] != nil {
			continue
		}
		js, err := claim.Encode("redisstore", rec)
		if errs[i] = err; err != nil {
			continue
		}
		keys = append(keys, s.key(rec.ClientOrderID))
		args = append(args, s.holder(rec.Holder), js, string(rec.State), s.signExpiry(rec), rec.CreatedAt.UnixMilli(), rec.ClientOrderID)
		sent = append(sent, i)
	}
	if len(sent) == 0 {
		return errs
	}
	what := "updating " + recs[sent[0]].ClientOrderID
	if len(sent) > 1 {
		what = fmt.Sprintf("updating %d intents", len(sent))
	}
	v, err := s.guarded(ctx, what, updateScript, keys, args...)
	for k, i := range sent {
		id := recs[i].ClientOrderID
		if err != nil {
			errs[i] = err
			continue
		}
		if 2*k+1 >= len(v) {
			errs[i] = fmt.Errorf("redisstore: update %s: unexpected reply %v", id, v)
			continue
		}
		switch code, _ := v[2*k].(int64); code {
		case 1:
		case -1:
			errs[i] = idempotency.ErrNotFound
		case 0:
			holder, _ := v[2*k+1].(string)
			if holder == "" {
				holder = "nobody (released)"
			}
			errs[i] = fmt.Errorf("%w: client_order_id %s is held by %s", idempotency.ErrClaimLost, id, holder)
		default:
			errs[i] = fmt.Errorf("redisstore: update %s: unexpected reply %v", id, v)
		}
	}
	return errs
}

// List implements idempotency.Store. It reads the intents of the
// account, in batches, and returns those in the given states (all when
// none are given), oldest first. Listing only open states (pending,
// unknown) reads the open ones alone.
func (s *store) List(ctx context.Context, states ...idempotency.State) ([]idempotency.Record, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	set := s.open
	for _, st := range states {
		if !st.Open() {
			set = s.index
		}
	}
	if len(states) == 0 {
		set = s.index
	}
	ids, err := s.rdb.ZRange(ctx, set, 0, -1).Result()
	if err != nil {
		return nil, unavailable(err, "redisstore: list")
	}
	var out []idempotency.Record
	for batch := range slices.Chunk(ids, 500) {
		pipe := s.rdb.Pipeline()
		cmds := make([]*redis.StringCmd, len(batch))
		for i, id := range batch {
			cmds[i] = pipe.HGet(ctx, s.key(id), "rec")
		}
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return nil, unavailable(err, "redisstore: list")
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
func (s *store) Close() error {
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
