package redisstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/idempotency/redisstore"
)

// settleAs creates rec held by holder and settles it in state st.
func settleAs(t *testing.T, s idempotency.Store, rec idempotency.Record, holder string, st idempotency.State) {
	t.Helper()
	ctx := context.Background()
	rec.Holder = holder
	if _, created, err := s.Create(ctx, rec); err != nil || !created {
		t.Fatalf("Create %s = %v, %v", rec.ClientOrderID, created, err)
	}
	rec.State, rec.OrderID, rec.Order = st, "o-"+rec.ClientOrderID, []byte(`{"id":"x"}`)
	if err := s.Update(ctx, rec); err != nil {
		t.Fatal(err)
	}
}

func present(t *testing.T, s idempotency.Store, id string) bool {
	t.Helper()
	_, err := s.Get(context.Background(), id)
	if err != nil && !errors.Is(err, idempotency.ErrNotFound) {
		t.Fatal(err)
	}
	return err == nil
}

// TestRetention: a write deletes the settled intents due for deletion
// (made due here by moving their time in the settled set), index entries
// and all; an open intent, even one the settled set wrongly names, and a
// not-placed one a holder has taken up again, are never deleted. A
// deleted intent's key is new again.
func TestRetention(t *testing.T) {
	t.Parallel()
	rdb, acct := setup(t)
	ctx := context.Background()
	s := newStore(t, rdb, acct, redisstore.Config{})
	now := time.Now()
	settleAs(t, s, record(acct, "acked", now), "h", idempotency.Acknowledged)
	settleAs(t, s, record(acct, "np", now), "h", idempotency.NotPlaced)
	if _, _, err := s.Create(ctx, record(acct, "open", now.Add(-30*24*time.Hour))); err != nil {
		t.Fatal(err)
	}
	again := record(acct, "np", now)
	again.Holder = "again"
	if got, _, err := s.Create(ctx, again); err != nil || got.State != idempotency.NotPlaced || string(got.Body) != string(again.Body) {
		t.Fatalf("Create of the not-placed intent = %+v, %v; want it, with the caller's body", got, err)
	}
	if _, _, err := s.Create(ctx, record(acct, "w0", now)); err != nil {
		t.Fatal(err)
	}
	if !present(t, s, "acked") || !present(t, s, "np") {
		t.Fatal("a write deleted intents settled just now")
	}
	due := "tradewire:{" + acct + "}:settled"
	for _, id := range []string{"acked", "np", "open"} {
		rdb.ZAdd(ctx, due, redis.Z{Score: 0, Member: id})
	}
	if _, _, err := s.Create(ctx, record(acct, "w1", now)); err != nil {
		t.Fatal(err)
	}
	if present(t, s, "acked") || !present(t, s, "np") || !present(t, s, "open") {
		t.Fatalf("after a write: acked %v, np %v, open %v; want false, true, true", present(t, s, "acked"), present(t, s, "np"), present(t, s, "open"))
	}
	if err := rdb.ZScore(ctx, "tradewire:{"+acct+"}:intents", "acked").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("the deleted intent is still indexed (%v)", err)
	}
	if err := s.Release(ctx, "np", "again"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Create(ctx, record(acct, "w2", now)); err != nil {
		t.Fatal(err)
	}
	if present(t, s, "np") || !present(t, s, "open") {
		t.Fatalf("after the release and a write: np %v, open %v; want false, true", present(t, s, "np"), present(t, s, "open"))
	}
	if _, created, err := s.Create(ctx, record(acct, "acked", now)); err != nil || !created {
		t.Fatalf("Create of a deleted intent's id = %v, %v; want created", created, err)
	}
	open, err := s.List(ctx, idempotency.Pending, idempotency.Unknown)
	if err != nil || len(open) != 5 {
		t.Fatalf("List(open) = %v, %v; want open, w0, w1, w2 and acked again", ids(open), err)
	}
}

