// Package simulation runs deterministic scenarios against the simulated
// venue and checks invariants on a Jepsen-style ledger of each run.
//
// A Scenario is a seed, a fault mix of the venue (rates of 429s, 5xx, lost
// responses and latency), a simulated duration, and a workload: simulated
// bots that read accounts, holdings, trading pairs, best bid/ask and
// orders, and create and cancel orders, all through one transport.Client.
// Scenario.Run runs it on a fresh in-memory venue (broker/brokertest, no
// sockets) and returns a Run: the client's history of calls, every request
// the venue received joined with what was on the wire, the orders created,
// the figures, and the invariants that failed.
//
//	r, err := simulation.Scenario{Seed: 1, Mix: brokertest.Mix{Rate5xx: 0.2}, Duration: time.Hour}.Run(ctx)
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
// post-sent-once (0 POSTs retried, no create body sent twice),
// get-retry-rule (GETs retried only after 429/500/502/503/504 or no
// answer, at most 4 attempts), signatures-fresh (no signature accepted
// more than 30 s from the venue's clock, no 401, attempts a second apart
// never share a timestamp) and rate-budget (the requests fit the venue's
// token bucket of 100 a minute with bursts of 300 from the start, and the
// venue never throttled the client outside injected 429s).
//
// To add an invariant, append to the list; Check sees the whole run:
//
//	sc.Invariants = append(simulation.DefaultInvariants(), simulation.Invariant{
//		Name: "one-order-per-client-id",
//		Check: func(r *simulation.Run) error {
//			seen := map[string]bool{}
//			for _, o := range r.Orders {
//				if seen[o.ClientOrderID] {
//					return fmt.Errorf("client_order_id %s created twice", o.ClientOrderID)
//				}
//				seen[o.ClientOrderID] = true
//			}
//			return nil
//		},
//	})
//
// # Workload steps
//
// A bot draws a Step with probability proportional to its Weight, runs
// it, pauses for a random time (Scenario.Think on average), and repeats
// until Scenario.Duration has passed. To add a step, append to
// DefaultSteps() (or replace the list) and make the step's calls through
// the Bot: Bot.Do records each in the history and tags its requests.
// Draw every choice from Bot.Rand and every client_order_id from
// Bot.NewClientOrderID, so the run stays deterministic. A step must not
// block on anything but the clock (Bot.Sleep) and the venue, or the driver
// reports a hang. A failed call is not a step error: it is in the history
// for the invariants; return an error only when the workload is broken.
//
// # Running
//
// go test ./internal/simulation/ runs a fast slice (two seeds, every
// standard mix, three simulated minutes), the determinism check, and the
// negative controls: deliberately broken clients (retrying POSTs, retrying
// GETs on 404, replaying a signature, ignoring the rate budget) that the
// invariants must catch. make sim runs the full matrix, seeds × every
// standard mix × a simulated day, and prints the figures of every run with
// the ratio of simulated to wall time.
package simulation
