// Package broker is the facade bots and batch scripts import to talk to the
// Robinhood Crypto Trading API v2: the account and its fee tier, holdings,
// trading pairs, best bid/ask, estimated prices, orders, cancels, fee
// summaries and order previews.
//
// Build a Client with New from explicit credentials or the environment:
//
//	c, err := broker.New(broker.WithEnv(os.Getenv))
//
// reads TRADEWIRE_API_KEY, TRADEWIRE_PRIVATE_KEY (base64) or
// TRADEWIRE_PRIVATE_KEY_FILE, and TRADEWIRE_BASE_URL (default
// https://trading.robinhood.com). Explicit options (WithCredentials,
// WithSigner, WithBaseURL) win over the environment; New reads no
// environment unless told to. Every call takes a context.
//
// Listings (Holdings, TradingPairs, Orders) are Go iterators that fetch
// pages lazily and hold one page at a time; Collect reads a whole listing.
// A next link is followed only on the base URL's scheme and host, a
// repeated link fails with ErrRepeatedCursor, and a listing longer than the
// page cap (DefaultPageCap, WithPageCap, MaxPages) fails with a
// *PageCapError: a list is never silently partial.
//
// Money and quantities are decimal.Decimal, decoded from quoted strings or
// bare JSON numbers without passing through float64. Values the venue may
// send as null are decimal.NullDecimal. Order states, types and sides the
// package does not know are kept as sent. What is sent is bounded: a
// decimal has at most 18 decimal places and 20 digits before the point,
// and an OrderFilter takes only the states, types and sides named here;
// anything else is an *ArgumentError before a request is made.
//
// # Retries
//
// Every request goes through package transport: each attempt waits on a
// token bucket (default 100 a minute, bursts of 300, the venue's budget),
// is signed afresh, and sends the same bytes. GETs are retried on 429, 500,
// 502, 503, 504 and failures below HTTP, with capped exponential backoff
// (WithRetryPolicy; the zero policy makes one attempt). Writes — a cancel
// here — are sent once and never retried. All waits run on the injected
// clock (WithClock) and end at once when the context does.
//
// # Idempotency
//
// This package places no orders: package orders does, with orders.Placer,
// which derives the client_order_id from the caller's idempotency key,
// records the intent durably before the first send, and looks the order up
// before any resend. Give it this client's transport (Client.Transport) so
// that reads and creates share one rate budget:
//
//	p, err := orders.New(c.Transport(), store, acct.AccountNumber)
//
// Order values from both packages are the same type. CancelOrder is safe
// to repeat: a second cancel of a final order is a *CancelRejectedError.
// With WithRedisURL, every process of a fleet shares one rate budget.
//
// # Errors
//
// Arguments are checked before anything is sent: a refusal is an
// *ArgumentError naming the field, matching transport.ErrInvalidRequest.
// The venue's answers arrive as package transport's errors — a
// *transport.StatusError carries the status and the venue's error envelope
// with its field paths (or the plain-text body, bounded) — and errors.Is
// works with transport.ErrNotFound, ErrRejected, ErrCredentials,
// ErrRateLimited, ErrUnavailable and ErrUnknownOutcome. This package adds
// ErrNoSuchOrder (a 404 for an order id), *CancelRejectedError (the
// venue's detail on a refused cancel), *PageCapError, ErrRepeatedCursor,
// ErrUnknownSymbol, ErrAccount and *DecodeError.
//
// # Testing
//
// Point a Client at an httptest server on a loopback address with
// WithBaseURL (http is allowed only for loopback), or at the simulated
// venue in package brokertest with WithRoundTripper and its in-memory
// transport. Use a clockwork.FakeClock with WithClock so that rate-limit
// waits, backoff and fee-summary windows are deterministic and no test
// sleeps. The in-memory venue also runs inside a testing/synctest bubble on
// the real clock, where time is virtual: that is how a long fee sweep is
// timed against the rate budget.
package broker
