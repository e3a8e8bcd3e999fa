// Package simulation runs deterministic scenarios against the simulated
// venue and checks invariants on a Jepsen-style ledger of each run.
//
// A Scenario is a seed, a fault mix of the venue (rates of 429s, 5xx, lost
// responses and latency), a simulated duration, and a workload: simulated
// bots that read accounts, holdings, trading pairs, best bid/ask and
// orders, and create and cancel orders, all through one transport.Client,
// and optionally place orders through an orders.Placer that restarts
// (Scenario.Placement).
// Scenario.Run runs it on a fresh in-memory venue (broker/brokertest, no
// sockets) and returns a Run: the client's history of calls, every request
// the venue received joined with what was on the wire, the orders created,
// the figures, and the invariants that failed.
//
//	r, err := simulation.Scenario{Seed: 1, Mix: venue.Mix{Rate5xx: 0.2}, Duration: time.Hour}.Run(ctx)
//	if err != nil { ... }          // the harness failed: deadlock, hang, broken workload
//	if err := r.Err(); err != nil { ... } // an invariant failed
//
// # Time and determinism
//
// The venue and the client share one simulated clock (a clockwork.Clock)
// that is also the scheduler: the bots run in lockstep, exactly one at a
// time. A bot runs until it waits on the clock (the client's token bucket,
// its backoff, the venue's injected latency, or the bot's pause between
// steps); then the driver jumps the time straight to the earliest pending
// timer (ties in creation order) and wakes the one bot waiting on it. No
// time passes while a bot runs, and none is wasted between events, so a
// request costs the same wall time whether it waited 600 ms or an hour.
// The interleaving of the bots is a function of the seed alone: the same
// Scenario gives the same ledger (Run.Fingerprint), with any number of
// bots.
//
// clockwork.FakeClock is not used because its BlockUntil counts the
// client's per-attempt timeout (an AfterFunc) as a waiter while the request
// is still running, so a driver advancing on it could move the time in the
// middle of a request; and it fires every timer due at once, so bots woken
// together would race.
//
// # The ledger
//
// Every request passes a tap on the wire that notes which call sent it
// (a context value set by Bot.Do), its signature and its client_order_id.
// In lockstep the tap and the venue's own Ledger record requests in the
// same order, so Run.Events joins them one for one (and the run fails if
// they ever disagree). Run.Calls is the client-side history: start and end
// in simulated time, method, target, outcome, and the attempt count the
// client reported. Run.Attempts(id) gives the requests of one call.
//
// # Invariants
//
// DefaultInvariants are the transport's: calls-ended (every call ended,
// failures are typed errors, the client's attempt counts match the wire),
// post-sent-once (0 POSTs retried, no create body sent twice outside a
// Placer), get-retry-rule (GETs retried only after 429/500/502/503/504 or
// no answer, at most 4 attempts), signatures-fresh (no signature accepted
// more than 30 s from the venue's clock, no 401, attempts a second apart
// never share a timestamp) and rate-budget (the requests fit the client's
// budget, a token bucket of 100 a minute with bursts of 300 from the
// start, which is the venue's; and the venue never throttled the client
// outside injected 429s).
//
// PlacementInvariants are checked too when the scenario has a Placement;
// see # Placement.
//
// To add an invariant, write a func(*Run) error that looks at the whole
// run (Calls, Events, Orders, Placement) and returns an error naming what
// broke, collecting several failures with a count and the first few as
// examples; append it to the list:
//
//	sc.Invariants = append(simulation.DefaultInvariants(), simulation.Invariant{
//		Name: "no-order-without-a-call",
//		Check: func(r *simulation.Run) error {
//			for _, e := range r.Events {
//				if e.Created != "" && e.Call == 0 && e.Op == 0 {
//					return fmt.Errorf("order %s was created outside any call", e.Created)
//				}
//			}
//			return nil
//		},
//	})
//
// Then prove it can fail: a row in TestInvariantsOnForgedLedgers (or
// TestPlacementInvariantsOnForgedRuns) on a hand-made run, and a negative
// control, a deliberately broken client or placer that the runner must
// catch (TestNegativeControls, TestPlacementNegativeControls). An
// invariant no control can break proves nothing.
//
// # Workload steps
//
// A bot draws a Step with probability proportional to its Weight, runs
// it, pauses for a random time (Scenario.Think on average, or Burst.Think
// during a burst), and repeats until Scenario.Duration has passed. To add
// a step, append to DefaultSteps() (or replace the list) and make the
// step's calls through the Bot: Bot.Do records each in the history and
// tags its requests. Draw every choice from Bot.Rand and every
// client_order_id from Bot.NewClientOrderID, so the run stays
// deterministic. A step must not block on anything but the clock
// (Bot.Sleep, or any wait on the injected clock that also ends with its
// context) and the venue, or the driver reports a hang: in particular two
// bots must never contend for a lock, such as an orders.Placer's per-key
// lock, that is not a wait on the clock. A failed call is not a step
// error: it is in the history for the invariants; return an error only
// when the workload is broken. Code that calls the venue without Bot.Do
// (a Placer) tags its requests with a context value instead (Event.Op).
//
// # Placement
//
// Scenario.Placement adds the "place_keyed" step: the bots place orders
// through an orders.Placer with idempotency keys, on the same
// transport.Client as every other call, in one simulated process (one
// Placer on one intent store) that the bots share. A bot places a new key,
// or (Placement.Reuse) places again a key whose last Place failed, the
// same request with the same key, possibly another bot's; or
// (Placement.Replay) a key already acknowledged, which must send nothing.
// Two Places of one key never run at once: the harness keeps the keys in
// flight aside, since the second would wait on the Placer's per-key lock,
// off the clock. Faults come from the scenario's Mix (429s and 503s before
// the commit, answers lost after it, latency) and from CommitFaults,
// which scripts the next create's answer lost after its commit (429, 500,
// 502, 503, 504, a dropped connection, or an answer later than the
// attempt timeout). Placement.Duplicate sets the venue's duplicate mode:
// CreateSecond (the default, and the mode every placement scenario of the
// matrix uses, so that "one order per key" is the Placer's doing, not the
// venue's kindness), ReturnOriginal or Reject400.
//
// The process restarts: at random times (about every
// Placement.RestartEvery) and, with probability Placement.Crash per Place,
// when a fuse lit at the Place's start burns out 1 to 45 s later while it
// is still under way, that is, while it waits for its signatures to
// expire, reconciles or waits out latency. A restart cuts off every
// Place and Recover under way: each runs under a context that a crash
// timer cancels (an AfterFunc on the lockstep clock owned by its bot, so
// it wakes that bot wherever the Placer waits on tc.Config().Clock), and the
// generation's view of the store refuses every read and write from that
// moment, as a dead process sends and writes nothing. The next bot to
// place builds a new Placer on the same store and calls Recover before
// anyone places again (the others wait on the clock); keys cut off go back
// to the bots to place again. The store is one idempotency.NewMemoryStore
// shared across restarts, or, with Placement.StorePath, the bbolt store
// of idempotency.Open, closed and opened again at every restart.
//
// When every bot has stopped, the last one advances the clock 10 min 41 s
// (past a signature's 30 s and the Placer's margin after the last send:
// its 10 s skew floor plus the 10 min clock offset allowed for while the
// offset is not measured), restarts the process and runs a final Recover. The invariants
// then read the venue's ledger and the store (PlacementInvariants):
// one-order-per-key (no client_order_id with two orders, under every
// duplicate mode), no-intent-lost (every key attempted has its intent,
// every order with a key-derived client_order_id has one, every not-placed
// intent has no order and every acknowledged one its order),
// no-unknown-after-recover, create-resent-after-expiry (a Placer sends a
// create again only once every earlier signature expired) and
// replay-sends-nothing. PlacementFigures counts places and keys,
// reuses, interruptions and restarts, the keys acknowledged, rejected and
// not placed, the intents Recover settled, resends, and what must be 0:
// unsettled, lost and duplicated.
//
// # The wire
//
// Scenario.Wire picks how the client reaches the venue: WireMemory (the
// default) calls its handler in memory; WireHTTP serves it over plain
// HTTP/1.1 on a loopback listener (brokertest.NewServer); WireTLS serves it
// over TLS + HTTP/2 on a loopback listener (brokertest.NewTLSServer, on the
// venue's own HTTP/2 front, which can refuse a stream or send GOAWAY) and
// hands the client the Server's Transport, so requests cross the protocol the real
// venue speaks (Event.Proto is "HTTP/2.0"). The lockstep holds over the
// socket, since the venue's handler waits on the same clock on behalf of
// the bot that sent the request; a request the client gave up on (latency
// past the attempt timeout) is recorded by the venue only once the stream
// is cancelled, so the tap waits for that record (Ledger.AwaitRequest)
// before the bot goes on. A request the venue receives again with nothing new on
// the wire (net/http's HTTP/2 client replays a request after
// REFUSED_STREAM or GOAWAY by itself) is joined to the request it repeats
// and marked Event.Replayed.
//
// # Hostile modes
//
// HostileModes are venues that do not share the client's assumptions: an
// orders list that lags 20 s (less than the Placer's wait) or 90 s behind
// creates, a venue clock 20 s or 3 min ahead or behind, list rows without
// client_order_id (all, or half the orders), pages that drop their next
// link, 2xx answers to committed creates with a truncated body, another
// order's JSON or another client_order_id (and a truncated body on a list
// lagging 90 s), and HTTP/2 streams refused, reset with PROTOCOL_ERROR or
// answered with GOAWAY after the commit (over TLS). HostileScenario makes a
// mode's placement scenario, always on CreateSecond, with the default and
// placement invariants and HostileInvariants: answers-true (no Place
// answered not placed or rejected while the venue held an order for its
// key) and wire-sends-once (no Event.Replayed). Run.Hostile is its ledger
// row (Places by answer, false answers, lost, duplicated, replays) and
// WriteHostileTable prints them.
//
// # Throttle scenarios
//
// ThrottleLayouts are venues whose rate limits are per endpoint class and
// fluctuate (Scenario.RateLimits, venue.Config.RateLimits), with bots
// that saturate each class they call: drop (market data at 100 a minute
// drops to 30 for 10 min, four bots on it), per-class (market data 100,
// account reads 60, order reads 45, order writes 100, market data and
// order writes dropping to 30 for 10 min, one bot each) and outage (every
// answer 503 for 10 min, Scenario.Outage, two bots per class of reads).
// ThrottleScenario runs one with a ThrottleClient: the fixed bucket (the
// control), the adaptive limiter (transport.Config.Adaptive), or
// the fixed bucket without a retry budget (the outage's control). The
// figures come from the venue's ledger (Request.Time, Request.Class,
// Status): per class and phase of its capacity, the 429s in the phase's
// first minute (the transition) and after it (the limiter's probing), the
// requests admitted as a share of the capacity, over the phase and after
// its first minute, and on a restore the recovery: when the first 30-s
// window began in which the venue admitted 90 % of the capacity's rate;
// for the outage, its calls, requests and retries against the attempts
// bound (every GET its policy's attempts). WriteThrottleTable prints them.
// make sim runs every layout with every client for one seed, and the drop
// restored at six times 10 s apart, and fails if checkThrottle's
// invariants break: the adaptive limiter draws no more 429s than the
// fixed bucket in any phase of the drop and none at full capacity, keeps
// 90 % of every capacity after a phase's first minute, draws at most 2
// 429s in a phase's first minute and one per probe after, recovers within
// a minute; the control floods the lowered venue; the fixed bucket leaves a
// quarter of the per-class capacity unused; the retry budget bounds an
// outage's retries at 100, and without it they reach the attempts bound.
// go test runs TestThrottle, the same with 2-minute phases (two classes
// of per-class, the outage with the fixed bucket only, and the drop
// restored at three times 20 s apart), in about 10 s.
//
// Measured (make sim, or go test -run '^TestMatrix$' with
// TRADEWIRE_SIM_FULL=1 TRADEWIRE_SIM_WIRE=memory, seed 1): on the drop,
// the adaptive limiter drew 12 429s while lowered, 2 in its first minute
// and 10 probing after it, against the fixed bucket's 679; it admitted
// 100 % of the lowered capacity after the first minute and 99 % after the
// restore, and recovered in 0 s to 45 s depending on the restore time;
// on per-class, 99 to 100 % of every class's capacity (the fixed bucket
// 25 % to 83 %), 32 and 33 429s over 30 min on the two classes under the
// documented budget (one a probe about every 57 s), and recoveries of
// 45 s and 48 s; in the outage, 100 retries with the retry budget, 740 without
// (attempts bound 738).
//
// # Load and speed
//
// A run's cost is its requests: each is signed (Ed25519) by the client and
// verified by the venue, about 120 µs of wall time in all on a loaded
// two-core machine. That floor is timed in every run (Figures.Floor, on the
// run's wall clock, sampled between the bots' steps while they are parked,
// the sampling's time taken out of the run's wall), and make sim prints
// the saturated runs' wall time per request against it. The default
// Think keeps four bots at the limit of the 100-a-minute budget (about
// 3,000 to 4,500 simulated seconds a wall second); RealisticLoad is a
// fleet at about a quarter of its budget on average, with a burst of twice
// the budget for a minute in every fifteen (over 10,000). The matrix runs
// a simulated day at the realistic load for every mix and every placement
// scenario, and a shorter saturated run per seed, so that the rate budget
// is still held at its limit.
//
// The driver costs little besides: a bot that parks on the very next
// event fires it itself rather than going through the driver (the same
// order, the same ledger), and the matrix collects garbage less often,
// under a soft cap on its heap: it keeps of each checked run only the
// figures it prints (a summary that holds nothing of the run's process,
// venue or ledger: TestSummaryLetsTheRunGo), so only the runs in flight
// hold their records, and it prints its peak resident memory last. With
// TRADEWIRE_SIM_MEMTRACE=FILE the matrix writes to FILE, once a second,
// its resident memory, the Go runtime's memory classes (runtime/metrics)
// and the runs in flight, and a heap profile to FILE.heapN at each new
// peak of the live heap.
//
// # Running
//
// go test ./simulation/ runs a fast slice (two seeds, every
// standard mix, three simulated minutes at the saturated load; the
// throttle scenarios with 2-minute phases; the
// placement scenarios on CreateSecond with restarts every minute and a
// half, one on the bbolt store; two runs over TLS + HTTP/2; every hostile mode,
// TestHostilePlacement, which go test -v prints the hostile ledger of), the
// determinism checks, and the
// negative controls: deliberately broken clients (retrying POSTs, retrying
// GETs on 404, replaying a signature, ignoring the rate budget) and
// placers (resending a create at once on 503 under CreateSecond,
// recording the intent after the answer, a Recover that settles nothing)
// that the invariants must catch. make sim runs the full matrix and
// prints the figures of every run, the placement figures with their sum,
// the hostile ledger, and the ratio of simulated to wall time of every
// kind of run. The matrix runs over TLS + HTTP/2 on loopback, as the real
// venue is served, unless TRADEWIRE_SIM_WIRE says http (plain HTTP/1.1 on
// loopback) or memory (in memory, the fastest); TRADEWIRE_SIM_HOSTILE sets
// the length of its hostile runs (default 1h). The fast slice stays in
// memory (a Scenario's zero Wire) but for its runs over TLS and HTTP/1.1.
//
// TestHostilePlacement fails on today's orders.Placer, which the hostile
// modes break (issue 9); until its fix is merged, TRADEWIRE_HOSTILE_PENDING=1
// skips its checks, and those of the matrix's hostile runs, after printing
// the ledger.
package simulation
