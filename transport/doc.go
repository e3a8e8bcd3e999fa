// Package transport sends signed requests to the venue and decides, in one
// conservative function, whether a request may be sent again.
//
// # Retries
//
// Every attempt waits for the rate budget, is signed afresh with the
// venue's current time as the client knows it (VenueNow: the injected
// clock corrected by the measured offset; a signature is valid for about
// 30 s), and sends the same body bytes. The rules:
//
//	request  answer                                   what the client does
//	GET      2xx                                      returns it
//	GET      429, 500, 502, 503, 504                  waits, sends again (budget permitting)
//	GET      failed below HTTP (refused, reset,       waits, sends again: a GET has no
//	         per-attempt timeout)                     effect to duplicate
//	GET      any other status (400, 401, 403, 404,    final: returns a *StatusError
//	         422, 501, 3xx, …)
//	POST     2xx                                      returns it
//	POST     429 or any 5xx, or the answer lost       never sent again: ErrUnknownOutcome
//	         after it may have been written
//	POST     any other status                         final: returns a *StatusError
//
// A POST is never sent twice by this package, whatever comes back: a 429 or
// 5xx on a create is an unknown outcome, not a refusal. Only package orders,
// which can look an order up first, decides whether a create is sent again.
//
// The default policy makes 4 attempts in total, waiting 0.5 s, 1 s and 2 s
// (doubling, capped at 8 s). Full jitter is off by default; turn it on
// (RetryPolicy.Jitter) when many processes share one API key, so their
// retries do not arrive in lockstep. Retry-After is read only in its
// delta-seconds form; it replaces the computed delay but is clamped to the
// cap. An HTTP-date, a negative or fractional value, or garbage is ignored:
// exponential backoff needs no clock agreement with the venue. A wait never
// starts if it would outlive the context's deadline, and a cancelled
// context ends a wait at once.
//
// # Clock
//
// The venue checks a signature's timestamp against its own clock, so the
// client learns that clock: every answer's Date header, 2xx or not, is a
// sample of the venue's clock minus the local one, taken as Date + 0.5 s
// (Date is truncated to the second) minus the local time the answer
// arrived. The estimate is the median of the last 5 samples, so one bad
// sample does not move it; a sample further off than MaxClockOffset, a
// missing Date and one that does not parse are ignored; an estimate under a
// second is taken as 0. ClockOffset reports it, VenueNow applies it, and
// every attempt is signed with VenueNow, which Send's beforeSend receives. A
// change of a second or more is logged at Info. Like the AWS SDKs' skew
// correction, this fixes the requests that follow an answer, not the one
// answered: a 401 stays final, and when the clock explains it (the
// signature was stamped further from the venue's clock than
// signing.ValidFor), the *StatusError says so, with the offset, in
// ClockOffset and in its message.
//
// # Throttling
//
// Backoff is not throttling. A client-side token bucket (default 100
// requests a minute, bursts of 300: the venue's budget) sits in front of
// every attempt, retries and net/http's own replays of a GET included. It
// refills 1 % below its rate: at exactly the venue's rate, each token
// would be spent the instant the venue's own bucket regains it, and
// rounding or arrival jitter would draw a 429. And it holds back from its
// burst what the venue regains in 250 ms (at 100 a minute, 1 of the 300):
// a burst granted at once whose requests reach the venue up to 250 ms
// late, followed by requests that arrive at once, still finds a token for
// each.
// When any request is answered 429, the
// whole client pauses for that (clamped) delay, so concurrent callers do
// not pile onto a limiter that already said no. Several clients can share
// one budget through the Limiter interface: one NewTokenBucket in a
// process, or package redisbudget's across a fleet.
//
// The venue documents its limits as applied per endpoint and fluctuating.
// Config.Adaptive (or package redisbudget's Budget with Adaptive set)
// keeps one budget per endpoint class — market data, account reads, order
// reads, order writes — each starting at the documented budget (with the
// headroom above), its ceiling. The venue's only signal is a 429, and
// between two 429s its bucket is empty at both ends, so what it admitted
// in between measures its rate: after a first 429 a class sends nothing
// for 10 s and then at its ceiling until the next 429, holds just under
// the rate that interval measured, and every 55 s probes at its ceiling
// again, which a still-lowered venue refuses once (and so measures again)
// and a restored one admits. 429s to requests granted before a cut do not
// cut again; the 429 pause still holds every class. It is off by default:
// the vendor also documents the budget as per account, where four class
// budgets could spend four times it and learn that only from 429s, and a
// 429 on a create is an unknown outcome.
// Against a venue endpoint dropping from 100 to 30 a minute for ten
// minutes, it drew 12 429s (2 in the drop's first minute, then one a
// probe) where the fixed bucket draws 60 in the first minute alone, kept
// throughput at the lowered capacity, and was back above 90 a minute 48 s
// after the restore, and within 52 s of each of 12 restore times
// (TestAdaptiveUnderAFluctuatingVenue, TestAdaptiveFindsEveryRestoreWithinAMinute).
//
// # Retry budget
//
// A client's retries also draw on a retry budget shared by its goroutines,
// the AWS SDKs' retry quota with its figures: 500 tokens (Config.RetryBudget;
// negative turns it off); a retry after a 429 or 5xx costs 5 and one after a
// failure below HTTP 10; an answer that succeeds at the first attempt gives
// 1 back, and a retry that succeeds gives back its cost. When the budget
// cannot pay, the GET is not retried: its error matches ErrRetryBudget as
// well as ErrRateLimited or ErrUnavailable, and unwraps to the last answer.
// In an outage, retries are bounded by the budget (100 with no success in
// between), not by attempts × callers.
//
// # Errors
//
// Callers branch with errors.Is on ErrNotFound (404), ErrCredentials
// (401, 403), ErrRejected (400, 422 and other final 4xx), ErrRateLimited
// and ErrUnavailable (retried until the attempts ran out), ErrRetryBudget
// (not retried: the retry budget was spent), ErrUnknownOutcome,
// ErrNotSent and ErrInvalidRequest, and read the venue's answer with
// errors.As on *StatusError (status, attempts, last Retry-After, the
// venue's error envelope with its field paths, and on a 401 the clock
// offset that explains it). The other errors are of unexported types: the
// condition is what to act on, and the rest (method, path, attempts, the
// status and the cause) is in the message. Errors never hold headers,
// signatures or keys.
//
// The conditions do not overlap where it matters: a write whose outcome is
// unknown matches ErrUnknownOutcome and nothing else — not ErrUnavailable
// or ErrRateLimited ("retry later"), not ErrRejected ("the venue said
// no"), not ErrNotSent ("safe to retry") — even when the venue's answer
// behind it was a 503; that answer is in its message, out of reach of
// errors.Is and errors.As. A write answered 2xx whose body could not be
// read whole is such an unknown outcome, returned with the Response
// (status and header, no body; see Client.Do). A request stopped before
// anything reached the venue matches ErrNotSent and unwraps to the reason.
// A bot checks ErrUnknownOutcome first:
//
//	switch {
//	case errors.Is(err, transport.ErrUnknownOutcome):
//		// may have taken effect: look it up; never re-send under a new key
//	case errors.Is(err, transport.ErrNotSent):
//		// nothing reached the venue: safe to send again
//	case errors.Is(err, transport.ErrRateLimited), errors.Is(err, transport.ErrUnavailable):
//		// a read that kept failing: try again later
//	case errors.Is(err, transport.ErrRejected), errors.Is(err, transport.ErrCredentials), errors.Is(err, transport.ErrNotFound):
//		// the venue said no: fix the request
//	}
//
// # A write is sent at most once, by every layer
//
// This package never sends a POST twice, and it builds every request that
// is not a GET or HEAD so that no layer of net/http beneath it can either:
//
//   - GetBody is nil and Body is neither nil nor http.NoBody, even for an
//     empty body (a cancel). net/http's HTTP/2 client re-sends a request on
//     RST_STREAM(REFUSED_STREAM), RST_STREAM(PROTOCOL_ERROR) from the peer,
//     or a GOAWAY that leaves the stream out (http2shouldRetryRequest),
//     whenever it can rewind the body: when GetBody is set, which
//     http.NewRequest does for a bytes.Reader, or when the body is nil or
//     NoBody. A venue may send those after committing the write. With
//     neither, the reset reaches this package, which reports an unknown
//     outcome (ErrUnknownOutcome).
//   - ContentLength is the body's length (an empty body goes as an empty
//     DATA frame over HTTP/2, chunked over HTTP/1.1).
//   - No Idempotency-Key or X-Idempotency-Key header: net/http's HTTP/1
//     client treats a POST carrying one as replayable on a connection that
//     died (Request.isReplayable); without one, and without GetBody, it
//     re-sends only a request of which it wrote nothing.
//   - No proxy from the environment: the default transport is net/http's
//     default with Proxy nil, because a proxy can re-send a request it
//     forwarded. A Config.RoundTripper is used as
//     given; what it, or a proxy it uses, re-sends is the caller's to vouch
//     for. The client calls its RoundTrip itself, one attempt at a time, so
//     nothing above it follows a redirect.
//
// The tests hold this to the simulated venue (package venue) served over
// TLS + HTTP/2, which answers a POST with each of those resets after
// committing it, and count one POST and one order in its Ledger. Response.Proto says which protocol an
// answer came over.
//
// A GET is built the ordinary way, so net/http may send it again by itself
// (after a refused stream or a GOAWAY, or on a dead kept-alive
// connection); each such send first waits for a token of its own from the
// same rate budget (the attempt's httptrace hooks see it coming), and one
// the budget refuses, or a fifth in one attempt, ends the attempt before
// it is written. Against a venue that refuses every stream, a GET under a
// budget of N tokens opens at most N streams; Attempt.Replays counts the
// sends admitted.
//
// # Safety of the wire
//
// The base URL must be https; http is allowed only for loopback hosts.
// Redirects are never followed (they would carry the signed headers
// elsewhere), URLs from the venue are followed only on the base URL's
// scheme and host (Client.Target), and response bodies are read through a
// size limit (default 4 MiB).
//
// # Telemetry
//
// With Config.MeterProvider set, the client records, through the
// OpenTelemetry API:
//
//	http.client.request.duration   histogram, s: each attempt, from its signature to the end of its answer;
//	                               http.request.method, url.template, server.address, and
//	                               http.response.status_code when an answer was read, error.type on a
//	                               failure (the status of a 4xx or 5xx; timeout, canceled, connection,
//	                               replay_refused or response_too_large below HTTP)
//	tradewire.http.resends         counter: net/http's own sends of a GET again (Attempt.Replays); url.template
//	tradewire.http.retries         counter: attempts after a request's first; tradewire.endpoint_class
//	tradewire.http.throttled       counter: 429 answers; tradewire.endpoint_class
//	tradewire.budget.wait.time     counter, s: time spent waiting for tokens of the rate budget (an
//	                               attempt's, or net/http's resend's); a token granted at once adds
//	                               nothing, and a Config.Limiter's wait is timed whole
//	tradewire.budget.tokens        gauge: tokens left in a NewTokenBucket budget, or in a Config.Limiter
//	                               that counts them (redisbudget's, pgbudget's: read at each collection)
//	tradewire.venue.clock_offset   gauge, s: ClockOffset, once an answer was measured
//
// url.template is the path with every segment that is not a fixed word of
// the venue's paths replaced by {id} ("/api/v2/crypto/trading/orders/{id}/"):
// never a query string, an account number or an order id. The endpoint
// classes are "market data", "account reads", "order reads", "order
// writes" and "other". With Config.TracerProvider set, each request
// (Do, Get, Send) whose context carries a span is a client span "HTTP
// GET", "HTTP POST", …, a child of it (a request outside any trace makes
// no span, rather than a trace of its own), with http.request.method, url.template,
// server.address, http.response.status_code of the last answer,
// http.request.resend_count (retries and net/http's resends, when any)
// and, on failure, error.type (the last attempt's, or not_sent, canceled,
// timeout) and an error status. No attribute holds a key, a signature, a
// body or a full URL. With neither provider set, nothing is made or
// recorded: a request pays one nil check.
//
// # Logging
//
// The client logs one zerolog event per attempt to the injected logger
// (default zerolog.Nop()): method, path, status, attempt, whether it
// retries, the delay chosen and why. It never logs a signature, a key or a
// request body.
package transport
