// Package orders is the placement engine: it places orders so that a bot
// may call Place again after any failure — a 429, a 5xx, a timeout, a
// crash, a restart — and end with exactly one order, or a true statement
// that it cannot know yet. Bots use it through broker.Client (Place,
// Recover), which owns a Placer and names the same errors; import this
// package only for its Config (broker.Config.Orders) or its engine alone.
//
// The engine knows no order vocabulary: package broker owns it (the
// request, its validation and its JSON, the order and its decoding). A
// caller hands Place a Create (the symbol, and the create's bytes for a
// client_order_id) and New a Codec that reads the few Facts the engine
// needs of an order the venue returned: its id, its client_order_id,
// and whether it failed, with the Codec's own decoding of the order. Place
// returns those Facts of the order it settled on, so the caller decodes
// nothing again, and says whether they are the copy recorded when the key
// was acknowledged earlier (Facts.Recorded).
//
// # How Place stays idempotent
//
// The transport never sends a POST twice. Place sits above it and is the
// only code that may send a create again, and only when it is safe:
//
//  1. The caller has validated the request offline; the client_order_id
//     is derived from the caller's idempotency key (package idempotency),
//     and the create's body bytes are built once.
//  2. The intent is recorded durably (pending, with a fingerprint of the
//     request) before anything is sent; the time of every signature is
//     recorded before that signature leaves (transport.Client.Send).
//  3. If the store cannot vouch that the intent is new
//     (idempotency.Witness: the bbolt store idempotency.Open returns
//     vouches; one from idempotency.NewMemoryStore or a Redis store does
//     not), the order is looked up before the first send: a
//     create sent by a process whose record was lost may have landed.
//     Found: acknowledged, nothing sent. The lookup fails: nothing is sent
//     (transport.ErrNotSent). This finds what has landed; a create still in
//     flight from such a process is for the store to rule out.
//     The first Place of a transport that has read no answer yet looks
//     first too, whatever the store: the lookup's answer shows the
//     venue's clock (its Date header), so the create is stamped on it and
//     its expiry judged by it, with the floor margins.
//  4. The create is sent once. A 2xx whose order is read is acknowledged
//     (one in state failed is a rejection once a lookup shows the order
//     failed; until then it is unknown, Answered2xx). Any other 2xx — a body that
//     does not decode, is too large, or names another client_order_id —
//     means an order exists: the intent is marked Answered2xx, never sent
//     again and never taken as not placed; a lookup tries to read the
//     order, and if it cannot, Place returns an unknown outcome with
//     Answered2xx set. 400/401/403/404/422 is a rejection; 429, 5xx, a
//     timeout or a lost connection is an ambiguous outcome.
//  5. An ambiguous outcome is reconciled: the account's orders created
//     since just before the first send are listed, every page, and matched
//     by client_order_id. Found: acknowledged. Not found: Place waits until
//     every signature the create was sent with has expired, looks again,
//     and only then sends the same bytes with the same client_order_id, up
//     to a small cap. Only a lookup that began after the expiry counts: one
//     that began before may have read its first page before a late create
//     landed, however late it ended. Whatever the venue does with a duplicate
//     client_order_id — return the original, refuse it, or naively create
//     a second order — at most one order exists per key, because a create
//     is never sent while an earlier signature of it could still land.
//
// A lookup that cannot see every order — a page or a row that does not
// decode, a row without client_order_id, a next link that is foreign,
// repeats or vanished (a last page as full as every page before it), the
// page cap — is incomplete and never concludes "not
// found": the outcome stays unknown.
//
// A Place without a key uses a random client_order_id and is sent once:
// its ambiguous outcome is returned as unknown (transport.ErrUnknownOutcome).
//
// # Never re-send
//
// Config.MaxSends 1 forbids every re-send, for a venue whose handling of a
// reused client_order_id, or whose order list, a caller does not trust:
// each intent is sent at most once. An ambiguous outcome is looked up, and
// if the order is not found it stays unknown (transport.ErrUnknownOutcome,
// and Recover reports it unresolved) instead of "not placed", which would
// invite a second create. Where the venue's list lags behind its creates
// longer than the Placer waits, no client can tell "absent" from "not
// listed yet"; with the default cap the Placer trusts a complete lookup
// made after every signature expired, with Config.MaxSends 1 it trusts none.
//
// # Clocks
//
// A signature is valid for signing.ValidFor (30 s) after its timestamp,
// which the transport stamps with its view of the venue's clock. A create
// is taken as unable to land once
//
//	venue now > last signature + 30 s + margin
//	margin    = skew floor (Config.SkewMargin, default 10 s)
//	            + 10 min while the venue's clock offset is not measured
//
// (Place sleeps on the local clock for the difference). A lookup lists
// orders created since
//
//	first signature − (lookback floor (2 min) + |measured offset|,
//	                   or + 10 min while it is not measured)
//
// and a lookup before the first send covers everything a recent create
// could have: since venue now − (30 s + margin + that lookback). The
// offset is the transport's (transport.Client.ClockOffset, learned from
// the Date headers of the venue's answers); until an answer has been
// measured, the margins are the widest.
//
// # Halt
//
// Placer.Halt halts the intent store, durably, for every Placer sharing it
// (for Redis, every process): each refuses a create with Kind ErrHalted
// and nothing sent, within a second, until Placer.Resume. A Placer reads
// the halt record (idempotency.Meta) at most once a second: before it
// records an intent, and again in the send hook, just before a create
// leaves.
//
// # Errors
//
// Every error Place returns falls in one category, matched with
// errors.Is. Each it decides is an *Error, one type whose Kind is the
// sentinel it matches, with the client_order_id, the key, the reason and
// the cause (the others are the caller's: a missing Create.Body, or its
// error).
// No error of this package unwraps to a transport error or any other
// cause from below (it is kept in the Err field, to read; Kind
// idempotency.ErrInProgress unwraps only to the store's refusal, Kind
// transport.ErrNotSent, which sent nothing, to what stopped it, unless
// that was the venue refusing the lookup before the send with a verdict
// that would read as the order's, transport.ErrRejected or ErrNotFound):
// an
// unknown outcome never matches a sentinel that reads "safe to retry",
// such as transport.ErrUnavailable, ErrRateLimited, ErrNotFound or
// transport.ErrRejected.
//
//	Kind (errors.Is)             also matches                 meaning
//	idempotency.ErrInProgress    transport.ErrUnknownOutcome  another holder has the key, or took it
//	                                                          over: Place again later with the same key
//	transport.ErrUnknownOutcome                               may have taken effect: same key later, or
//	                                                          Recover; never a new key
//	transport.ErrRejected                                     the venue said no; nothing is live
//	ErrNotPlaced                                              nothing placed: the same key again is safe
//	transport.ErrNotSent         what stopped it, such as     nothing sent by this call (store or venue
//	                             transport.ErrUnavailable     unavailable, context ended); an earlier
//	                                                          create of the key is not ruled out: Place
//	                                                          again later with the same key only
//	ErrHalted                    transport.ErrNotSent         the store is halted (Placer.Halt): nothing
//	                                                          sent by this call; the same key after Resume
//	transport.ErrInvalidRequest                               the key names another request: refused
//	                                                          offline, nothing sent; the *Error's
//	                                                          State and OrderID say what the key
//	                                                          names (its order may be live)
//
// Check them in this order; treat anything else as unknown:
//
//	f, err := placer.Place(ctx, key, req)
//	switch {
//	case err == nil:
//		// placed: f.Order is the order, as the Codec decoded it
//	case errors.Is(err, idempotency.ErrInProgress):
//		// another Place or Recover (here or in another process) holds it:
//		// Place again later with the same key
//	case errors.Is(err, transport.ErrUnknownOutcome):
//		// it may exist: Place again later with the same key, never a new one
//	case errors.Is(err, transport.ErrRejected):
//		// the venue refused it: nothing is live
//	case errors.Is(err, orders.ErrNotPlaced):
//		// nothing was placed: retrying with the same key is safe
//	case errors.Is(err, transport.ErrNotSent):
//		// nothing was sent this time: retry later with the same key only
//	case errors.Is(err, transport.ErrInvalidRequest):
//		// nothing was sent: the key already names another request (see
//		// the *Error's State and OrderID); it is that request's key
//	default:
//		// treat as unknown
//	}
//
// An in-progress error matches transport.ErrUnknownOutcome too, on
// purpose: from this process the outcome is not known (it may have sent
// before losing its claim), so a bot that checks only
// transport.ErrUnknownOutcome stays safe. Check idempotency.ErrInProgress
// first to tell the two apart.
//
// "Not placed" and "rejected" are said only when known: a lost claim
// (idempotency.ErrClaimLost, inside the send hook or when recording an
// outcome) is in progress (Kind idempotency.ErrInProgress), since another
// process may send the create again. A failure to record an outcome for
// another reason does not change what the venue said: a rejection is still
// a rejection, an order found is still returned, and the intent stays open
// for a later lookup.
//
// # Restarts
//
// Recover, run at start-up, settles every pending or unknown intent left
// by an earlier process by lookup alone: acknowledged, or not placed once
// its signatures have expired and the outcome is recorded. An intent a 2xx
// answered, or any sent intent under Config.MaxSends 1, is never taken as
// not placed; those left open are reported unresolved, one by one, to
// the caller (package broker gathers them in its RecoverReport). It never
// places anything.
//
// The intents of one symbol share their lookups. Each intent's window
// runs from its first signature less the lookback (or, never sent, as far
// back as a recent create could reach) to now; all end at now, so the
// widest holds every other, and one read of it, matched against every
// open client_order_id, answers each as its own lookup would: an order
// with the intent's client_order_id is its order wherever it lies, and a
// read that saw every order of the widest window saw every order of each
// narrower one. A read that could not see every order concludes "not
// found" for no intent at all; as a narrower window holds no more orders
// than a wider, Recover then bisects the windows for the widest that
// reads whole (1 + ⌈log₂ n⌉ reads for n windows), so that one old intent
// beyond the page cap does not hold back the recent ones. Intents not
// found by a read that began before their signatures expired wait for the
// last of those expiries and are read for once more, together. The
// requests Recover sends so depend on how many orders the venue lists in
// the window, not on how many intents are open: two reads of the window,
// at most, when it reads whole. Each intent is still locked, claimed in
// the store (the claim renewed before each further read) and recorded on
// its own.
package orders
