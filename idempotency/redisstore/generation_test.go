package redisstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/idempotency/redisstore"
	"github.com/tradewire/tradewire/transport"
)

// TestLeaseFloor: a lease shorter than the signature window plus the skew
// margin is refused by name; the default and the floor itself are taken.
func TestLeaseFloor(t *testing.T) {
	t.Parallel()
	rdb, acct := setup(t)
	ctx := context.Background()
	for _, tc := range []struct {
		cfg   redisstore.Config
		ok    bool
		field string // the field the refusal names
	}{
		{redisstore.Config{}, true, ""},
		{redisstore.Config{Lease: 40 * time.Second}, true, ""},
		{redisstore.Config{Lease: 40*time.Second - time.Millisecond}, false, "Lease"},
		{redisstore.Config{Lease: time.Millisecond}, false, "Lease"},
		{redisstore.Config{SkewMargin: time.Minute, Lease: time.Minute}, false, "Lease"},
		{redisstore.Config{SkewMargin: time.Minute, Lease: 90 * time.Second}, true, ""},
		{redisstore.Config{SkewMargin: -time.Second}, false, "SkewMargin"},
		{redisstore.Config{ReplicaTimeout: -time.Second}, false, "ReplicaTimeout"},
		{redisstore.Config{Retention: time.Minute}, false, "Retention"},
	} {
		s, err := redisstore.New(ctx, rdb, acct, tc.cfg)
		if (err == nil) != tc.ok {
			t.Errorf("New(%+v): err = %v, want ok %v", tc.cfg, err, tc.ok)
		}
		if err != nil && !tc.ok && !strings.Contains(err.Error(), tc.field) {
			t.Errorf("error %q does not name %s", err, tc.field)
		}
		if s != nil {
			s.Close()
		}
	}
}

// TestNotAWitness: the Redis store cannot prove an intent is new (Redis
// may have lost it), so it does not offer idempotency's Witness and the
// Placer looks an order up before its first send.
func TestNotAWitness(t *testing.T) {
	t.Parallel()
	rdb, acct := setup(t)
	var s any = newStore(t, rdb, acct, redisstore.Config{})
	if w, ok := s.(interface{ VouchesNew() bool }); ok && w.VouchesNew() {
		t.Fatal("redisstore vouches that a created intent is new")
	}
}

func wantReset(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, redisstore.ErrStoreReset) || !errors.Is(err, transport.ErrUnavailable) {
		t.Fatalf("%s: err = %v, want ErrStoreReset (matching ErrUnavailable and transport.ErrUnavailable)", what, err)
	}
}

// TestWipeFailsClosed: once the account's generation marker is gone or
// replaced (Redis wiped while the processes run), every Store that knew
// the old one refuses Create and Update, and keeps refusing every call,
// even after a new marker appears.
func TestWipeFailsClosed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, wipe := range []string{"flush", "replace"} {
		t.Run(wipe, func(t *testing.T) {
			t.Parallel()
			rdb, acct := setup(t)
			a, b := newStore(t, rdb, acct, redisstore.Config{}), newStore(t, rdb, acct, redisstore.Config{})
			rec := record(acct, "c1", time.Now())
			if _, created, err := a.Create(ctx, rec); err != nil || !created {
				t.Fatalf("Create = %v, %v", created, err)
			}
			switch wipe {
			case "flush": // every key of the account, as a restart on an empty directory loses them
				keys, _ := rdb.Keys(ctx, "tradewire:{"+acct+"}:*").Result()
				rdb.Del(ctx, keys...)
			case "replace": // wiped, and a new process has since opened a Store
				rdb.Del(ctx, "tradewire:{"+acct+"}:generation", "tradewire:{"+acct+"}:intent:c1", "tradewire:{"+acct+"}:intents")
				newStore(t, rdb, acct, redisstore.Config{})
			}
			_, _, err := b.Create(ctx, rec)
			wantReset(t, "Create of a lost intent", err)
			wantReset(t, "Update of a lost intent", a.Update(ctx, signed(rec, time.Now())))
			if n, _ := rdb.Exists(ctx, "tradewire:{"+acct+"}:intent:c1").Result(); n != 0 {
				t.Fatal("a refused Create wrote the intent")
			}
			// Failed closed: every later call refuses, reads included.
			_, _, err = a.Create(ctx, record(acct, "c2", time.Now()))
			wantReset(t, "a later Create", err)
			_, err = b.Get(ctx, "c1")
			wantReset(t, "Get", err)
			_, err = b.List(ctx)
			wantReset(t, "List", err)
		})
	}
}

// TestCounterWentBack: a Redis that still has the marker but went back in
// time (an older snapshot, a lagging replica) shows a lower write counter
// than a Store saw; the Store refuses.
func TestCounterWentBack(t *testing.T) {
	t.Parallel()
	rdb, acct := setup(t)
	ctx := context.Background()
	a := newStore(t, rdb, acct, redisstore.Config{})
	for _, cid := range []string{"c1", "c2"} {
		if _, _, err := a.Create(ctx, record(acct, cid, time.Now())); err != nil {
			t.Fatal(err)
		}
	}
	rdb.HSet(ctx, "tradewire:{"+acct+"}:generation", "seq", 1)
	rdb.Del(ctx, "tradewire:{"+acct+"}:intent:c2")
	_, _, err := a.Create(ctx, record(acct, "c2", time.Now()))
	wantReset(t, "Create after the counter went back", err)
	if !strings.Contains(err.Error(), "went back from 2 to 1") {
		t.Fatalf("err = %v, want it to say the counter went back", err)
	}
}

// TestIntentsWithoutMarker: a new Store on an account that has intents
// but no generation marker cannot tell a loss from an old store, so it
// refuses, and says how to adopt the intents once reconciled.
func TestIntentsWithoutMarker(t *testing.T) {
	t.Parallel()
	rdb, acct := setup(t)
	ctx := context.Background()
	a := newStore(t, rdb, acct, redisstore.Config{})
	if _, _, err := a.Create(ctx, record(acct, "c1", time.Now())); err != nil {
		t.Fatal(err)
	}
	rdb.Del(ctx, "tradewire:{"+acct+"}:generation")
	_, err := redisstore.New(ctx, rdb, acct, redisstore.Config{})
	wantReset(t, "New on intents without a marker", err)
	if !strings.Contains(err.Error(), "1 intents") || !strings.Contains(err.Error(), "HSET") {
		t.Fatalf("err = %v, want the count and the way to adopt them", err)
	}
	rdb.HSet(ctx, "tradewire:{"+acct+"}:generation", "id", "adopted", "seq", 0)
	b := newStore(t, rdb, acct, redisstore.Config{})
	if got, err := b.Get(ctx, "c1"); err != nil || got.State != idempotency.Pending {
		t.Fatalf("Get after adopting: %+v, %v", got, err)
	}
}

// TestRedisErrorsAreUnavailable: a Redis that stops answering is an error
// matching transport.ErrUnavailable, not ErrStoreReset.
func TestRedisErrorsAreUnavailable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, err := redisstore.Open(ctx, "redis://127.0.0.1:1/0", "AB1", redisstore.Config{})
	if !errors.Is(err, transport.ErrUnavailable) || errors.Is(err, redisstore.ErrStoreReset) {
		t.Fatalf("Open with no Redis: err = %v, want transport.ErrUnavailable", err)
	}
}
