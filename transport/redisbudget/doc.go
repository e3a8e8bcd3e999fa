// Package redisbudget is a rate budget shared by every process that trades
// one account: a transport.Limiter kept in Redis, so a fleet of bots on
// many machines spends one venue budget (100 requests a minute, bursts of
// 300) together and never past it.
//
//	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
//	budget, err := redisbudget.New(ctx, rdb, accountNumber, redisbudget.Config{})
//	if err != nil { ... } // Redis did not answer PING: refuse to start
//	tc, err := transport.New(baseURL, signer, transport.Config{Limiter: budget})
//
// The in-process token bucket (transport.NewTokenBucket) stays the
// default; a Budget replaces it only where transport.Config.Limiter says so.
//
// # Algorithm
//
// Wait spends one token of a GCRA (generic cell rate algorithm, the token
// bucket expressed as a "theoretical arrival time") in one atomic Lua step,
// through github.com/go-redis/redis_rate. The step reads Redis's own TIME,
// so machines whose clocks disagree still agree on the budget. A denied
// step changes nothing; the caller sleeps for the retry-after Redis
// computed and tries again, so cancelling a wait needs no refund.
//
// # Pauses
//
// When the venue answers 429, the transport calls Pause(d) with its clamped
// delay. Pause sets the account's pause key with a small Lua script that
// writes SET key PX d only if that extends the pause already in force, so
// concurrent 429s never shorten one another. Every Wait, in every process,
// checks the pause key first and sleeps out what is left of it before it
// spends a token. Pause also pauses this process locally, so the pause
// holds here even if the write to Redis fails. A pause that begins between
// a caller's pause check and its token is not seen by that one request.
//
// # Learning the venue's rate
//
// With Config.Adaptive, the budget is one GCRA per endpoint class (market
// data, account reads, order reads, order writes, and one for Wait), each
// at a rate the fleet learns as transport's Config.Adaptive does in one
// process: a class's last cut, the tokens granted since by every member,
// the rate it holds at and when it probes are kept in Redis beside its
// GCRA state, in one hash. Taking a token is one Lua step that reads the
// pause and computes the class's rate on Redis's clock and counts the
// token (one round trip instead of two); a 429 seen by any member cuts the
// class for all (Answered, one more step, only on a 429), unless the
// request was granted before the class's last cut, and measures the
// venue's rate from the tokens the whole fleet was granted since the cut
// before. The hold and the probe run for the whole fleet on Redis's
// clock, never above the configured budget. Without Adaptive, WaitFor
// is Wait and Answered does nothing.
//
// # Keys
//
// Keys are namespaced by account, with the account as a Redis Cluster hash
// tag so one Redis (or one cluster slot) serves several accounts:
//
//	rate:tradewire:{ACCOUNT}:budget   GCRA state (redis_rate adds "rate:")
//	tradewire:{ACCOUNT}:pause         fleet-wide pause, expiring by itself
//	tradewire:{ACCOUNT}:class:N       Adaptive: class N's GCRA state and
//	                                  learned rate, expiring an hour after use
//
// Every process sharing an account must use the same RatePerMinute and Burst: the
// GCRA state is read against the caller's limit.
//
// # Errors
//
// A Redis that cannot be reached is an error at construction (New PINGs
// it), never a silent fallback to a private bucket. If Redis fails
// later, Wait returns the error and the transport sends nothing. Both
// match transport.ErrUnavailable: an outage, to retry later.
//
// # Cost
//
// A Wait is two round trips to Redis: PTTL on the pause key, then the GCRA
// script. On loopback that measured 40–120 µs against a Redis without an
// append-only file, but 0.5–4 ms against one run with appendfsync always,
// because the script writes and Redis fsyncs before it answers
// (BenchmarkWait, BenchmarkSignedGET). The budget needs no durability (a lost budget restarts full, and
// the venue's own 429s and Pause cover the gap), so a fleet may keep it on
// a separate Redis without AOF, while idempotency/redisstore needs the
// durable one.
//
// # Time
//
// The budget's arithmetic runs on Redis's clock; the waits in between run
// on the injected clock (Config.Clock, default the real clock).
package redisbudget
