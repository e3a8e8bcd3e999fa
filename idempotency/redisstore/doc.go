// Package redisstore is an idempotency.Store kept in Redis, for fleets:
// many bot processes on many machines that trade one account and share
// one space of idempotency keys. Two processes given the same key never
// both place the order.
//
//	store, err := redisstore.Open(ctx, "redis://127.0.0.1:6379/0", accountNumber)
//	if err != nil { ... } // unreachable, or not durable: refuse to start
//	placer, err := orders.New(tc, store, accountNumber)
//
// # Claims
//
// Create is one atomic Lua step that writes the record and a claim on it
// (the Store's owner id and a lease). While a live claim is held by another
// process, Create writes nothing and returns an *InProgressError (matching
// ErrInProgress): the second process does not create, send or look up
// anything. An acknowledged or rejected intent is returned to anyone.
//
// Update is a compare-and-set on the owner: only the claim holder may
// change an intent; anyone else gets ErrClaimLost. Each update renews the
// lease; one to a final state (acknowledged, rejected, not placed) releases
// the claim, so a not-placed intent may be taken up by any process.
//
// # Abandoned intents
//
// A process may die holding a claim on a pending or unknown intent whose
// create it may have sent. Its claim is taken over by another process's
// Create only when both
//   - its lease has lapsed (DefaultLease after its last write), and
//   - every signature it recorded has expired: LastSignedAt + 30 s + the
//     skew margin is past on Redis's clock and on the caller's.
//
// Create then returns the record with created == false and the claim passed
// to the caller, whose orders.Placer reconciles by lookup (it does for
// pending and unknown intents) before any resend. A stalled, not dead,
// former holder finds its next Update refused (ErrClaimLost), and since
// orders records every signature with an Update before sending it, it can
// send nothing more; what it sent before has expired at the venue.
//
// # Time
//
// Leases are measured on Redis's clock (TIME inside the scripts), so
// machines with skewed clocks agree on when a claim lapses. Record times
// (CreatedAt, LastSignedAt) come from the caller's clock, the one the
// transport signs with; the signature-expiry test takes the earlier of
// Redis's time and this Store's clock (WithClock), so a takeover waits for
// the slower of the two.
//
// # Durability
//
// Every Create and Update is one Lua script whose writes Redis appends to
// its AOF; with appendfsync always, Redis fsyncs them before it replies. New
// checks with CONFIG GET that the server runs with appendonly yes,
// appendfsync always and a maxmemory-policy that cannot evict intents
// (noeviction or volatile-*; intents have no TTL), and refuses otherwise
// with an error matching ErrNotDurable. WithWeakDurability skips the check,
// for servers where CONFIG is disabled. WAITAOF (Redis 7.2 and later) would
// let each write wait for the fsync on a server without appendfsync always,
// and for replicas; Debian 12's Redis is 7.0, which lacks it, so the store
// relies on the configuration instead. Replication is asynchronous: a
// failover to a replica can lose the last writes; run one durable primary.
//
// # Keys
//
// Keys are namespaced by account, with the account as a Redis Cluster hash
// tag so one Redis can serve several accounts and the scripts' keys share a
// slot:
//
//	tradewire:{ACCOUNT}:intent:<client_order_id>   hash: rec, state, owner, lease, signexp
//	tradewire:{ACCOUNT}:intents                    sorted set by CreatedAt, for List
//
// # Connection
//
// New and Open PING Redis: one that cannot be reached is an error at start,
// never a silent fallback. go-redis may retry a command after a network
// error; both scripts are safe to run twice for the same owner.
package redisstore
