package pgstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jonboulle/clockwork"

	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/internal/claim"
	"github.com/tradewire/tradewire/internal/pgconn"
	"github.com/tradewire/tradewire/internal/wire"
	"github.com/tradewire/tradewire/signing"
	"github.com/tradewire/tradewire/transport"
)

// The defaults a zero Config field stands for.
const (
	defaultLease      = time.Minute
	defaultRetention  = 7 * 24 * time.Hour // idempotency.Config's
	defaultSkewMargin = 10 * time.Second
)

// Config configures the Store Open returns. The zero Config is the
// defaults below, on the real clock.
type Config struct {
	// Lease is how long a claim lasts after its last Create or Update, on
	// the server's clock. It outlasts the longest quiet stretch of one
	// Place (a reconcile can wait out a signature's 30 s validity plus the
	// margin without writing). Open refuses a lease shorter than
	// signing.ValidFor plus SkewMargin (40 s with the default margin): a
	// shorter one would let another process take over a claim whose
	// holder, paused between signing a create and sending it, can still
	// land it. Zero means a minute.
	Lease time.Duration
	// Retention is how long a settled intent (acknowledged, rejected, not
	// placed) is kept after it settled, on the server's clock; at least an
	// hour. A settled intent is kept compacted (see package idempotency,
	// # Retention); once deleted, its key is new again and Place can place
	// a second order with it. Zero means 7 days, as idempotency.Config's.
	Retention time.Duration
	// SkewMargin is added to a signature's 30 s validity before an
	// abandoned intent may be taken over: the venue's clock may run
	// behind. Use the orders.Placer's margin. Zero means 10 s, the
	// Placer's default.
	SkewMargin time.Duration
	// Timeout bounds every wait on the server: each connection attempt
	// (whatever the URL's connect_timeout says) and each call's
	// statements, including a commit waiting for a synchronous standby.
	// A call that runs out of it fails with an error matching
	// transport.ErrUnavailable. Zero means 5 s.
	Timeout time.Duration
	// Clock judges, with the server's, whether an abandoned intent's
	// signatures have expired. Use the time the transport signs with
	// (transport.Client.VenueNow): record times come from it. Nil means
	// the real clock.
	Clock clockwork.Clock

	// shortLease lets tests use a lease under the floor; set only by
	// export_test.go.
	shortLease bool
}

// store is the idempotency.Store Open returns. It is safe for concurrent
// use.
type store struct {
	pool    *pgconn.Pool
	account string
	owner   string
	lease   time.Duration
	keep    time.Duration
	skew    time.Duration
	clock   clockwork.Clock
	vouch   *vouching

	mu     sync.Mutex
	closed bool
	// ended are the holders of this Store whose claims may be left
	// behind; its next Create of the intent releases them.
	ended claim.Ended
}

var (
	_ idempotency.Store        = (*store)(nil)
	_ idempotency.BatchUpdater = (*store)(nil)
	_ idempotency.Meta         = (*store)(nil)
	_ idempotency.Witness      = (*store)(nil)
)

// Open connects to the PostgreSQL at url (a postgres:// URL or a
// keyword/value string; several hosts with target_session_attrs=read-write
// for a primary and its standbys) and returns the Store of accountNumber's
// intents: an idempotency.Store that is also an idempotency.BatchUpdater,
// an idempotency.Meta and an idempotency.Witness. It creates or migrates
// the schema, and reads the server's replication settings (see
// GuaranteeOf). A server that cannot be reached or does not answer within
// Config.Timeout is an error matching transport.ErrUnavailable. No error
// shows the URL's password. Close closes the connections.
func Open(ctx context.Context, url, accountNumber string, cfg Config) (idempotency.Store, error) {
	if !wire.ValidAccountNumber(accountNumber) {
		return nil, fmt.Errorf("pgstore: account number %q: want 1 to 64 letters and digits", accountNumber)
	}
	if cfg.Clock == nil {
		cfg.Clock = clockwork.NewRealClock()
	}
	if cfg.Lease == 0 {
		cfg.Lease = defaultLease
	}
	if cfg.Retention == 0 {
		cfg.Retention = defaultRetention
	}
	if cfg.SkewMargin == 0 {
		cfg.SkewMargin = defaultSkewMargin
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = pgconn.DefaultTimeout
	}
	switch floor := signing.ValidFor + cfg.SkewMargin; {
	case cfg.SkewMargin < 0:
		return nil, fmt.Errorf("pgstore: SkewMargin %v: want a margin not negative", cfg.SkewMargin)
	case cfg.Lease < floor && !(cfg.shortLease && cfg.Lease >= time.Millisecond):
		return nil, fmt.Errorf("pgstore: Lease %v: want at least %v, the signature window (%v) plus the skew margin (%v)", cfg.Lease, floor, signing.ValidFor, cfg.SkewMargin)
	case cfg.Retention < time.Hour:
		return nil, fmt.Errorf("pgstore: Retention %v: want at least 1h", cfg.Retention)
	case cfg.Timeout < time.Millisecond:
		return nil, fmt.Errorf("pgstore: Timeout %v: want at least 1ms", cfg.Timeout)
	}
	v := &vouching{hosts: hostCount(url)}
	pool, err := pgconn.Connect(ctx, url, pgconn.Options{Timeout: cfg.Timeout, Unavailable: transport.ErrUnavailable, AfterConnect: v.check})
	if err != nil {
		return nil, fmt.Errorf("pgstore: %w", err)
	}
	if _, err := pool.Migrate(ctx, component, steps); err != nil {
		pool.Close()
		return nil, fmt.Errorf("pgstore: %w", err)
	}
	return &store{
		pool: pool, account: accountNumber, owner: claim.NewOwner(), lease: cfg.Lease, keep: cfg.Retention,
		skew: cfg.SkewMargin, clock: cfg.Clock, vouch: v,
	}, nil
}

