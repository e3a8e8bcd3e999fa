// Package pgstore is an idempotency.Store kept in PostgreSQL, for fleets:
// many bot processes on many machines that trade one account and share
// one space of idempotency keys. Two processes given the same key never
// both place the order.
//
//	store, err := pgstore.Open(ctx, "postgres://bot:PASSWORD@db1,db2/trade?target_session_attrs=read-write", accountNumber, pgstore.Config{})
//	if err != nil { ... } // unreachable, or a schema newer than this binary: refuse to start
//	c, err := broker.New(broker.Config{Getenv: os.Getenv, IntentStore: store})
//
// The Store is also an idempotency.BatchUpdater, an idempotency.Meta and
// an idempotency.Witness. It is safe for concurrent use.
//
// # Claims
//
// The claim rules are idempotency.Store's, the same for every store, and
// the same as package idempotency/redisstore's. Create is one INSERT ... ON
// CONFLICT DO NOTHING that writes the record and a claim: the holder (the
// Store's owner id, host/pid/random, then the caller's Record.Holder) and
// a lease. For an existing intent, one conditional UPDATE passes the
// claim on only when it is free; otherwise Create writes nothing and
// returns an error matching idempotency.ErrInProgress that names the
// holder, when its claim lapses and when its signatures expire. A claim is
// free when this holder has it, when it was released, or when it was
// abandoned: its lease (Config.Lease, a minute by default, after its last
// write) has lapsed and, for a pending or unknown intent, every signature
// it recorded has expired (LastSignedAt + 30 s + Config.SkewMargin is past
// on the server's clock and on Config.Clock). Whoever takes over an open
// intent looks the order up before sending anything, as orders.Placer
// does. An acknowledged or rejected intent is returned to anyone and
// claimed by nobody.
//
// Update is fenced by the claim: it writes only where the row's owner is
// the caller (and increments the row's version); anyone else gets
// idempotency.ErrClaimLost. An update renews the lease; one to a final
// state (acknowledged, rejected, not placed) releases the claim. A
// Release that fails, or a Create that fails after its claim may have
// been committed, is remembered: the same Store's next Create of that
// intent releases it first; other processes wait for the lease.
//
// # Guarantees
//
// Every write (Create's claim, Update, UpdateAll, Release, PutMeta) is
// committed before the call returns, as durably as the server's settings
// make a commit; the Store never lowers synchronous_commit. At Open, and on every new connection,
// the Store reads synchronous_commit, synchronous_standby_names,
// pg_is_in_recovery() and pg_stat_replication, and GuaranteeOf says what
// holds:
//   - SynchronousStandby: a commit is on a standby before it returns, so a
//     failover to it loses no claim. VouchesNew is true: orders.Placer
//     sends a new intent's create with no lookup first, one request per
//     Place.
//   - SingleServer: one host in the URL, no standby, synchronous_commit
//     not off: the server's own durability only, as the bolt store
//     vouches for its disk. VouchesNew is true; a server restored
//     from an older backup would break the promise.
//   - AsynchronousStandby: a failover can lose the last commits.
//     VouchesNew is false: the Placer looks an order up before its first
//     send, as with Redis.
//
// VouchesNew follows the newest connection: after a failover to a server
// with no synchronous standby of its own it turns false.
//
// # Failover
//
// Give every host, with target_session_attrs=read-write: the driver
// connects to whichever is primary. While none answers, or one answers
// read-only (25006), or a call runs out of Config.Timeout, the call fails
// with an error matching transport.ErrUnavailable, "try again later": the
// Placer sends nothing on it. The next call reconnects; no operator is
// needed. A claim committed before the failover is on the promoted
// synchronous standby, so it is still held. With synchronous_standby_names
// set and no standby connected, commits wait rather than return; the
// Store's calls then fail after Config.Timeout (the commit may land later,
// but nothing was sent on it).
//
// # Time
//
// Leases and retention are measured on the server's clock
// (clock_timestamp()), so machines with skewed clocks agree on when a
// claim lapses. Record times (CreatedAt, LastSignedAt) come from the
// caller's clock, the one the transport signs with; the signature-expiry
// test takes the earlier of the server's time and Config.Clock.
//
// # Schema
//
// The Store creates and migrates its tables itself, versioned in
// tradewire_schema (component "intents"), and refuses a schema newer than
// it knows:
//
//	tradewire_intents      (account, client_order_id) → rec (the record's JSON, bytea), state,
//	                       owner, lease, signexp, created_at, settled_at, version;
//	                       a partial index of the open intents, one of the settled
//	tradewire_intent_meta  (account, name) → value: idempotency.Meta's values
//
// One database can serve several accounts.
//
// # Retention
//
// As for every store (package idempotency, # Retention): a settled intent
// is kept compacted for Config.Retention (7 days by default, on the
// server's clock) and then deleted by a later Update, up to 16 per commit;
// an open intent, or one a holder has claimed, is never deleted. List of
// the open states (what Recover reads) reads the open intents' index.
package pgstore
