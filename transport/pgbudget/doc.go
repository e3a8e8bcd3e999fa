// Package pgbudget is a rate budget shared by every process that trades
// one account: a transport.Limiter kept in PostgreSQL, so a fleet of bots
// on many machines spends one venue budget (100 requests a minute, bursts
// of 300) together and never past it, on the same server as its intent
// store. It is the sibling of package redisbudget, set by the same
// RatePerMinute and Burst.
//
//	budget, err := pgbudget.Open(ctx, postgresURL, accountNumber, pgbudget.Config{})
//	if err != nil { ... } // no server answered: refuse to start
//	defer budget.Close()
//	tc, err := transport.New(baseURL, signer, transport.Config{Limiter: budget})
//
// # Algorithm
//
// Wait spends one token of a GCRA (generic cell rate algorithm, the token
// bucket expressed as a "theoretical arrival time", as redis_rate keeps
// it) in one statement: a function that locks the account's row, reads the
// server's clock_timestamp() and either moves the arrival time on by one
// emission interval or, changing nothing, returns how long to wait. The
// caller sleeps that long on its own clock and tries again, so cancelling
// a wait needs no refund. Machines whose clocks disagree still agree on
// the budget. Like transport's in-process bucket, it keeps 1 % under the
// rate and holds back from the burst what the venue regains in 250 ms (99
// a minute and 299 for the venue's 100 and 300), the interval rounded up
// to the microsecond.
//
// Config has no Adaptive: the budget keeps the configured rate and learns
// nothing from the venue's 429s, and transport's in-process adaptive
// limiter is not combined with it (a Limiter in transport.Config replaces
// the client's own).
//
// # Pauses
//
// When the venue answers 429, the transport calls Pause(d) with its clamped
// delay. Pause sets the account's paused_until to the server's now plus d
// only if that is later than the pause in force, so concurrent 429s never
// shorten one another. The statement that takes a token checks the pause
// first, so every Wait, in every process, sleeps out what is left of it.
// Pause also pauses this process locally, so the pause holds here even if
// the write fails.
//
// # Tables
//
// The schema is created and migrated by Open, versioned as component
// "budget" in tradewire_schema. One row per account in tradewire_budget
// (account, tat: the GCRA's arrival time, paused_until), and two
// functions, tradewire_budget_take and tradewire_budget_pause; one server
// serves many accounts. Every process sharing an account must use the same
// RatePerMinute and Burst: the arrival time is read against the caller's
// limit.
//
// # Errors
//
// A server that cannot be reached is an error at Open, never a silent
// fallback to a private bucket. If the server fails later, Wait returns
// the error and the transport sends nothing. Both match
// transport.ErrUnavailable: an outage, to retry later. No error shows the
// URL's password.
//
// # Durability and cost
//
// A Wait is one round trip and one small transaction: on loopback about
// 170 µs, 1.9 times a SELECT 1 on the same server (BenchmarkWait), and
// about 140 µs a token when four processes contend for one account's row
// (BenchmarkWaitContended), far above any venue budget. The budget needs
// no durability beyond the server's own (a lost budget restarts full, and
// the venue's 429s and Pause cover the gap), so its transactions set
// synchronous_commit off locally: a token does not wait for the WAL flush
// or a synchronous standby, and is still granted while the standby does
// not answer. This holds for the budget's own transactions only; the
// intent store's writes, in other transactions, keep their synchronous
// commit. A crash or a failover may forget the last tokens granted.
//
// # Time
//
// The budget's arithmetic runs on the server's clock; the waits in
// between run on the injected clock (Config.Clock, default the real
// clock). Every statement is bounded by Config.Timeout.
package pgbudget