// holder is the claim owner a caller's holder token is written as: this
// Store's owner id, then the token, so that the holder names its process.
func (s *store) holder(token string) string { return s.owner + "/" + token }

// usable returns ErrClosed once the Store is closed.
func (s *store) usable() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return idempotency.ErrClosed
	}
	return nil
}

func (s *store) check(rec idempotency.Record) error {
	if err := s.usable(); err != nil {
		return err
	}
	switch {
	case rec.ClientOrderID == "":
		return errors.New("pgstore: record: client_order_id is empty")
	case rec.AccountNumber != s.account:
		return fmt.Errorf("pgstore: record %s: account_number %q is not this store's account %q", rec.ClientOrderID, rec.AccountNumber, s.account)
	}
	return nil
}

// signExpiry is when the record's latest signature can no longer be
// accepted; nil (SQL NULL) when nothing was signed.
func (s *store) signExpiry(rec idempotency.Record) any {
	if rec.LastSignedAt.IsZero() {
		return nil
	}
	return rec.LastSignedAt.Add(signing.ValidFor + s.skew)
}

func decode(cid string, js []byte) (idempotency.Record, error) {
	return claim.Decode("pgstore", cid, js)
}

// Create implements idempotency.Store, atomically across processes. It
// writes rec and a claim for rec.Holder unless an intent with its
// ClientOrderID exists. For an existing intent it returns it with created
// false and:
//   - acknowledged or rejected: nothing else happens;
//   - claimed by this holder: the claim is renewed;
//   - claimed by another holder: an error matching idempotency.ErrInProgress
//     that names the holder, and nothing changes;
//   - not placed, released, or abandoned (its claim lapsed and, if it is
//     pending or unknown, every signature it was sent with has expired on
//     both the server's clock and this Store's): the claim passes to the
//     caller, who must look the order up before sending anything again,
//     as orders.Placer does for pending and unknown intents.
//
// The claim is committed (on the synchronous standby, when there is one)
// before Create returns.
func (s *store) Create(ctx context.Context, rec idempotency.Record) (idempotency.Record, bool, error) {
	if err := s.check(rec); err != nil {
		return idempotency.Record{}, false, err
	}
	js, err := claim.Encode("pgstore", rec)
	if err != nil {
		return idempotency.Record{}, false, err
	}
	ctx, cancel := s.pool.Bound(ctx)
	defer cancel()
	if err := s.releaseEnded(ctx, rec.ClientOrderID); err != nil {
		return idempotency.Record{}, false, err
	}
	got, created, err := s.create(ctx, rec, js)
	if err != nil && !errors.Is(err, idempotency.ErrInProgress) {
		s.ended.Add(rec.ClientOrderID, rec.Holder)
	}
	return got, created, err
}

