package orders_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/tradewire/tradewire/idempotency"
)

// countingStore counts the writes Recover makes through it: single
// updates, and batches (idempotency.BatchUpdater) with their sizes.
type countingStore struct {
	idempotency.Store

	mu      sync.Mutex
	updates int
	batches []int
}

func (s *countingStore) VouchesNew() bool {
	w, ok := s.Store.(idempotency.Witness)
	return ok && w.VouchesNew()
}

func (s *countingStore) Update(ctx context.Context, rec idempotency.Record) error {
	s.mu.Lock()
	s.updates++
	s.mu.Unlock()
	return s.Store.Update(ctx, rec)
}

func (s *countingStore) UpdateAll(ctx context.Context, recs []idempotency.Record) []error {
	s.mu.Lock()
	s.batches = append(s.batches, len(recs))
	s.mu.Unlock()
	return s.Store.(idempotency.BatchUpdater).UpdateAll(ctx, recs)
}

// TestRecoverSettlesInBatches: Recover records what one read of the list
// settles with one write, a batch, on a store that makes a batch durable
// in one commit (the bolt file): K intents found at once take one commit,
// not K; intents half found and half waited for take two. Each is
// settled truly: placed again, every key still has one order.
func TestRecoverSettlesInBatches(t *testing.T) {
	cases := []struct {
		name    string
		commit  func(int) bool
		batches []int
	}{
		{"all found", func(int) bool { return true }, []int{20}},
		{"half found, half waited for", func(i int) bool { return i%2 == 0 }, []int{10, 10}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := crashAfterSends(t, "k", 0, 0, envConfig{})
				c.crashOn(t, "k", 20, tc.commit)
				counted := &countingStore{Store: c.store}
				restarted := c.e.process(t, counted, nil)
				rep, err := restarted.Recover(context.Background())
				if err != nil || len(rep.Acknowledged)+len(rep.NotPlaced) != 20 {
					t.Fatalf("Recover = %d acknowledged, %d not placed, %d unresolved, %d in progress, %v; want 20 settled",
						len(rep.Acknowledged), len(rep.NotPlaced), len(rep.Unresolved), len(rep.InProgress), err)
				}
				if counted.updates != 0 || len(counted.batches) != len(tc.batches) {
					t.Fatalf("Recover wrote %d single updates and batches of %v; want batches of %v", counted.updates, counted.batches, tc.batches)
				}
				for i, n := range tc.batches {
					if counted.batches[i] != n {
						t.Fatalf("Recover wrote batches of %v; want %v", counted.batches, tc.batches)
					}
				}
				c.placeAgain(t, restarted)
			})
		})
	}
}

// TestRecoverWithoutBatches: a store that cannot batch gets one update
// per intent, with the same outcomes.
func TestRecoverWithoutBatches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := crashAfterSends(t, "k", 6, 0, envConfig{})
		counted := &countingStore{Store: struct{ idempotency.Store }{c.store}}
		restarted := c.e.process(t, &unbatched{counted}, nil)
		rep, err := restarted.Recover(context.Background())
		if err != nil || len(rep.Acknowledged) != 3 || len(rep.NotPlaced) != 3 {
			t.Fatalf("Recover = %d acknowledged, %d not placed, %d unresolved, %v", len(rep.Acknowledged), len(rep.NotPlaced), len(rep.Unresolved), err)
		}
		if counted.updates != 6 || len(counted.batches) != 0 {
			t.Fatalf("Recover wrote %d single updates and batches of %v; want 6 updates", counted.updates, counted.batches)
		}
		c.placeAgain(t, restarted)
	})
}

// unbatched hides every method of its store but Store's and VouchesNew.
type unbatched struct{ s *countingStore }

func (u *unbatched) Create(ctx context.Context, rec idempotency.Record) (idempotency.Record, bool, error) {
	return u.s.Create(ctx, rec)
}
func (u *unbatched) Get(ctx context.Context, id string) (idempotency.Record, error) {
	return u.s.Get(ctx, id)
}
func (u *unbatched) Update(ctx context.Context, rec idempotency.Record) error {
	return u.s.Update(ctx, rec)
}
func (u *unbatched) Release(ctx context.Context, id, holder string) error {
	return u.s.Release(ctx, id, holder)
}
func (u *unbatched) List(ctx context.Context, states ...idempotency.State) ([]idempotency.Record, error) {
	return u.s.List(ctx, states...)
}
func (u *unbatched) Close() error     { return nil }
func (u *unbatched) VouchesNew() bool { return u.s.VouchesNew() }
