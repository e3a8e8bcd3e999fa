// Package idempotency derives client_order_ids from callers' idempotency
// keys and keeps the intent behind every create in a durable Store.
//
// # Client order ids
//
// ClientOrderID is a UUIDv5 over an unambiguous encoding of the account
// number, an optional caller namespace (such as a strategy name) and the
// caller's key. It never depends on time, process or attempt: the same key
// gives the same id in every process, forever (golden vectors in
// testdata/). The venue can therefore recognise a create sent again after
// a crash, and tradewire can find it by looking it up.
//
// # Intents
//
// A Record is written before the first byte of a create is sent and
// updated, durably, at every change: each signature's time, the venue's
// answer, what a lookup found. The package's two stores are reached only
// through the Store interface:
//
//   - Open returns the default, durable Store: an embedded bbolt database
//     that syncs every change to disk. A second process opening the same
//     file gets ErrLocked at once rather than hanging. A file that is not
//     a whole store (empty, cut short, with a damaged meta page, garbage,
//     a directory) is refused with a *StoreFileError naming it before
//     bbolt maps it, rather than crash the process or quietly forget
//     intents. It vouches for new intents (see Witness).
//   - NewMemoryStore returns a Store in memory, for tests and
//     simulations. It lasts as long as the process and does not vouch
//     for new intents.
//
// Package idempotency/redisstore keeps intents in Redis for a fleet.
package idempotency
