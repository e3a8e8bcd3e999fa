package pgstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/idempotency/pgstore"
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

// TestRetention: a write deletes the settled intents past their retention
// (made so here by moving their settled_at back); an open intent, and a
// not-placed one a holder has taken up again, are never deleted; a
// settled intent is compacted; a deleted intent's key is new again.
func TestRetention(t *testing.T) {
	t.Parallel()
	url, acct := setup(t)
	ctx := context.Background()
	s := open(t, url, acct, pgstore.Config{})
	now := time.Now()
	settleAs(t, s, record(acct, "acked", now), "h", idempotency.Acknowledged)
	settleAs(t, s, record(acct, "np", now), "h", idempotency.NotPlaced)
	if got, err := s.Get(ctx, "acked"); err != nil || got.Body != nil || got.Order != nil || got.Target != "" || got.OrderID != "o-acked" {
		t.Fatalf("settled record = %+v, %v; want it compacted, its order id kept", got, err)
	}
	if _, _, err := s.Create(ctx, record(acct, "open", now.Add(-30*24*time.Hour))); err != nil {
		t.Fatal(err)
	}
	again := record(acct, "np", now)
	again.Holder = "again"
	if got, _, err := s.Create(ctx, again); err != nil || got.State != idempotency.NotPlaced || string(got.Body) != string(again.Body) {
		t.Fatalf("Create of the not-placed intent = %+v, %v; want it, with the caller's body", got, err)
	}
	w := record(acct, "w", now)
	w.Holder = "w"
	if _, _, err := s.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	if err := s.Update(ctx, w); err != nil {
		t.Fatal(err)
	}
	if !present(t, s, "acked") || !present(t, s, "np") {
		t.Fatal("a write deleted intents settled just now")
	}
	// Past the retention (7 days): acked is due; np is claimed again; open
	// is open (its settled_at wrongly set, as a hand edit might).
	sql(t, url, `UPDATE tradewire_intents SET settled_at = now() - interval '8 days' WHERE account = $1 AND client_order_id IN ('acked', 'np', 'open')`, acct)
	if err := s.Update(ctx, w); err != nil {
		t.Fatal(err)
	}
	if present(t, s, "acked") || !present(t, s, "np") || !present(t, s, "open") {
		t.Fatalf("after a write: acked %v, np %v, open %v; want false, true, true", present(t, s, "acked"), present(t, s, "np"), present(t, s, "open"))
	}
	// Released, np goes with the next write.
	if err := s.Release(ctx, "np", "again"); err != nil {
		t.Fatal(err)
	}
	if err := s.Update(ctx, w); err != nil {
		t.Fatal(err)
	}
	if present(t, s, "np") {
		t.Fatal("a released, settled intent past its retention was kept")
	}
	if _, created, err := s.Create(ctx, record(acct, "acked", time.Now())); err != nil || !created {
		t.Fatalf("Create of a deleted intent's key = %v, %v; want created", created, err)
	}
}

// TestRetentionKeepsRecentlySettled: a Store with a longer retention keeps
// what another deletes at 7 days.
func TestRetentionKeepsRecentlySettled(t *testing.T) {
	t.Parallel()
	url, acct := setup(t)
	ctx := context.Background()
	s := open(t, url, acct, pgstore.Config{Retention: 30 * 24 * time.Hour})
	settleAs(t, s, record(acct, "acked", time.Now()), "h", idempotency.Acknowledged)
	sql(t, url, `UPDATE tradewire_intents SET settled_at = now() - interval '8 days' WHERE account = $1`, acct)
	settleAs(t, s, record(acct, "w", time.Now()), "h", idempotency.Rejected)
	if !present(t, s, "acked") {
		t.Fatal("an intent settled 8 days ago was deleted under a 30-day retention")
	}
	if _, err := s.Get(ctx, "w"); err != nil {
		t.Fatal(err)
	}
}
