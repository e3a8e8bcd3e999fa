// Package orders places orders so that a bot may call Place again after any
// failure — a 429, a 5xx, a timeout, a crash, a restart — and end with
// exactly one order, or a clear statement that it cannot know yet.
//
// # How Place stays idempotent
//
// The transport never sends a POST twice. Place sits above it and is the
// only code that may send a create again, and only when it is safe:
//
//  1. The request is validated offline; the client_order_id is derived
//     from the caller's idempotency key (package idempotency), and the
//     create's body bytes are built once.
//  2. The intent is recorded durably (pending, with a fingerprint of the
//     request) before anything is sent; the time of every signature is
//     recorded before that signature leaves (transport.Client.Send).
//  3. The create is sent once. A 2xx is acknowledged (a 2xx in state
//     failed is a rejection); 400/401/403/404/422 is a rejection; 429, 5xx,
//     a timeout or a lost connection is an unknown outcome.
//  4. An unknown outcome is reconciled: the account's orders created since
//     just before the first send are listed, every page, and matched by
//     client_order_id. Found: acknowledged. Not found: Place waits until
//     every signature the create was sent with has expired (its time + 30 s
//     + a skew margin, on the injected clock), looks again, and only then
//     sends the same bytes with the same client_order_id, up to a small
//     cap. Whatever the venue does with a duplicate client_order_id —
//     return the original, refuse it, or naively create a second order —
//     at most one order exists per key, because a create is never sent
//     while an earlier signature of it could still land.
//
// A Place without a key uses a random client_order_id and is sent once:
// its unknown outcome is returned as an *UnknownOutcomeError.
//
// # Restarts
//
// Recover, run at start-up, settles every pending or unknown intent left
// by an earlier process by lookup alone: acknowledged, or not placed once
// its signatures have expired. It never places anything.
package orders