func (s *store) create(ctx context.Context, rec idempotency.Record, js []byte) (idempotency.Record, bool, error) {
	me, id := s.holder(rec.Holder), rec.ClientOrderID
	fail := func(err error) (idempotency.Record, bool, error) {
		return idempotency.Record{}, false, s.pool.Err(err, "pgstore: claiming %s (nothing may be sent on it)", id)
	}
	// Each pass either ends or saw the intent change under it (deleted by
	// retention, released); a few passes settle any race.
	for range 8 {
		tag, err := s.pool.Exec(ctx, insertSQL, s.account, id, js, string(rec.State), me, s.lease.Milliseconds(), s.signExpiry(rec), rec.CreatedAt)
		if err != nil {
			return fail(err)
		}
		if tag.RowsAffected() == 1 {
			return rec, true, nil
		}
		var old []byte
		err = s.pool.QueryRow(ctx, claimSQL, s.account, id, me, s.lease.Milliseconds(), s.clock.Now()).Scan(&old)
		if err == nil {
			existing, err := decode(id, old)
			if err != nil {
				return idempotency.Record{}, false, err
			}
			existing.Holder = rec.Holder
			if len(existing.Body) == 0 && existing.Target == "" && existing.Fingerprint == rec.Fingerprint {
				// Compacted: the same request's body is the one recorded.
				existing.Body, existing.Target = rec.Body, rec.Target
			}
			return existing, false, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return fail(err)
		}
		var (
			state, owner   string
			lease, signexp *time.Time
			isFree         bool
		)
		err = s.pool.QueryRow(ctx, peekSQL, s.account, id, me, s.clock.Now()).Scan(&old, &state, &owner, &lease, &signexp, &isFree)
		switch {
		case errors.Is(err, pgx.ErrNoRows), err == nil && isFree:
			continue // deleted or freed since: try again
		case err != nil:
			return fail(err)
		}
		existing, err := decode(id, old)
		if err != nil {
			return idempotency.Record{}, false, err
		}
		if st := idempotency.State(state); st == idempotency.Acknowledged || st == idempotency.Rejected {
			return existing, false, nil
		}
		e := &claim.InProgressError{Store: "pgstore", ClientOrderID: id, Owner: owner}
		if lease != nil && owner != "" {
			e.LeaseExpires = *lease
		}
		if signexp != nil {
			e.SignaturesExpire = *signexp
		}
		return idempotency.Record{}, false, e
	}
	return idempotency.Record{}, false, fmt.Errorf("pgstore: claiming %s: the intent kept changing; try again", id)
}

// Release implements idempotency.Store: it drops holder's claim on the
// intent, leaving the record as it is, so that another Create takes it up
// at once rather than when the lease lapses. A Release that fails (the
// server unreachable) is remembered: the next Create of the intent from
// this Store releases the claim first, since its holder has ended; other
// processes wait for the lease to lapse.
func (s *store) Release(ctx context.Context, id, holder string) error {
	if err := s.usable(); err != nil {
		return err
	}
	ctx, cancel := s.pool.Bound(ctx)
	defer cancel()
	if _, err := s.pool.Exec(ctx, releaseSQL, s.account, id, s.holder(holder)); err != nil {
		s.ended.Add(id, holder)
		return s.pool.Err(err, "pgstore: releasing %s", id)
	}
	return nil
}

// releaseEnded releases the claims on id that ended holders of this Store
// may have left behind.
func (s *store) releaseEnded(ctx context.Context, id string) error {
	return s.ended.Release(id, func(h string) error {
		if _, err := s.pool.Exec(ctx, releaseSQL, s.account, id, s.holder(h)); err != nil {
			return s.pool.Err(err, "pgstore: releasing %s (nothing may be sent on it)", id)
		}
		return nil
	})
}

// Get implements idempotency.Store.
func (s *store) Get(ctx context.Context, id string) (idempotency.Record, error) {
	if err := s.usable(); err != nil {
		return idempotency.Record{}, err
	}
	ctx, cancel := s.pool.Bound(ctx)
	defer cancel()
	var js []byte
	err := s.pool.QueryRow(ctx, `SELECT rec FROM tradewire_intents WHERE account = $1 AND client_order_id = $2`, s.account, id).Scan(&js)
	if errors.Is(err, pgx.ErrNoRows) {
		return idempotency.Record{}, idempotency.ErrNotFound
	}
	if err != nil {
		return idempotency.Record{}, s.pool.Err(err, "pgstore: get %s", id)
	}
	return decode(id, js)
}

// Update implements idempotency.Store, fenced by the claim: only the
// intent's holder may update it; anyone else gets an error matching
// idempotency.ErrClaimLost. An update renews the claim, or releases it
// when the state is final (acknowledged, rejected, not placed), so that
// another holder may then take a not-placed intent up again. It is
// committed (on the synchronous standby, when there is one) before it
// returns.
func (s *store) Update(ctx context.Context, rec idempotency.Record) error {
	return s.UpdateAll(ctx, []idempotency.Record{rec})[0]
}