// TestRetentionDefault: a settled intent within the retention stays, and
// a retention under an hour is refused.
func TestRetentionDefault(t *testing.T) {
	t.Parallel()
	rdb, acct := setup(t)
	if _, err := redisstore.New(context.Background(), rdb, acct, redisstore.Config{Retention: time.Minute}); err == nil {
		t.Fatal("New with a one-minute retention succeeded")
	}
	s := newStore(t, rdb, acct, redisstore.Config{})
	settleAs(t, s, record(acct, "acked", time.Now()), "h", idempotency.Acknowledged)
	if _, _, err := s.Create(context.Background(), record(acct, "w", time.Now())); err != nil {
		t.Fatal(err)
	}
	if !present(t, s, "acked") {
		t.Fatal("an intent settled just now was deleted")
	}
}

// TestOpenList: listing the open intents reads the open ones alone (a
// settled record that does not decode is not read), and an account
// written before the open index existed gets it built by New.
func TestOpenList(t *testing.T) {
	t.Parallel()
	rdb, acct := setup(t)
	ctx := context.Background()
	s := newStore(t, rdb, acct, redisstore.Config{})
	now := time.Now()
	settleAs(t, s, record(acct, "acked", now), "h", idempotency.Acknowledged)
	if _, _, err := s.Create(ctx, record(acct, "open", now)); err != nil {
		t.Fatal(err)
	}
	rdb.HSet(ctx, "tradewire:{"+acct+"}:intent:acked", "rec", "not json")
	if _, err := s.List(ctx); err == nil {
		t.Fatal("List() read past a record that does not decode")
	}
	open, err := s.List(ctx, idempotency.Pending, idempotency.Unknown)
	if err != nil || len(open) != 1 || open[0].ClientOrderID != "open" {
		t.Fatalf("List(open) = %v, %v; want [open]", ids(open), err)
	}
	// As an older tradewire left it: no open or settled sets.
	rdb.Del(ctx, "tradewire:{"+acct+"}:open", "tradewire:{"+acct+"}:settled")
	rdb.HDel(ctx, "tradewire:{"+acct+"}:generation", "indexed")
	s2 := newStore(t, rdb, acct, redisstore.Config{})
	open, err = s2.List(ctx, idempotency.Pending, idempotency.Unknown)
	if err != nil || len(open) != 1 || open[0].ClientOrderID != "open" {
		t.Fatalf("List(open) after indexing = %v, %v; want [open]", ids(open), err)
	}
	if n, _ := rdb.ZCard(ctx, "tradewire:{"+acct+"}:settled").Result(); n != 1 {
		t.Fatalf("%d settled intents indexed; want 1", n)
	}
}

// TestUpdateAll: a batch applies each record under Update's claim rules
// in one script: the held one is written, the one another holds and the
// missing one are refused.
func TestUpdateAll(t *testing.T) {
	t.Parallel()
	rdb, acct := setup(t)
	ctx := context.Background()
	s := newStore(t, rdb, acct, redisstore.Config{})
	mine, theirs := record(acct, "mine", time.Now()), record(acct, "theirs", time.Now())
	mine.Holder, theirs.Holder = "me", "them"
	for _, r := range []idempotency.Record{mine, theirs} {
		if _, _, err := s.Create(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	mine.State, mine.OrderID = idempotency.Acknowledged, "o-1"
	stolen := theirs
	stolen.State, stolen.Holder = idempotency.NotPlaced, "me"
	missing := record(acct, "missing", time.Now())
	missing.Holder = "me"
	errs := s.(idempotency.BatchUpdater).UpdateAll(ctx, []idempotency.Record{mine, stolen, missing})
	if errs[0] != nil || !errors.Is(errs[1], idempotency.ErrClaimLost) || !errors.Is(errs[2], idempotency.ErrNotFound) {
		t.Fatalf("UpdateAll = %v; want nil, ErrClaimLost, ErrNotFound", errs)
	}
	if got, _ := s.Get(ctx, "mine"); got.State != idempotency.Acknowledged {
		t.Fatalf("mine = %+v; want acknowledged", got)
	}
	if got, _ := s.Get(ctx, "theirs"); got.State != idempotency.Pending {
		t.Fatalf("theirs = %+v; want pending, untouched", got)
	}
	open, err := s.List(ctx, idempotency.Pending, idempotency.Unknown)
	if err != nil || len(open) != 1 || open[0].ClientOrderID != "theirs" {
		t.Fatalf("List(open) = %v, %v; want [theirs]", ids(open), err)
	}
}
