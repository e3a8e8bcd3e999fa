package pgstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jonboulle/clockwork"

	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/idempotency/pgstore"
	"github.com/tradewire/tradewire/internal/pgtest"
	"github.com/tradewire/tradewire/internal/storetest"
	"github.com/tradewire/tradewire/transport"
)

// open is one process's Store on url.
func open(t testing.TB, url, acct string, cfg pgstore.Config) idempotency.Store {
	t.Helper()
	s, err := pgstore.Open(context.Background(), url, acct, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// setup returns the shared test server's URL and a fresh account on it.
func setup(t testing.TB) (string, string) { return pgtest.URL(t), pgtest.Account(t) }

// sql runs a statement on url directly, as an operator (or a test) would.
func sql(t *testing.T, url, q string, args ...any) {
	t.Helper()
	c, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	if _, err := c.Exec(context.Background(), q, args...); err != nil {
		t.Fatal(err)
	}
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

// TestClaims: the claim rules every store keeps, on PostgreSQL, with the
// holders sharing one Store.
func TestClaims(t *testing.T) {
	storetest.Claims(t, func(t *testing.T) (idempotency.Store, string) {
		url, acct := setup(t)
		return open(t, url, acct, pgstore.Config{}), acct
	})
}

// TestMeta: the named values every store keeps; another holder is a
// second Store on the account, as another process of the fleet has.
func TestMeta(t *testing.T) {
	storetest.Meta(t, func(t *testing.T) (idempotency.Store, string, func() idempotency.Store) {
		url, acct := setup(t)
		return open(t, url, acct, pgstore.Config{}), acct, func() idempotency.Store {
			return open(t, url, acct, pgstore.Config{})
		}
	})
}

// TestProcesses: the claim rules between processes, each a Store with
// its own connections on one account.
func TestProcesses(t *testing.T) {
	clock := clockwork.NewRealClock() // the server's leases run on the real clock
	storetest.Processes(t, clock, func(t *testing.T) (func() idempotency.Store, string) {
		url, acct := setup(t)
		return func() idempotency.Store { return open(t, url, acct, pgstore.Config{Clock: clock}) }, acct
	}, pgstore.Owner)
}

func TestUpdateIsFencedByTheClaim(t *testing.T) {
	t.Parallel()
	url, acct := setup(t)
	ctx := context.Background()
	a, b := open(t, url, acct, pgstore.Config{}), open(t, url, acct, pgstore.Config{})
	rec := record(acct, "c1", time.Now())
	if _, _, err := a.Create(ctx, rec); err != nil {
		t.Fatal(err)
	}
	rec = signed(rec, time.Now())
	if err := b.Update(ctx, rec); !errors.Is(err, idempotency.ErrClaimLost) || !strings.Contains(err.Error(), pgstore.Owner(a)) {
		t.Fatalf("non-holder's Update: err = %v, want ErrClaimLost naming the holder", err)
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

// TestUpdateAll: one commit for several intents, each under its own
// claim: the held ones are written, the others refused one by one.
func TestUpdateAll(t *testing.T) {
	t.Parallel()
	url, acct := setup(t)
	ctx := context.Background()
	a, b := open(t, url, acct, pgstore.Config{}), open(t, url, acct, pgstore.Config{})
	mine, theirs := record(acct, "mine", time.Now()), record(acct, "theirs", time.Now())
	a.Create(ctx, mine)
	b.Create(ctx, theirs)
	mine.State, mine.OrderID = idempotency.Acknowledged, "o-1"
	theirs.State = idempotency.NotPlaced
	errs := a.(idempotency.BatchUpdater).UpdateAll(ctx, []idempotency.Record{mine, theirs, record(acct, "none", time.Now()), record("OTHER", "x", time.Now())})
	if errs[0] != nil || !errors.Is(errs[1], idempotency.ErrClaimLost) || !errors.Is(errs[2], idempotency.ErrNotFound) || errs[3] == nil {
		t.Fatalf("UpdateAll = %v; want nil, ErrClaimLost, ErrNotFound, refused", errs)
	}
	if got, err := b.Get(ctx, "mine"); err != nil || got.State != idempotency.Acknowledged {
		t.Fatalf("Get(mine) = %+v, %v", got, err)
	}
	if got, err := b.Get(ctx, "theirs"); err != nil || got.State != idempotency.Pending {
		t.Fatalf("Get(theirs) = %+v, %v; want it untouched", got, err)
	}
	// A commit that fails fails every record, and writes none.
	x, y := record(acct, "x", time.Now()), record(acct, "y", time.Now())
	a.Create(ctx, x)
	a.Create(ctx, y)
	x.State, y.State = idempotency.Unknown, idempotency.Unknown
	ended, cancel := context.WithCancel(ctx)
	cancel()
	errs = a.(idempotency.BatchUpdater).UpdateAll(ended, []idempotency.Record{x, y})
	if !errors.Is(errs[0], transport.ErrUnavailable) || !errors.Is(errs[1], transport.ErrUnavailable) {
		t.Fatalf("UpdateAll with its context ended = %v; want ErrUnavailable for each", errs)
	}
	for _, id := range []string{"x", "y"} {
		if got, err := b.Get(ctx, id); err != nil || got.State != idempotency.Pending {
			t.Fatalf("Get(%s) after a failed UpdateAll = %+v, %v; want it untouched", id, got, err)
		}
	}
}

// TestFinalStates: a resolved intent is returned to anyone without a
// claim; a not-placed one passes its claim to the next Create.
func TestFinalStates(t *testing.T) {
	t.Parallel()
	url, acct := setup(t)
	ctx := context.Background()
	a, b := open(t, url, acct, pgstore.Config{}), open(t, url, acct, pgstore.Config{})

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

// TestReleaseHandsOnAtOnce: a released claim on an open intent, even one
// whose signature is live, goes to the next Create at once: its holder
// gave it up and sends nothing more.
func TestReleaseHandsOnAtOnce(t *testing.T) {
	t.Parallel()
	url, acct := setup(t)
	ctx := context.Background()
	a, b := open(t, url, acct, pgstore.Config{}), open(t, url, acct, pgstore.Config{})
	rec := record(acct, "c1", time.Now())
	rec.Holder = "first"
	a.Create(ctx, rec)
	rec = signed(rec, time.Now())
	if err := a.Update(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctx, "c1", "first"); err != nil {
		t.Fatal(err)
	}
	next := record(acct, "c1", time.Now())
	next.Holder = "second"
	got, created, err := b.Create(ctx, next)
	if err != nil || created || got.Holder != "second" || got.Sends != 1 {
		t.Fatalf("Create after Release = %+v, %v, %v; want the record, held by the caller", got, created, err)
	}
	if err := a.Update(ctx, rec); !errors.Is(err, idempotency.ErrClaimLost) {
		t.Fatalf("the released holder's Update: err = %v", err)
	}
}

// TestTakeover: an abandoned open intent passes to another process only
// once its lease has lapsed and its signatures have expired, on the
// server's clock and the caller's.
func TestTakeover(t *testing.T) {
	t.Parallel()
	const shortLease = 50 * time.Millisecond
	for _, tc := range []struct {
		name        string
		signedAgo   time.Duration // zero: never signed
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
			url, acct := setup(t)
			ctx := context.Background()
			lease := time.Minute
			if tc.waitLease {
				lease = shortLease
			}
			dead := open(t, url, acct, pgstore.ShortLeaseForTest(pgstore.Config{}, lease))
			next := open(t, url, acct, pgstore.Config{Clock: tc.callerClock})
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
				time.Sleep(2 * shortLease) // the server's clock is real
			}
			got, created, err := next.Create(ctx, record(acct, "c1", time.Now()))
			if !tc.takeover {
				var ip *pgstore.InProgressError
				if !errors.As(err, &ip) {
					t.Fatalf("Create = %v, %v; want *InProgressError", created, err)
				}
				if !lastSigned.IsZero() && !ip.SignaturesExpire.Equal(lastSigned.Add(40*time.Second).Truncate(time.Microsecond)) {
					t.Fatalf("SignaturesExpire = %v, want last signature + 40s", ip.SignaturesExpire)
				}
				return
			}
			if err != nil || created || got.Sends != rec.Sends || got.State != idempotency.Pending {
				t.Fatalf("takeover Create = %+v, %v, %v; want the existing record", got, created, err)
			}
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
	url, acct := setup(t)
	ctx := context.Background()
	a := open(t, url, acct, pgstore.ShortLeaseForTest(pgstore.Config{}, time.Second))
	b := open(t, url, acct, pgstore.Config{})
	rec := record(acct, "c1", time.Now())
	a.Create(ctx, rec)
	for range 4 {
		time.Sleep(500 * time.Millisecond) // the server's clock is real
		rec.State = idempotency.Unknown
		if err := a.Update(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := b.Create(ctx, rec); !errors.Is(err, idempotency.ErrInProgress) {
		t.Fatalf("Create after 2s of renewals of a 1s lease: err = %v, want in progress", err)
	}
}

func TestGetListRoundTrip(t *testing.T) {
	t.Parallel()
	url, acct := setup(t)
	ctx := context.Background()
	s := open(t, url, acct, pgstore.Config{})
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
	open2, err := s.List(ctx, idempotency.Pending, idempotency.Unknown)
	if err != nil || len(open2) != 2 || open2[0].ClientOrderID != "cc" || open2[1].ClientOrderID != "cb" {
		t.Fatalf("List(open) = %v, %v", ids(open2), err)
	}
	if acked, err := s.List(ctx, idempotency.Acknowledged); err != nil || len(acked) != 1 || acked[0].ClientOrderID != "cd" {
		t.Fatalf("List(acknowledged) = %v, %v", ids(acked), err)
	}
	all, err := s.List(ctx)
	if err != nil || len(all) != 4 || all[0].ClientOrderID != "cd" || all[3].ClientOrderID != "ca" {
		t.Fatalf("List() = %v, %v; want oldest first", ids(all), err)
	}
	other := open(t, url, pgtest.Account(t), pgstore.Config{})
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
	url, acct := setup(t)
	ctx := context.Background()
	s := open(t, url, acct, pgstore.Config{})
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

// TestOpenRefusesConfig: each Config field out of range is refused by
// name, before any connection.
func TestOpenRefusesConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cfg  pgstore.Config
		name string
	}{
		{pgstore.Config{Lease: 39 * time.Second}, "Lease"},
		{pgstore.Config{Retention: time.Minute}, "Retention"},
		{pgstore.Config{SkewMargin: -time.Second}, "SkewMargin"},
		{pgstore.Config{Timeout: time.Microsecond}, "Timeout"},
	} {
		_, err := pgstore.Open(context.Background(), "postgres://u:hunter2@127.0.0.1:1/db", "AB1", tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.name) {
			t.Errorf("Open(%+v) = %v; want refused naming %s", tc.cfg, err, tc.name)
		}
	}
	if _, err := pgstore.Open(context.Background(), "postgres://127.0.0.1:1/db", "{AB1}", pgstore.Config{}); err == nil || !strings.Contains(err.Error(), "account number") {
		t.Errorf("Open with a bad account number = %v", err)
	}
}