// UpdateAll implements idempotency.BatchUpdater: it applies each record
// as Update does, in one transaction (one commit, one round trip), which also deletes up
// to 16 settled intents past their retention.
func (s *store) UpdateAll(ctx context.Context, recs []idempotency.Record) []error {
	errs := make([]error, len(recs))
	var (
		batch pgx.Batch
		sent  []int
		ids   []string
	)
	// In client_order_id order, so that two commits lock rows in one
	// order and never wait on each other in a cycle.
	order := make([]int, len(recs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(i, j int) int { return strings.Compare(recs[i].ClientOrderID, recs[j].ClientOrderID) })
	for _, i := range order {
		rec := recs[i]
		if errs[i] = s.check(rec); errs[i] != nil {
			continue
		}
		js, err := claim.Encode("pgstore", rec)
		if errs[i] = err; err != nil {
			continue
		}
		batch.Queue(updateSQL, s.account, rec.ClientOrderID, js, string(rec.State), s.holder(rec.Holder),
			s.lease.Milliseconds(), s.signExpiry(rec), rec.CreatedAt)
		sent = append(sent, i)
		ids = append(ids, rec.ClientOrderID)
	}
	if len(sent) == 0 {
		return errs
	}
	batch.Queue(purgeSQL, s.account, s.keep.Milliseconds(), ids)
	what := "updating " + ids[0]
	if len(ids) > 1 {
		what = fmt.Sprintf("updating %d intents", len(ids))
	}
	ctx, cancel := s.pool.Bound(ctx)
	defer cancel()
	type result struct {
		wrote int64
		owner *string
	}
	res := make([]result, len(sent))
	// One batch is one implicit transaction, committed at its end: Close
	// reports whether the commit was made.
	err := func() error {
		br := s.pool.SendBatch(ctx, &batch)
		for k := range sent {
			if err := br.QueryRow().Scan(&res[k].wrote, &res[k].owner); err != nil {
				br.Close()
				return err
			}
		}
		if _, err := br.Exec(); err != nil {
			br.Close()
			return err
		}
		return br.Close()
	}()
	for k, i := range sent {
		id := recs[i].ClientOrderID
		switch r := res[k]; {
		case err != nil:
			errs[i] = s.pool.Err(err, "pgstore: %s (nothing may be sent on it)", what)
		case r.wrote == 1:
		case r.owner == nil:
			errs[i] = idempotency.ErrNotFound
		default:
			holder := *r.owner
			if holder == "" {
				holder = "nobody (released)"
			}
			errs[i] = fmt.Errorf("%w: client_order_id %s is held by %s", idempotency.ErrClaimLost, id, holder)
		}
	}
	return errs
}

// List implements idempotency.Store: the account's intents in the given
// states (all when none are given), oldest first. Listing only open
// states (pending, unknown) reads the open intents' index alone.
func (s *store) List(ctx context.Context, states ...idempotency.State) ([]idempotency.Record, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	ctx, cancel := s.pool.Bound(ctx)
	defer cancel()
	q, args := `SELECT client_order_id, rec FROM tradewire_intents WHERE account = $1`, []any{s.account}
	if len(states) > 0 {
		names := make([]string, len(states))
		open := true
		for i, st := range states {
			names[i], open = string(st), open && st.Open()
		}
		if open {
			q += ` AND state IN ('pending', 'unknown')`
		}
		q += ` AND state = ANY($2::text[])`
		args = append(args, names)
	}
	rows, err := s.pool.Query(ctx, q+` ORDER BY created_at, client_order_id`, args...)
	if err != nil {
		return nil, s.pool.Err(err, "pgstore: list")
	}
	defer rows.Close()
	var out []idempotency.Record
	for rows.Next() {
		var (
			id string
			js []byte
		)
		if err := rows.Scan(&id, &js); err != nil {
			return nil, s.pool.Err(err, "pgstore: list")
		}
		rec, err := decode(id, js)
		if err != nil {
			return nil, err
		}
		out = append(out, rec)
	}
	if err := rows.Err(); err != nil {
		return nil, s.pool.Err(err, "pgstore: list")
	}
	slices.SortStableFunc(out, func(a, b idempotency.Record) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out, nil
}

// Close implements idempotency.Store: it closes the Store's connections.
// Claims it holds are not released: they lapse with their lease.
func (s *store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.pool.Close()
	return nil
}
