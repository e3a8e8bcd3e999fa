package idempotency

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// settle writes rec, held by h, then settles it in state s at time at.
func settle(t *testing.T, s Store, id string, st State, at time.Time) Record {
	t.Helper()
	ctx := context.Background()
	rec := Record{ClientOrderID: id, Key: id, AccountNumber: "TW1", Symbol: "BTC-USD", Fingerprint: "f-" + id,
		State: Pending, Body: []byte(`{"body":1}`), Target: "/t", CreatedAt: at.Add(-time.Minute), UpdatedAt: at.Add(-time.Minute), Holder: "h-" + id}
	if _, created, err := s.Create(ctx, rec); err != nil || !created {
		t.Fatalf("Create %s = %v, %v", id, created, err)
	}
	rec.State, rec.UpdatedAt, rec.Sends = st, at, 1
	rec.FirstSentAt, rec.LastSignedAt = at.Add(-time.Minute), at.Add(-time.Minute)
	if st == Acknowledged {
		rec.OrderID, rec.Order = "o-"+id, []byte(`{"id":"o-`+id+`"}`)
	}
	if err := s.Update(ctx, rec); err != nil {
		t.Fatal(err)
	}
	return rec
}

// open writes an open intent created at at.
func open(t *testing.T, s Store, id string, st State, at time.Time) {
	t.Helper()
	rec := Record{ClientOrderID: id, State: st, Fingerprint: "f-" + id, Body: []byte(`{}`), CreatedAt: at, UpdatedAt: at, Holder: "h-" + id}
	if _, _, err := s.Create(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(context.Background(), id, "h-"+id); err != nil {
		t.Fatal(err)
	}
}

func exists(t *testing.T, s Store, id string) bool {
	t.Helper()
	_, err := s.Get(context.Background(), id)
	if err != nil && !errors.Is(err, ErrNotFound) {
		t.Fatal(err)
	}
	return err == nil
}

func retentionStores(t *testing.T, cfg Config) map[string]Store {
	t.Helper()
	bs, err := Open(filepath.Join(t.TempDir(), "intents.db"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bs.Close() })
	retention, err := cfg.retention()
	if err != nil {
		t.Fatal(err)
	}
	return map[string]Store{"memory": newMemoryStore(retention), "bolt": bs}
}

// TestRetention: writes delete the intents settled longer than the
// retention before the time they record, and nothing else: not an intent
// settled more recently, not an open one however old, not a not-placed
// one a holder has taken up again. A key whose intent was deleted is new.
func TestRetention(t *testing.T) {
	ctx := context.Background()
	const retention = 48 * time.Hour
	for name, s := range retentionStores(t, Config{Retention: retention}) {
		t.Run(name, func(t *testing.T) {
			settle(t, s, "acked", Acknowledged, t0)
			settle(t, s, "rejected", Rejected, t0)
			settle(t, s, "not-placed", NotPlaced, t0)
			settle(t, s, "recent", Acknowledged, t0.Add(time.Hour))
			open(t, s, "pending", Pending, t0.Add(-30*24*time.Hour))
			open(t, s, "unknown", Unknown, t0.Add(-30*24*time.Hour))
			settle(t, s, "taken-up", NotPlaced, t0)
			if _, _, err := s.Create(ctx, Record{ClientOrderID: "taken-up", Fingerprint: "f-taken-up", Holder: "again"}); err != nil {
				t.Fatal(err)
			}

			settle(t, s, "w1", Acknowledged, t0.Add(retention-time.Second))
			for _, id := range []string{"acked", "rejected", "not-placed", "recent", "pending", "unknown", "taken-up"} {
				if !exists(t, s, id) {
					t.Fatalf("%s deleted by a write %v before its retention ended", id, time.Second)
				}
			}
			// Four writes: the bolt store's sweep has looked at every
			// settled intent (fewer than 16) since.
			settle(t, s, "w2", Acknowledged, t0.Add(retention+time.Hour))
			settle(t, s, "w3", Acknowledged, t0.Add(retention+time.Hour))
			for id, want := range map[string]bool{"acked": false, "rejected": false, "not-placed": false,
				"recent": true, "pending": true, "unknown": true, "taken-up": true, "w1": true, "w2": true, "w3": true} {
				if got := exists(t, s, id); got != want {
					t.Errorf("after the retention: %s kept = %v, want %v", id, got, want)
				}
			}
			// The key of a deleted intent is new: a second order is possible.
			if _, created, err := s.Create(ctx, Record{ClientOrderID: "acked", State: Pending, CreatedAt: t0.Add(retention + time.Hour), Holder: "new"}); err != nil || !created {
				t.Fatalf("Create of a deleted intent's id = %v, %v; want created", created, err)
			}
			// The open ones stay open, however old.
			got, err := s.List(ctx, Pending, Unknown)
			if err != nil || len(got) != 3 {
				t.Fatalf("List(open) = %d, %v; want pending, unknown and the new one", len(got), err)
			}
		})
	}
}

// TestRetentionIsAmortised: each write deletes at most purgeBatch expired
// intents (the bolt store looks at no more than that many), so a store
// that fell behind catches up over the next writes rather than in one
// long commit.
func TestRetentionIsAmortised(t *testing.T) {
	const retention = time.Hour
	for name, s := range retentionStores(t, Config{Retention: retention}) {
		t.Run(name, func(t *testing.T) {
			for i := range 40 {
				settle(t, s, fmt.Sprint("old-", i), Acknowledged, t0.Add(time.Duration(i)*time.Second))
			}
			count := func() int {
				all, err := s.List(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				return len(all)
			}
			later := t0.Add(2 * retention)
			settle(t, s, "w0", Acknowledged, later) // a Create and an Update: two writes
			if n := count(); n != 40+1-2*purgeBatch {
				t.Fatalf("%d intents after two writes; want %d", n, 40+1-2*purgeBatch)
			}
			settle(t, s, "w1", Acknowledged, later)
			if n := count(); n != 2 {
				t.Fatalf("%d intents after four writes; want 2", n)
			}
		})
	}
}

// TestRetentionOption: a retention under an hour is refused; zero is 7
// days.
func TestRetentionOption(t *testing.T) {
	if _, err := Open(filepath.Join(t.TempDir(), "intents.db"), Config{Retention: time.Minute}); err == nil {
		t.Fatal("Open with a one-minute retention succeeded")
	}
	if _, err := (Config{Retention: -time.Hour}).retention(); err == nil {
		t.Fatal("a negative retention was accepted")
	}
	if r, err := (Config{}).retention(); err != nil || r != 7*24*time.Hour {
		t.Fatalf("default retention = %v, %v; want 7 days", r, err)
	}
}

// TestCompaction: the bolt store keeps a settled intent without the
// create's body and target and the order's JSON, and everything an answer
// about it needs; an open intent stays whole. A not-placed intent taken up
// again by the same request gets that request's body back to send.
func TestCompaction(t *testing.T) {
	ctx := context.Background()
	s, err := Open(filepath.Join(t.TempDir(), "intents.db"), Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	open(t, s, "open", Unknown, t0)
	if got, _ := s.Get(ctx, "open"); string(got.Body) != `{}` {
		t.Fatalf("open intent's body = %q; want it kept", got.Body)
	}
	want := settle(t, s, "acked", Acknowledged, t0)
	got, err := s.Get(ctx, "acked")
	if err != nil {
		t.Fatal(err)
	}
	if got.Body != nil || got.Order != nil || got.Target != "" {
		t.Fatalf("settled intent kept body %q, order %q, target %q", got.Body, got.Order, got.Target)
	}
	want.Body, want.Order, want.Target, want.Holder = nil, nil, "", ""
	if !sameRecord(got, want) {
		t.Fatalf("compacted = %+v\nwant %+v", got, want)
	}

	np := settle(t, s, "np", NotPlaced, t0)
	again := np
	again.Holder, again.Body, again.Target = "again", []byte(`{"body":1}`), "/t"
	got, created, err := s.Create(ctx, again)
	if err != nil || created || got.State != NotPlaced || string(got.Body) != `{"body":1}` || got.Target != "/t" || got.Holder != "again" {
		t.Fatalf("Create of a compacted not-placed intent = %+v, %v, %v; want it with the caller's body, held", got, created, err)
	}
	other := again
	other.Fingerprint, other.Body = "other", []byte(`{"other":1}`)
	if err := s.Release(ctx, "np", "again"); err != nil {
		t.Fatal(err)
	}
	if got, _, err := s.Create(ctx, other); err != nil || got.Body != nil {
		t.Fatalf("Create by another request = %+v, %v; want the compacted record, no body", got, err)
	}
}

func sameRecord(a, b Record) bool {
	for _, p := range [][2]*time.Time{{&a.CreatedAt, &b.CreatedAt}, {&a.UpdatedAt, &b.UpdatedAt}, {&a.FirstSentAt, &b.FirstSentAt}, {&a.LastSignedAt, &b.LastSignedAt}} {
		if !p[0].Equal(*p[1]) {
			return false
		}
		*p[0], *p[1] = time.Time{}, time.Time{}
	}
	return reflect.DeepEqual(a, b)
}

// TestCodecRoundTrip: a settled record reads back as its compacted self,
// field for field, whatever its texts look like.
func TestCodecRoundTrip(t *testing.T) {
	base := Record{ClientOrderID: "ae6ec0cf-288b-51fc-ba4f-34c2c5b23ed0", Key: "job 7 ✓", Namespace: "momentum",
		AccountNumber: "TW1", Symbol: "BTC-USD", Fingerprint: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
		State: Acknowledged, OrderID: "dd6040a5-c25b-45f3-b946-be5b3e3d4d00", Reason: "a reason", Sends: 3, Answered2xx: true,
		CreatedAt: t0, FirstSentAt: t0.Add(time.Millisecond), LastSignedAt: t0.Add(time.Minute), UpdatedAt: t0.Add(time.Hour),
		Body: []byte(`{}`), Order: []byte(`{}`), Target: "/t", Notional: "1234.5"}
	cases := map[string]func(*Record){
		"no notional":     func(r *Record) { r.Notional = "" },
		"whole":           func(*Record) {},
		"zero times":      func(r *Record) { r.CreatedAt, r.FirstSentAt, r.LastSignedAt = time.Time{}, time.Time{}, time.Time{} },
		"before 1970":     func(r *Record) { r.CreatedAt = time.Date(1960, 1, 1, 0, 0, 0, 1, time.UTC) },
		"upper-case uuid": func(r *Record) { r.OrderID = "DD6040A5-C25B-45F3-B946-BE5B3E3D4D00" },
		"upper-case hex":  func(r *Record) { r.Fingerprint = "ABCD" },
		"hex key":         func(r *Record) { r.Key = "00ff" },
		"odd state":       func(r *Record) { r.State = "settled-somehow" },
		"rejected":        func(r *Record) { r.State, r.OrderID, r.Answered2xx = Rejected, "", false },
		"not placed":      func(r *Record) { r.State, r.Sends = NotPlaced, 0 },
		"empty":           func(r *Record) { *r = Record{ClientOrderID: r.ClientOrderID, State: NotPlaced} },
	}
	for name, edit := range cases {
		t.Run(name, func(t *testing.T) {
			rec := base
			edit(&rec)
			v, err := encodeRecord(rec)
			if err != nil {
				t.Fatal(err)
			}
			got, err := decodeRecord(rec.ClientOrderID, v)
			if err != nil {
				t.Fatal(err)
			}
			if want := compacted(rec); !sameRecord(got, want) {
				t.Fatalf("round trip = %+v\nwant %+v", got, want)
			}
		})
	}
}

// FuzzDecodeRecord: no stored bytes make decodeRecord panic.
func FuzzDecodeRecord(f *testing.F) {
	v, _ := encodeRecord(Record{ClientOrderID: "x", State: Acknowledged, OrderID: "dd6040a5-c25b-45f3-b946-be5b3e3d4d00", Fingerprint: "abcd", CreatedAt: t0, UpdatedAt: t0})
	f.Add(v)
	f.Add([]byte{compactForm})
	f.Add([]byte(`{"state":"pending"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		rec, err := decodeRecord("x", b)
		if err == nil && b[0] == compactForm {
			again, _ := encodeRecord(rec)
			if _, err := decodeRecord("x", again); err != nil {
				t.Fatalf("re-encoding %+v: %v", rec, err)
			}
		}
	})
}

// TestOpenIndex: listing the open intents reads the open ones alone, not
// the history: a settled record that does not even decode is not read,
// and an intent that opens again or settles moves in or out of them.
func TestOpenIndex(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "intents.db")
	s, err := Open(path, Config{})
	if err != nil {
		t.Fatal(err)
	}
	settle(t, s, "np", NotPlaced, t0)
	open(t, s, "u", Unknown, t0)
	bs := s.(*boltStore)
	if err := bs.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketSettled).Put(keyOf("garbage"), []byte{7, 7}) }); err != nil {
		t.Fatal(err)
	}
	if _, err := s.List(ctx); err == nil {
		t.Fatal("List of everything read past a record that does not decode")
	}
	ids := func() []string {
		t.Helper()
		recs, err := s.List(ctx, Pending, Unknown)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range recs {
			out = append(out, r.ClientOrderID)
		}
		return out
	}
	if got := ids(); !reflect.DeepEqual(got, []string{"u"}) {
		t.Fatalf("open = %v; want [u]", got)
	}
	rec, _, err := s.Create(ctx, Record{ClientOrderID: "np", Fingerprint: "f-np", Holder: "again"})
	if err != nil {
		t.Fatal(err)
	}
	rec.State, rec.Sends = Pending, 2
	if err := s.Update(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if got := ids(); len(got) != 2 {
		t.Fatalf("open after np was sent again = %v; want np and u", got)
	}
	rec.State = Acknowledged
	if err := s.Update(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if got := ids(); !reflect.DeepEqual(got, []string{"u"}) {
		t.Fatalf("open after np settled = %v; want [u]", got)
	}
	s.Close()
	// Reopened, the index is there.
	if s, err = Open(path, Config{}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := ids(); !reflect.DeepEqual(got, []string{"u"}) {
		t.Fatalf("open after reopening = %v; want [u]", got)
	}
}

// TestOpenIndexBuiltForAnOlderFile: a file with every record in one
// bucket (as an older tradewire wrote it) gets its open intents apart
// and its settled ones compacted when opened.
func TestOpenIndexBuiltForAnOlderFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "intents.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket(bucketLegacy)
		if err != nil {
			return err
		}
		for id, st := range map[string]State{"a": Acknowledged, "p": Pending, "u": Unknown, "n": NotPlaced} {
			v := fmt.Sprintf(`{"client_order_id":%q,"state":%q,"body":"e30=","order":"e30=","created_at":"2026-11-02T14:00:00Z","updated_at":"2026-11-02T14:00:00Z"}`, id, st)
			if err := b.Put([]byte(id), []byte(v)); err != nil {
				return err
			}
		}
		return nil
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(path, Config{Retention: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	open, err := s.List(context.Background(), Pending, Unknown)
	if err != nil || len(open) != 2 || string(open[0].Body) != "{}" {
		t.Fatalf("open intents of an older file = %+v, %v; want p and u, whole", open, err)
	}
	if a, err := s.Get(context.Background(), "a"); err != nil || a.State != Acknowledged || a.Body != nil || a.Order != nil {
		t.Fatalf("settled intent of an older file = %+v, %v; want it compacted", a, err)
	}
	// Its settled intents are due for deletion like any.
	settle(t, s, "w", Acknowledged, t0.Add(2*time.Hour))
	if exists(t, s, "a") || exists(t, s, "n") || !exists(t, s, "p") || !exists(t, s, "u") {
		t.Fatal("the older file's settled intents were not deleted after the retention, or its open ones were")
	}
}

// TestUpdateAll: a batch applies each record under Update's claim rules,
// with one commit for the bolt store: the held one is written, the one
// held by another and the missing one are refused, and nothing else
// changes.
func TestUpdateAll(t *testing.T) {
	ctx := context.Background()
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			mine := Record{ClientOrderID: "mine", State: Unknown, Sends: 1, CreatedAt: t0, UpdatedAt: t0, Holder: "me"}
			theirs := Record{ClientOrderID: "theirs", State: Unknown, Sends: 1, CreatedAt: t0, UpdatedAt: t0, Holder: "them"}
			for _, r := range []Record{mine, theirs} {
				if _, _, err := s.Create(ctx, r); err != nil {
					t.Fatal(err)
				}
			}
			before := commits(s)
			mine.State, mine.OrderID = Acknowledged, "o-1"
			stolen := theirs
			stolen.State, stolen.Holder = NotPlaced, "me"
			errs := s.(BatchUpdater).UpdateAll(ctx, []Record{mine, stolen, {ClientOrderID: "missing", Holder: "me"}})
			if errs[0] != nil || !errors.Is(errs[1], ErrClaimLost) || !errors.Is(errs[2], ErrNotFound) {
				t.Fatalf("UpdateAll = %v; want nil, ErrClaimLost, ErrNotFound", errs)
			}
			if name == "bolt" && commits(s)-before != 1 {
				t.Fatalf("UpdateAll made %d commits; want 1", commits(s)-before)
			}
			if got, _ := s.Get(ctx, "mine"); got.State != Acknowledged {
				t.Fatalf("mine = %+v; want acknowledged", got)
			}
			if got, _ := s.Get(ctx, "theirs"); got.State != Unknown {
				t.Fatalf("theirs = %+v; want unknown, untouched", got)
			}
			// Settled, mine is held by nobody; theirs is still theirs.
			if _, _, err := s.Create(ctx, Record{ClientOrderID: "theirs", Holder: "me"}); !errors.Is(err, ErrInProgress) {
				t.Fatalf("Create of theirs = %v; want ErrInProgress", err)
			}
		})
	}
}

// commits returns the bolt store's transaction id: one more per commit.
func commits(s Store) int {
	bs, ok := s.(*boltStore)
	if !ok {
		return 0
	}
	var id int
	_ = bs.db.View(func(tx *bolt.Tx) error { id = tx.ID(); return nil })
	return id
}
