package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/idempotency/pgstore"
	"github.com/tradewire/tradewire/internal/pgtest"
	"github.com/tradewire/tradewire/transport"
)

// TestFailoverToSynchronousStandby: claims and updates are committed; the
// primary is killed (SIGKILL). While no primary answers, every call fails
// with ErrUnavailable and a failed Release is remembered. Once the
// standby is promoted, the same Stores work again within seconds with no
// operator action; every claim and record committed before the kill is
// there; a second holder of a claim is refused (in progress) and the
// first still updates it; the Store that failed to release hands the
// claim on to its own next holder. The promoted server has no standby of
// its own, so the Store no longer vouches.
func TestFailoverToSynchronousStandby(t *testing.T) {
	t.Parallel()
	c := pgtest.Start(t, pgtest.SyncStandby)
	url, acct := c.URL(), pgtest.Account(t)
	ctx := context.Background()
	cfg := pgstore.Config{Timeout: 2 * time.Second}
	a, b := open(t, url, acct, cfg), open(t, url, acct, cfg)
	if g, _ := pgstore.GuaranteeOf(a); g != pgstore.SynchronousStandby {
		t.Fatalf("GuaranteeOf before the failover = %s", g)
	}
	now := time.Now()
	held := record(acct, "held", now)
	held.Holder = "a1"
	if _, created, err := a.Create(ctx, held); err != nil || !created {
		t.Fatalf("Create(held) = %v, %v", created, err)
	}
	held = signed(held, now)
	if err := a.Update(ctx, held); err != nil {
		t.Fatal(err)
	}
	acked := record(acct, "acked", now)
	acked.Holder = "a2"
	a.Create(ctx, acked)
	acked.State, acked.OrderID = idempotency.Acknowledged, "o-1"
	if err := a.Update(ctx, acked); err != nil {
		t.Fatal(err)
	}
	toRelease := record(acct, "released", now)
	toRelease.Holder = "a3"
	if _, _, err := a.Create(ctx, toRelease); err != nil {
		t.Fatal(err)
	}
	if err := a.(idempotency.Meta).PutMeta(ctx, "halt", []byte("on")); err != nil {
		t.Fatal(err)
	}

	// Writers keep claiming new keys while the primary dies: every Create
	// that reported a claim must find it on the promoted standby.
	var (
		mu      sync.Mutex
		claimed []string
		wg      sync.WaitGroup
	)
	stop := make(chan struct{})
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id := fmt.Sprintf("w%d-%d", w, i)
				r := record(acct, id, now)
				r.Holder = id
				if _, created, err := b.Create(ctx, r); err == nil && created {
					mu.Lock()
					claimed = append(claimed, id)
					mu.Unlock()
				} else if err != nil && !errors.Is(err, transport.ErrUnavailable) {
					t.Errorf("Create(%s) = %v; want it, or ErrUnavailable", id, err)
					return
				}
			}
		})
	}
	for {
		mu.Lock()
		n := len(claimed)
		mu.Unlock()
		if n >= 20 {
			break
		}
		runtime.Gosched()
	}
	if err := c.KillPrimary(); err != nil {
		t.Fatal(err)
	}
	close(stop)
	wg.Wait()
	if _, _, err := b.Create(ctx, record(acct, "during", now)); !errors.Is(err, transport.ErrUnavailable) {
		t.Fatalf("Create with no primary = %v; want ErrUnavailable", err)
	}
	if err := a.Release(ctx, "released", "a3"); !errors.Is(err, transport.ErrUnavailable) {
		t.Fatalf("Release with no primary = %v; want ErrUnavailable", err)
	}
	if err := c.Promote(); err != nil {
		t.Fatal(err)
	}
	promoted := time.Now()
	for {
		_, _, err := b.Create(ctx, record(acct, "after", now))
		if err == nil {
			break
		}
		if !errors.Is(err, transport.ErrUnavailable) || time.Since(promoted) > 10*time.Second {
			t.Fatalf("Create %v after the promotion: %v", time.Since(promoted), err)
		}
		time.Sleep(50 * time.Millisecond) // the servers' own time to accept connections
	}
	t.Logf("the store worked again %v after the promotion", time.Since(promoted))

	for _, id := range claimed {
		if got, err := b.Get(ctx, id); err != nil || got.ClientOrderID != id {
			t.Fatalf("a claim reported before the kill, %s, after the failover: %+v, %v", id, got, err)
		}
	}
	t.Logf("%d claims reported by writers racing the kill, all on the promoted standby", len(claimed))
	if got, err := b.Get(ctx, "held"); err != nil || got.Sends != 1 || got.State != idempotency.Pending {
		t.Fatalf("Get(held) after the failover = %+v, %v", got, err)
	}
	if got, err := b.Get(ctx, "acked"); err != nil || got.State != idempotency.Acknowledged || got.OrderID != "o-1" {
		t.Fatalf("Get(acked) after the failover = %+v, %v", got, err)
	}
	if v, err := b.(idempotency.Meta).GetMeta(ctx, "halt"); err != nil || string(v) != "on" {
		t.Fatalf("GetMeta after the failover = %q, %v", v, err)
	}
	other := record(acct, "held", time.Now())
	other.Holder = "b1"
	if _, _, err := b.Create(ctx, other); !errors.Is(err, idempotency.ErrInProgress) {
		t.Fatalf("a second holder's Create after the failover = %v; want ErrInProgress", err)
	}
	if err := b.Update(ctx, other); !errors.Is(err, idempotency.ErrClaimLost) {
		t.Fatalf("a second holder's Update after the failover = %v; want ErrClaimLost", err)
	}
	held.State = idempotency.Unknown
	if err := a.Update(ctx, held); err != nil {
		t.Fatalf("the holder's Update after the failover: %v", err)
	}
	// The release that failed: another process waits for the lease; this
	// Store's next holder takes the claim at once.
	next := record(acct, "released", time.Now())
	next.Holder = "b2"
	if _, _, err := b.Create(ctx, next); !errors.Is(err, idempotency.ErrInProgress) {
		t.Fatalf("another process's Create of the unreleased intent = %v; want ErrInProgress", err)
	}
	next.Holder = "a4"
	if got, created, err := a.Create(ctx, next); err != nil || created || got.Holder != "a4" {
		t.Fatalf("the same Store's Create of the unreleased intent = %+v, %v, %v; want it, held by a4", got, created, err)
	}
	if g, _ := pgstore.GuaranteeOf(b); g != pgstore.AsynchronousStandby || b.(idempotency.Witness).VouchesNew() {
		t.Fatalf("after a failover to a server without a standby: GuaranteeOf = %s, VouchesNew = %v; want it not to vouch", g, b.(idempotency.Witness).VouchesNew())
	}
}

