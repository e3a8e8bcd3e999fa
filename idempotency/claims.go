package idempotency

import "fmt"

// claims are the holders of the intents of a store whose every holder
// lives in this process: the memory store, and a bbolt file, which one
// process holds at a time (so a claim recorded by an earlier process is
// gone with it). The owner's lock guards them.
type claims map[string]string // client_order_id → holder

// take decides a Create of rec over the existing record old: it returns
// old, claimed for rec.Holder, or an error matching ErrInProgress. A
// resolved record is returned to anyone and claimed by nobody.
func (c claims) take(rec, old Record) (Record, error) {
	if old.State.resolved() {
		return old, nil
	}
	if h := c[rec.ClientOrderID]; h != "" && h != rec.Holder {
		return Record{}, fmt.Errorf("%w: client_order_id %s is held by another Place or Recover in this process", ErrInProgress, rec.ClientOrderID)
	}
	c[rec.ClientOrderID] = rec.Holder
	old.Holder = rec.Holder
	return old, nil
}

// check returns nil when rec.Holder holds rec's intent.
func (c claims) check(rec Record) error {
	if h := c[rec.ClientOrderID]; h == "" || h != rec.Holder {
		return fmt.Errorf("%w: client_order_id %s", ErrClaimLost, rec.ClientOrderID)
	}
	return nil
}

// set records that holder holds the intent id, written in state s: a
// write of a final state (acknowledged, rejected, not placed) releases it.
func (c claims) set(id, holder string, s State) {
	if s.Open() && holder != "" {
		c[id] = holder
	} else {
		delete(c, id)
	}
}

// release drops holder's claim on id, if it holds it.
func (c claims) release(id, holder string) {
	if c[id] == holder {
		delete(c, id)
	}
}
