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
//     a directory) is refused with an error naming it and what is wrong before
//     bbolt maps it, rather than crash the process or quietly forget
//     intents. It vouches for new intents (see Witness).
//   - NewMemoryStore returns a Store in memory, for tests and
//     simulations. It lasts as long as the process and does not vouch
//     for new intents.
//
// Package idempotency/redisstore keeps intents in Redis for a fleet.
//
// All three keep small named values beside the intents (Meta), such as
// the halt record of package orders: durable, shared by every holder of
// the store, and never deleted by retention.
//
// # Retention
//
// A store's cost follows what is open, not its history. An intent stays
// whole while it is open (pending or unknown), however long, and is never
// deleted then. Once settled (acknowledged, rejected, not placed) the bolt
// and Redis stores compact it: the record keeps the key, fingerprint,
// state, order id, reason, sends and times, and drops the create's body
// and the order's JSON (package broker answers an acknowledged key by
// reading the order by its id; Create gives a not-placed intent taken up
// again the caller's body for the same request). After the retention
// (7 days by default; Config.Retention, redisstore.Config.Retention) a
// settled intent is deleted, and its key is new again: Place then sends a
// fresh create, which can make a second order. Deletion is spread over
// the writes, a few intents each (no background work). Listing the open
// intents, as Recover does at start-up, reads those alone; Recover
// records what it settles with one commit (BatchUpdater).
package idempotency
