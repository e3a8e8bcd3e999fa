package redisstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/redis/go-redis/v9"

	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/idempotency/redisstore"
	"github.com/tradewire/tradewire/internal/redistest"
	"github.com/tradewire/tradewire/internal/storetest"
)

// setup returns a Redis client and a fresh account namespace in it.
func setup(t *testing.T) (*redis.Client, string) { return redistest.Setup(t) }

// newStore is one process's Store.
func newStore(t *testing.T, rdb *redis.Client, acct string, cfg redisstore.Config) idempotency.Store {
	t.Helper()
	s, err := redisstore.New(context.Background(), rdb, acct, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func record(acct, cid string, created time.Time) idempotency.Record {
	return idempotency.Record{
		ClientOrderID: cid, Key: "k-" + cid, AccountNumber: acct, Symbol: "BTC-USD",
		Fingerprint: "fp", State: idempotency.Pending, Body: []byte(`{"client_order_id":"` + cid + `"}`),
		Target: "/api/v2/crypto/trading/orders/?account_number=" + acct, CreatedAt: created, UpdatedAt: created,
	}
}

// signed is rec as orders records it just before sending a create signed
// at at.
func signed(rec idempotency.Record, at time.Time) idempotency.Record {
	if rec.FirstSentAt.IsZero() {
		rec.FirstSentAt = at
	}
	rec.LastSignedAt = at
	rec.Sends++
	rec.UpdatedAt = at
	return rec
}

// TestClaims: the claim rules every store keeps, on Redis, with the
// holders sharing one Store (as the goroutines, Placers and Clients of one
// process do).
func TestClaims(t *testing.T) {
	storetest.Claims(t, func(t *testing.T) (idempotency.Store, string) {
		rdb, acct := setup(t)
		return newStore(t, rdb, acct, redisstore.Config{}), acct
	})
}

// TestMeta: the named values every store keeps, on Redis; another holder
// is a second Store on the account, as another process of the fleet has.
func TestMeta(t *testing.T) {
	storetest.Meta(t, func(t *testing.T) (idempotency.Store, string, func() idempotency.Store) {
		rdb, acct := setup(t)
		return newStore(t, rdb, acct, redisstore.Config{}), acct, func() idempotency.Store {
			return newStore(t, rdb, acct, redisstore.Config{})
		}
	})
}

// TestProcesses: the claim rules between processes, each a Store of its
// own on one account.
func TestProcesses(t *testing.T) {
	clock := clockwork.NewRealClock() // Redis's leases run on the real clock
	storetest.Processes(t, clock, func(t *testing.T) (func() idempotency.Store, string) {
		rdb, acct := setup(t)
		return func() idempotency.Store { return newStore(t, rdb, acct, redisstore.Config{Clock: clock}) }, acct
	}, redisstore.Owner)
}

func TestUpdateIsFencedByTheClaim(t *testing.T) {
	t.Parallel()
	rdb, acct := setup(t)
	ctx := context.Background()
	a, b := newStore(t, rdb, acct, redisstore.Config{}), newStore(t, rdb, acct, redisstore.Config{})
	rec := record(acct, "c1", time.Now())
	if _, _, err := a.Create(ctx, rec); err != nil {
		t.Fatal(err)
	}
	rec = signed(rec, time.Now())
	if err := b.Update(ctx, rec); !errors.Is(err, idempotency.ErrClaimLost) {
		t.Fatalf("non-holder's Update: err = %v, want ErrClaimLost", err)
	}
	if err := a.Update(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if got, err := b.Get(ctx, "c1"); err != nil || got.Sends != 1 {
		t.Fatalf("Get = %+v, %v", got, err)
	}
	if err := a.Update(ctx, record(acct, "nope", time.Now())); !errors.Is(err, idempotency.ErrNotFound) {
		t.Fatalf("Update of a missing intent: err = %v", err)
	}
}

// TestFinalStates: a resolved intent is returned to anyone without a
// claim; a not-placed one passes its claim to the next Create.
func TestFinalStates(t *testing.T) {
	t.Parallel()
	rdb, acct := setup(t)
	ctx := context.Background()
	a, b := newStore(t, rdb, acct, redisstore.Config{}), newStore(t, rdb, acct, redisstore.Config{})

	ack := record(acct, "ack", time.Now())
	a.Create(ctx, ack)
	ack = signed(ack, time.Now())
	a.Update(ctx, ack)
	ack.State, ack.OrderID = idempotency.Acknowledged, "order-1"
	if err := a.Update(ctx, ack); err != nil {
		t.Fatal(err)
	}
	got, created, err := b.Create(ctx, record(acct, "ack", time.Now()))
	if err != nil || created || got.State != idempotency.Acknowledged || got.OrderID != "order-1" {
		t.Fatalf("Create of an acknowledged intent = %+v, %v, %v", got, created, err)
	}
	if err := b.Update(ctx, got); !errors.Is(err, idempotency.ErrClaimLost) {
		t.Fatalf("Update of an acknowledged intent without a claim: err = %v", err)
	}

	np := record(acct, "np", time.Now())
	a.Create(ctx, np)
	np.State = idempotency.NotPlaced
	if err := a.Update(ctx, np); err != nil {
		t.Fatal(err)
	}
	got, created, err = b.Create(ctx, record(acct, "np", time.Now()))
	if err != nil || created || got.State != idempotency.NotPlaced {
		t.Fatalf("Create of a not-placed intent = %+v, %v, %v", got, created, err)
	}
	if err := b.Update(ctx, signed(got, time.Now())); err != nil {
		t.Fatalf("the new holder's Update: %v", err)
	}
	if err := a.Update(ctx, np); !errors.Is(err, idempotency.ErrClaimLost) {
		t.Fatalf("the former holder's Update: err = %v", err)
	}
}

// TestTakeover: an abandoned open intent passes to another process only
// once its lease has lapsed and its signatures have expired, on Redis's
// clock and the caller's.
func TestTakeover(t *testing.T) {
	t.Parallel()
	const shortLease = 50 * time.Millisecond
	for _, tc := range []struct {
		name string
		// signedAgo is how long before the subtest's own start the intent
		// was last signed; zero: never signed. Relative to each subtest's
		// start, so that a subtest scheduled late sees the same ages.
		signedAgo   time.Duration
		waitLease   bool
		callerClock clockwork.Clock
		takeover    bool
	}{
		{name: "never signed, lease lapsed", waitLease: true, takeover: true},
		{name: "never signed, lease live", takeover: false},
		{name: "signature live, lease lapsed", signedAgo: time.Nanosecond, waitLease: true, takeover: false},
		{name: "signature expired, lease live", signedAgo: 41 * time.Second, takeover: false},
		{name: "signature expired, lease lapsed", signedAgo: 41 * time.Second, waitLease: true, takeover: true},
		{name: "skew margin not yet past", signedAgo: 35 * time.Second, waitLease: true, takeover: false},
		{name: "caller's clock says live", signedAgo: 41 * time.Second, waitLease: true,
			callerClock: clockwork.NewFakeClockAt(time.Now().Add(-time.Minute)), takeover: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			now := time.Now()
			var lastSigned time.Time
			if tc.signedAgo != 0 {
				lastSigned = now.Add(-tc.signedAgo)
			}
			rdb, acct := setup(t)
			ctx := context.Background()
			lease := time.Minute
			if tc.waitLease {
				lease = shortLease
			}
			dead := newStore(t, rdb, acct, redisstore.ShortLeaseForTest(redisstore.Config{}, lease))
			next := newStore(t, rdb, acct, redisstore.Config{Clock: tc.callerClock})
			rec := record(acct, "c1", now)
			if _, _, err := dead.Create(ctx, rec); err != nil {
				t.Fatal(err)
			}
			if !lastSigned.IsZero() {
				rec = signed(rec, lastSigned)
				if err := dead.Update(ctx, rec); err != nil {
					t.Fatal(err)
				}
			}
			if tc.waitLease {
				time.Sleep(2 * shortLease) // Redis's clock is real
			}
			got, created, err := next.Create(ctx, record(acct, "c1", time.Now()))
			if !tc.takeover {
				var ip *redisstore.InProgressError
				if !errors.As(err, &ip) {
					t.Fatalf("Create = %v, %v; want *InProgressError", created, err)
				}
				if !lastSigned.IsZero() && !ip.SignaturesExpire.Equal(lastSigned.Add(40*time.Second).Truncate(time.Millisecond)) {
					t.Fatalf("SignaturesExpire = %v, want last signature + 40s", ip.SignaturesExpire)
				}
				return
			}
			if err != nil || created || got.Sends != rec.Sends || got.State != idempotency.Pending {
				t.Fatalf("takeover Create = %+v, %v, %v; want the existing record", got, created, err)
			}
			// The claim moved: the new holder may update, the old may not.
			if err := next.Update(ctx, got); err != nil {
				t.Fatalf("new holder's Update: %v", err)
			}
			if err := dead.Update(ctx, rec); !errors.Is(err, idempotency.ErrClaimLost) {
				t.Fatalf("former holder's Update: err = %v, want ErrClaimLost", err)
			}
		})
	}
}

// TestLeaseRenewedByUpdate: a holder that keeps writing keeps its claim.
func TestLeaseRenewedByUpdate(t *testing.T) {
	t.Parallel()
	rdb, acct := setup(t)
	ctx := context.Background()
	// The lease is far longer than the pauses between updates, so only a
	// lapse of renewal, not a slow machine, could let it expire.
	a := newStore(t, rdb, acct, redisstore.ShortLeaseForTest(redisstore.Config{}, 3*time.Second))
	b := newStore(t, rdb, acct, redisstore.Config{})
	rec := record(acct, "c1", time.Now())
	a.Create(ctx, rec)
	for i := 0; i < 6; i++ {
		time.Sleep(time.Second) // Redis's clock is real
		rec.State = idempotency.Unknown
		if err := a.Update(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := b.Create(ctx, rec); !errors.Is(err, idempotency.ErrInProgress) {
		t.Fatalf("Create after 6s of renewals of a 3s lease: err = %v, want in progress", err)
	}
}

func TestGetListRoundTrip(t *testing.T) {
	t.Parallel()
	rdb, acct := setup(t)
	ctx := context.Background()
	s := newStore(t, rdb, acct, redisstore.Config{})
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 600_000_000, time.UTC)
	for i, st := range []idempotency.State{idempotency.Acknowledged, idempotency.Pending, idempotency.Unknown, idempotency.NotPlaced} {
		rec := record(acct, "c"+string(rune('a'+3-i)), t0.Add(time.Duration(i)*time.Second))
		rec.Notional = "30.5"
		if _, _, err := s.Create(ctx, rec); err != nil {
			t.Fatal(err)
		}
		rec.State, rec.Order = st, []byte(`{"id":"x"}`)
		if err := s.Update(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	// Settled, a record is compacted (no order JSON, no body; its
	// notional kept); open, it is whole.
	got, err := s.Get(ctx, "cd")
	if err != nil || got.State != idempotency.Acknowledged || got.Order != nil || got.Body != nil || got.Fingerprint != "fp" || !got.CreatedAt.Equal(t0) ||
		got.Notional != "30.5" {
		t.Fatalf("Get = %+v, %v", got, err)
	}
	if got, err := s.Get(ctx, "cc"); err != nil || string(got.Order) != `{"id":"x"}` || len(got.Body) == 0 {
		t.Fatalf("Get(open) = %+v, %v; want it whole", got, err)
	}
	if _, err := s.Get(ctx, "missing"); !errors.Is(err, idempotency.ErrNotFound) {
		t.Fatalf("Get(missing): %v", err)
	}
	open, err := s.List(ctx, idempotency.Pending, idempotency.Unknown)
	if err != nil || len(open) != 2 || open[0].ClientOrderID != "cc" || open[1].ClientOrderID != "cb" {
		t.Fatalf("List(open) = %v, %v", ids(open), err)
	}
	all, err := s.List(ctx)
	if err != nil || len(all) != 4 || all[0].ClientOrderID != "cd" || all[3].ClientOrderID != "ca" {
		t.Fatalf("List() = %v, %v; want oldest first", ids(all), err)
	}
	// Another account on the same Redis sees none of them.
	other := newStore(t, rdb, redistest.Account(t, redistest.URL(t)), redisstore.Config{})
	if recs, err := other.List(ctx); err != nil || len(recs) != 0 {
		t.Fatalf("other account's List = %v, %v", ids(recs), err)
	}
}

func ids(recs []idempotency.Record) []string {
	var out []string
	for _, r := range recs {
		out = append(out, r.ClientOrderID)
	}
	return out
}

func TestRefusesBeforeWriting(t *testing.T) {
	t.Parallel()
	rdb, acct := setup(t)
	ctx := context.Background()
	s := newStore(t, rdb, acct, redisstore.Config{})
	if _, _, err := s.Create(ctx, record("OTHER1", "c1", time.Now())); err == nil || !strings.Contains(err.Error(), "account_number") {
		t.Fatalf("Create for another account: err = %v", err)
	}
	if _, _, err := s.Create(ctx, record(acct, "", time.Now())); err == nil || !strings.Contains(err.Error(), "client_order_id") {
		t.Fatalf("Create without an id: err = %v", err)
	}
	s.Close()
	if _, _, err := s.Create(ctx, record(acct, "c1", time.Now())); !errors.Is(err, idempotency.ErrClosed) {
		t.Fatalf("Create after Close: err = %v", err)
	}
	if _, err := s.List(ctx); !errors.Is(err, idempotency.ErrClosed) {
		t.Fatalf("List after Close: err = %v", err)
	}
}

func TestNewRefusesUnreachableRedis(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	if _, err := redisstore.Open(ctx, "redis://127.0.0.1:1/0", "AB1", redisstore.Config{}); err == nil || !strings.Contains(err.Error(), "PING") {
		t.Fatalf("Open with no Redis: err = %v", err)
	}
	if _, err := redisstore.Open(ctx, "http://127.0.0.1/0", "AB1", redisstore.Config{}); err == nil || !strings.Contains(err.Error(), "URL") {
		t.Fatalf("Open with a bad URL: err = %v", err)
	}
	rdb, _ := setup(t)
	if _, err := redisstore.New(ctx, rdb, "{AB1}", redisstore.Config{}); err == nil || !strings.Contains(err.Error(), "account number") {
		t.Fatalf("New with a hash tag for an account: err = %v", err)
	}
}

// TestNewRefusesWeakDurability runs private servers that do not fsync
// every write or may evict keys.
func TestNewRefusesWeakDurability(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--appendfsync", "everysec"},
		{"--appendonly", "no"},
		{"--maxmemory-policy", "allkeys-lru"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			t.Parallel()
			srv := redistest.Start(t, args...)
			ctx := context.Background()
			_, err := redisstore.Open(ctx, srv.URL(), "AB1", redisstore.Config{})
			if !errors.Is(err, redisstore.ErrNotDurable) || !strings.Contains(err.Error(), strings.TrimPrefix(args[0], "--")) {
				t.Fatalf("Open: err = %v, want ErrNotDurable naming %s", err, args[0])
			}
			s, err := redisstore.Open(ctx, srv.URL(), "AB1", redisstore.Config{WeakDurability: true})
			if err != nil {
				t.Fatalf("Open with WeakDurability: %v", err)
			}
			s.Close()
		})
	}
}

// TestReleaseRetriedAfterAnOutage: a holder's Release fails because Redis
// is down; its claim survives the restart on disk. Another process is
// still told "in progress" until the lease lapses, but the next Create of
// the intent from the same Store, whose holder it knows has ended, takes
// the claim up at once.
func TestReleaseRetriedAfterAnOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("restarts a redis-server")
	}
	rs := redistest.Start(t)
	ctx := context.Background()
	open := func() idempotency.Store {
		s, err := redisstore.Open(ctx, rs.URL(), "ACCTRELEASE", redisstore.Config{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	here, other := open(), open()
	rec := record("ACCTRELEASE", "c1", time.Now())
	rec.Holder = "first"
	if _, created, err := here.Create(ctx, rec); err != nil || !created {
		t.Fatalf("Create = %v, %v", created, err)
	}
	rs.Kill()
	if err := here.Release(ctx, rec.ClientOrderID, "first"); err == nil {
		t.Fatal("Release with Redis down succeeded")
	}
	rs.Restart()

	next := record("ACCTRELEASE", "c1", time.Now())
	next.Holder = "elsewhere"
	if _, _, err := other.Create(ctx, next); !errors.Is(err, idempotency.ErrInProgress) {
		t.Fatalf("another process's Create: err = %v, want ErrInProgress (the lease is live)", err)
	}
	next.Holder = "second"
	got, created, err := here.Create(ctx, next)
	if err != nil || created || got.Holder != "second" {
		t.Fatalf("same Store's Create = %+v, %v, %v; want the existing intent, claimed by its new holder", got, created, err)
	}
	if err := here.Update(ctx, got); err != nil {
		t.Fatalf("new holder's Update: %v", err)
	}
}
