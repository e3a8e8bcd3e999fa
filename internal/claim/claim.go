// Package claim holds what the shared intent stores (idempotency/redisstore
// and idempotency/pgstore) keep alike about claims: who holds one, how a
// refusal reads, how a record is kept, and the holders a process knows
// have ended.
package claim

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/tradewire/tradewire/idempotency"
)

// NewOwner returns an id for one Store (one process's): host/pid/random.
// A holder is written as the owner, "/", then the caller's token, so that
// it names its process.
func NewOwner() string {
	host, _ := os.Hostname()
	var b [6]byte
	rand.Read(b[:])
	return fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// InProgressError is a Create refused because another holder has the
// intent's claim. Nothing was written. It matches
// idempotency.ErrInProgress; its message names the holder and the times.
// The holder will usually settle the intent; Create again later returns
// the settled record, or passes the claim on once it is abandoned.
type InProgressError struct {
	// Store names the store in the message ("redisstore", "pgstore").
	Store         string
	ClientOrderID string
	// Owner identifies the holder (host/pid/random/token); empty when the
	// claim lapsed but a signature it sent may still be accepted.
	Owner string
	// LeaseExpires is when the holder's claim lapses unless renewed, on
	// the server's clock.
	LeaseExpires time.Time
	// SignaturesExpire is when no signature the intent was sent with can
	// be accepted any more (last signature + 30 s + margin); zero when
	// nothing was signed. An abandoned intent is taken over only after
	// both times.
	SignaturesExpire time.Time
}

func (e *InProgressError) Error() string {
	s := fmt.Sprintf("%s: client_order_id %s is in progress in another process", e.Store, e.ClientOrderID)
	if e.Owner != "" {
		s += fmt.Sprintf(" (%s, claim until %s)", e.Owner, e.LeaseExpires.UTC().Format(time.RFC3339Nano))
	}
	if !e.SignaturesExpire.IsZero() {
		s += fmt.Sprintf("; its signatures expire at %s", e.SignaturesExpire.UTC().Format(time.RFC3339Nano))
	}
	return s
}

// Is matches idempotency.ErrInProgress.
func (e *InProgressError) Is(target error) bool { return target == idempotency.ErrInProgress }

// Encode returns rec's JSON as a shared store keeps it: whole while open,
// compacted once settled (without the create's body and target and the
// order's JSON). store names the store in an error.
func Encode(store string, rec idempotency.Record) ([]byte, error) {
	if !rec.State.Open() {
		rec.Body, rec.Order, rec.Target = nil, nil, ""
	}
	js, err := json.Marshal(rec)
	if err != nil {
		return nil, fmt.Errorf("%s: encoding record %s: %w", store, rec.ClientOrderID, err)
	}
	return js, nil
}

// Decode reads a record Encode wrote for intent cid.
func Decode(store, cid string, js []byte) (idempotency.Record, error) {
	var rec idempotency.Record
	if err := json.Unmarshal(js, &rec); err != nil {
		return rec, fmt.Errorf("%s: decoding intent %s: %w", store, cid, err)
	}
	return rec, nil
}

// Ended is the holders of one Store whose claims may be left behind on
// the server: their Release failed, or their Create did (its claim may
// have been written with the reply lost). Those holders have ended, or
// never knew of the claim, so the Store's next Create of the intent
// releases their claims first; other processes wait for the lease. The
// zero value is empty and ready; it is safe for concurrent use.
type Ended struct {
	mu      sync.Mutex
	holders map[string][]string // by client_order_id
}

// Add notes that holder's claim on id, if the server holds one, has no
// holder left in this process.
func (e *Ended) Add(id, holder string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.holders == nil {
		e.holders = map[string][]string{}
	}
	e.holders[id] = append(e.holders[id], holder)
}

// Release releases, with release, the claims on id that ended holders
// may have left behind. It stops at the first error, keeping what is
// left for the next call.
func (e *Ended) Release(id string, release func(holder string) error) error {
	e.mu.Lock()
	holders := e.holders[id]
	delete(e.holders, id)
	e.mu.Unlock()
	for i, h := range holders {
		if err := release(h); err != nil {
			e.mu.Lock()
			if e.holders == nil {
				e.holders = map[string][]string{}
			}
			e.holders[id] = append(e.holders[id], holders[i:]...)
			e.mu.Unlock()
			return err
		}
	}
	return nil
}