// TestReleaseRetriedAfterAFailure: a holder's Release fails (here its
// context ends first); another process is still told "in progress" until
// the lease lapses, but the same Store's next Create of the intent, whose
// holder it knows has ended, takes the claim up at once.
func TestReleaseRetriedAfterAFailure(t *testing.T) {
	t.Parallel()
	url, acct := setup(t)
	ctx := context.Background()
	here, other := open(t, url, acct, pgstore.Config{}), open(t, url, acct, pgstore.Config{})
	rec := record(acct, "c1", time.Now())
	rec.Holder = "first"
	if _, created, err := here.Create(ctx, rec); err != nil || !created {
		t.Fatalf("Create = %v, %v", created, err)
	}
	ended, cancel := context.WithCancel(ctx)
	cancel()
	if err := here.Release(ended, "c1", "first"); !errors.Is(err, transport.ErrUnavailable) {
		t.Fatalf("Release with its context ended = %v; want ErrUnavailable", err)
	}
	next := record(acct, "c1", time.Now())
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

// TestAsynchronousStandbyDoesNotVouch: with an asynchronous standby the
// Store says so and does not vouch, and still keeps the claim rule.
func TestAsynchronousStandbyDoesNotVouch(t *testing.T) {
	t.Parallel()
	c := pgtest.Start(t, pgtest.AsyncStandby)
	acct := pgtest.Account(t)
	s, other := open(t, c.URL(), acct, pgstore.Config{}), open(t, c.URL(), acct, pgstore.Config{})
	if g, ok := pgstore.GuaranteeOf(s); !ok || g != pgstore.AsynchronousStandby {
		t.Fatalf("GuaranteeOf = %s, %v; want %s", g, ok, pgstore.AsynchronousStandby)
	}
	if s.(idempotency.Witness).VouchesNew() {
		t.Fatal("VouchesNew with an asynchronous standby = true")
	}
	ctx := context.Background()
	if _, created, err := s.Create(ctx, record(acct, "c1", time.Now())); err != nil || !created {
		t.Fatalf("Create = %v, %v", created, err)
	}
	if _, _, err := other.Create(ctx, record(acct, "c1", time.Now())); !errors.Is(err, idempotency.ErrInProgress) {
		t.Fatalf("second Create = %v; want ErrInProgress", err)
	}
}
