// Package redisstore is an idempotency.Store kept in Redis, for fleets:
// many bot processes on many machines that trade one account and share
// one space of idempotency keys. Two processes given the same key never
// both place the order.
//
//	store, err := redisstore.Open(ctx, "redis://127.0.0.1:6379/0", accountNumber, redisstore.Config{})
//	if err != nil { ... } // unreachable, not durable, or reset: refuse to start
//	c, err := broker.New(broker.Config{Getenv: os.Getenv, IntentStore: store})
//
// (broker.Config.RedisURL opens it for the fleet by itself.)
//
// # Claims
//
// The claim rules are idempotency.Store's, the same for every store. Here
// Create is one atomic Lua step that writes the record and a claim on it:
// the holder (the Store's owner id, then the caller's Record.Holder, so
// every Place and Recover is a holder of its own, whichever process or
// goroutine it runs in) and a lease. While a live claim is held by another
// holder, Create writes nothing and returns an error matching
// idempotency.ErrInProgress (its message names the holder, when its claim
// lapses and when its signatures expire; broker.ErrInProgress is the same
// value): the second holder does not create, send or look up anything.
// An acknowledged or rejected intent is returned to anyone; a released
// one is handed to the next Create at once. A claim whose Release could not
// reach Redis (or whose Create lost its reply) is released by the same
// Store's next Create of the intent, since its holder has ended; other
// processes wait for its lease to lapse.
//
// Update is a compare-and-set on the owner: only the claim holder may
// change an intent; anyone else gets idempotency.ErrClaimLost. Each update
// renews the lease; one to a final state (acknowledged, rejected, not
// placed) releases the claim, so a not-placed intent may be taken up by
// any process.
//
// # Abandoned intents
//
// A process may die holding a claim on a pending or unknown intent whose
// create it may have sent. Its claim is taken over by another process's
// Create only when both
//   - its lease has lapsed (Config.Lease, a minute by default, after its last write), and
//   - every signature it recorded has expired: LastSignedAt + 30 s + the
//     skew margin is past on Redis's clock and on the caller's.
//
// Create then returns the record with created == false and the claim passed
// to the caller, whose orders.Placer reconciles by lookup (it does for
// pending and unknown intents) before any resend. A stalled, not dead,
// former holder finds its next Update refused (idempotency.ErrClaimLost),
// and since orders records every signature with an Update before sending
// it, it can send nothing more; what it sent before has expired at the
// venue.
//
// # Time
//
// Leases are measured on Redis's clock (TIME inside the scripts), so
// machines with skewed clocks agree on when a claim lapses. Record times
// (CreatedAt, LastSignedAt) come from the caller's clock, the one the
// transport signs with; the signature-expiry test takes the earlier of
// Redis's time and this Store's clock (Config.Clock), so a takeover waits for
// the slower of the two.
//
// # Durability
//
// Every Create and Update is one Lua script whose writes Redis appends to
// its AOF; with appendfsync always, Redis fsyncs them before it replies. New
// checks with CONFIG GET that the server runs with appendonly yes,
// appendfsync always and a maxmemory-policy that cannot evict intents
// (noeviction or volatile-*; intents have no TTL), and refuses otherwise
// with an error matching ErrNotDurable. Config.WeakDurability skips the check,
// for servers where CONFIG is disabled.
//
// # Wipes and failovers
//
// A Redis can still lose intents: restarted without its append-only file
// or on an empty directory, restored from an older snapshot, or failed
// over to a replica that never got the latest claims. A process that then
// asks to place a lost intent would see it as new. So the Store checks,
// rather than trusts, that Redis still holds what it saw:
//   - The first Store on an account writes a generation marker (a random
//     id) and every Store remembers it at New. Every Create and Update
//     checks it inside its script: missing or different, the script
//     writes nothing and the Store returns an error matching
//     ErrStoreReset.
//   - The marker also counts every claim and update; a Store refuses the
//     same way when the count is below one it has seen (Redis went back
//     in time).
//   - Once refused, a Store fails closed: every later call returns the
//     same error, even if a new marker appears. Reopen only after the
//     account's orders are reconciled.
//   - New on an account with intents but no marker cannot tell a loss
//     from a store written before markers existed; it refuses with
//     ErrStoreReset, and the error says how to adopt the intents.
//   - When the server has replicas (INFO replication connected_slaves, as
//     New finds it), every Create and Update waits for them all to
//     acknowledge it (WAIT, up to Config.ReplicaTimeout) and otherwise
//     returns an error matching transport.ErrUnavailable: orders.Placer then sends
//     nothing, so a replica promoted afterwards holds every claim a create
//     was sent under. WAIT confirms the replica received the write, not
//     that it fsynced it; WAITAOF (Redis 7.2) would, but Debian 12's Redis
//     is 7.0. Replicas that connect after New are not waited for until the
//     process opens its Store again.
//
// A Redis that was wiped while no process was running, and a brand-new
// account, look the same: the first Store writes a new marker. This is
// why the Store does not implement idempotency.Witness: a created intent
// proves nothing about the venue, and orders.Placer looks the order up
// before its first send.
//
// Errors from Redis itself (unreachable, an error reply, replicas too
// slow) match transport.ErrUnavailable, and ErrStoreReset matches it too; both
// match transport.ErrUnavailable, so callers treat a store outage like a
// venue outage: nothing was sent, try again later (the CLI exits 4).
//
// # Leases
//
// New refuses a Config.Lease shorter than the signature window
// (signing.ValidFor, 30 s) plus the skew margin: a claim must outlast any
// create its holder signed and may still send after a pause. The default
// lease is one minute.
//
// # Keys
//
// Keys are namespaced by account, with the account as a Redis Cluster hash
// tag so one Redis can serve several accounts and the scripts' keys share a
// slot:
//
//	tradewire:{ACCOUNT}:intent:<client_order_id>   hash: rec, state, owner, lease, signexp
//	tradewire:{ACCOUNT}:intents                    sorted set by CreatedAt, for List
//	tradewire:{ACCOUNT}:open                       sorted set of the open intents, by CreatedAt
//	tradewire:{ACCOUNT}:settled                    sorted set of the settled intents, by when they are due for deletion
//	tradewire:{ACCOUNT}:generation                 hash: id (random, written once), seq (write counter), indexed
//	tradewire:{ACCOUNT}:meta                       hash: the named values of idempotency.Meta, by name
//
// # Retention
//
// As for every store (package idempotency, # Retention): a settled intent
// is kept compacted for the retention (Config.Retention, default
// 7 days, on Redis's clock) and then
// deleted by a later write, up to 16 per write; an open intent, or one a
// holder has claimed, is never deleted. List of the open states (what
// Recover reads) reads the open set alone. UpdateAll writes several
// intents with one script: one durable write. New builds the open and
// settled sets, once, for an account written before they existed.
//
// # Connection
//
// New and Open PING Redis: one that cannot be reached is an error at start
// (matching transport.ErrUnavailable), never a silent fallback. go-redis may retry a command after a network
// error; every script is safe to run twice for the same owner.
package redisstore
