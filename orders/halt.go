package orders

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/transport"
)

// ErrHalted: the intent store is halted (Placer.Halt) and the create was
// refused with nothing sent by this call. An *Error of Kind ErrHalted
// matches transport.ErrNotSent too: Place again with the same key once
// the store is resumed (Placer.Resume).
var ErrHalted = errors.New("orders: halted")

// haltName is the named value (idempotency.Meta) that holds the halt
// record.
const haltName = "halt"

// haltFresh is how long a Placer trusts the halt record it last read
// before reading it again: every holder of the store sees a Halt within
// this long.
const haltFresh = time.Second

// haltRecord is the halt record as the store keeps it (JSON).
type haltRecord struct {
	Halted bool `json:"halted"`
	// At is when it was halted or resumed, on the writer's clock.
	At time.Time `json:"at"`
}

// haltCache is what a Placer last read of the halt record, and when, on
// its clock.
type haltCache struct {
	read time.Time // zero: never read
	rec  haltRecord
}

// Halt halts the intent store: from now on every Placer sharing it, in
// this process or another (a fleet's Redis), refuses every create it
// would send, within a second, with an *Error of Kind ErrHalted and
// nothing sent; cancels and reads go on. The halt is durable: a store
// reopened after a restart is still halted, until Resume. The store must
// implement idempotency.Meta (the bbolt file, memory and Redis stores
// do); Halt returns an error otherwise.
func (p *Placer) Halt(ctx context.Context) error { return p.setHalt(ctx, true) }

// Resume lifts a Halt of the intent store: Placers sharing it place
// again, within a second.
func (p *Placer) Resume(ctx context.Context) error { return p.setHalt(ctx, false) }

func (p *Placer) setHalt(ctx context.Context, halted bool) error {
	m, ok := p.store.(idempotency.Meta)
	if !ok {
		return fmt.Errorf("orders: the intent store (%T) keeps no named values (idempotency.Meta), so it cannot be halted", p.store)
	}
	rec := haltRecord{Halted: halted, At: p.clock.Now().UTC()}
	v, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	if err := m.PutMeta(ctx, haltName, v); err != nil {
		return fmt.Errorf("orders: recording the halt: %w", err)
	}
	p.hmu.Lock()
	p.halt = haltCache{read: p.clock.Now(), rec: rec}
	p.hmu.Unlock()
	return nil
}

// halted returns an error when the store is halted, as last read within
// haltFresh (a store without idempotency.Meta is never halted), or when
// the halt record cannot be read: then nothing may be sent either.
func (p *Placer) halted(ctx context.Context) error {
	m, ok := p.store.(idempotency.Meta)
	if !ok {
		return nil
	}
	now := p.clock.Now()
	p.hmu.Lock()
	c := p.halt
	p.hmu.Unlock()
	if c.read.IsZero() || now.Sub(c.read) >= haltFresh || now.Before(c.read) {
		c = haltCache{read: now}
		v, err := m.GetMeta(ctx, haltName)
		switch {
		case errors.Is(err, idempotency.ErrNotFound):
		case err != nil:
			return fmt.Errorf("reading the store's halt record: %w", err)
		default:
			if err := json.Unmarshal(v, &c.rec); err != nil {
				return fmt.Errorf("the store's halt record %q does not decode: %w", v, err)
			}
		}
		p.hmu.Lock()
		p.halt = c
		p.hmu.Unlock()
	}
	if c.rec.Halted {
		return &haltedError{at: c.rec.At}
	}
	return nil
}

// haltedError is the store found halted; it matches ErrHalted.
type haltedError struct{ at time.Time }

func (e *haltedError) Error() string {
	return fmt.Sprintf("the intent store is halted (since %s; resume lifts it)", e.at.Format(time.RFC3339))
}

func (e *haltedError) Is(target error) bool { return target == ErrHalted }

// haltError is the answer to a create refused before anything was sent:
// Kind ErrHalted when the store is halted, transport.ErrNotSent when the
// halt record could not be read.
func haltError(cid, key string, err error) *Error {
	if errors.Is(err, ErrHalted) {
		return &Error{Kind: ErrHalted, ClientOrderID: cid, Key: key, Reason: "the create was refused before it was sent", Err: err}
	}
	return &Error{Kind: transport.ErrNotSent, ClientOrderID: cid, Key: key, Reason: "the halt record could not be read, so nothing may be sent", Err: err}
}
