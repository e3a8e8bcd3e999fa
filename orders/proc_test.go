package orders_test

import (
	"context"
	"sync"

	"github.com/tradewire/tradewire/idempotency"
)

// procStore is one simulated process's handle on a store that outlives
// it. A process that ends takes its claims with it, as a bbolt file's
// claims end with the process that held it: kill releases every claim
// the process took, and from then on the handle refuses everything.
type procStore struct {
	idempotency.Store

	mu      sync.Mutex
	dead    bool
	holders map[string]string // client_order_id → the holder this process claimed it under
}

func newProcStore(s idempotency.Store) *procStore {
	return &procStore{Store: s, holders: map[string]string{}}
}

// VouchesNew is the wrapped store's.
func (p *procStore) VouchesNew() bool {
	w, ok := p.Store.(idempotency.Witness)
	return ok && w.VouchesNew()
}

func (p *procStore) alive(rec idempotency.Record) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.dead && rec.Holder != "" {
		p.holders[rec.ClientOrderID] = rec.Holder
	}
	return !p.dead
}

func (p *procStore) Create(ctx context.Context, rec idempotency.Record) (idempotency.Record, bool, error) {
	if !p.alive(rec) {
		return idempotency.Record{}, false, errCrashed
	}
	return p.Store.Create(ctx, rec)
}

func (p *procStore) Update(ctx context.Context, rec idempotency.Record) error {
	if !p.alive(rec) {
		return errCrashed
	}
	return p.Store.Update(ctx, rec)
}

// UpdateAll is the wrapped store's, or Update of each record when it has
// none.
func (p *procStore) UpdateAll(ctx context.Context, recs []idempotency.Record) []error {
	errs := make([]error, len(recs))
	for i, rec := range recs {
		if !p.alive(rec) {
			errs[i] = errCrashed
		}
	}
	if errs[0] != nil {
		return errs
	}
	if b, ok := p.Store.(idempotency.BatchUpdater); ok {
		return b.UpdateAll(ctx, recs)
	}
	for i, rec := range recs {
		errs[i] = p.Store.Update(ctx, rec)
	}
	return errs
}

func (p *procStore) Release(ctx context.Context, id, holder string) error {
	if !p.alive(idempotency.Record{}) {
		return errCrashed
	}
	return p.Store.Release(ctx, id, holder)
}

// Close leaves the shared store open: the test closes it.
func (p *procStore) Close() error { return nil }

// kill ends the process: its claims are released and its handle refuses
// every later write.
func (p *procStore) kill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dead {
		return
	}
	p.dead = true
	for id, h := range p.holders {
		_ = p.Store.Release(context.Background(), id, h)
	}
}
