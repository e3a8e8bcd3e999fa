// Package venue is tradewire's simulated Robinhood Crypto Trading API v2:
// an independent oracle that authenticates, rate-limits, validates, matches
// and misbehaves like the real venue, served as an http.Handler.
//
// It imports nothing from tradewire's client side (signing, transport,
// orders, broker), so a bug shared with the client cannot pass on both
// sides: signatures are checked here with crypto/ed25519 directly.
//
// # Behaviour
//
// Every request must carry x-api-key, x-timestamp and x-signature; a
// missing header answers 400 text/plain. The signature is verified over
// api_key + timestamp + request-target (as received) + METHOD + body; an
// unknown key, a bad signature or a timestamp more than SignatureWindow
// from the venue's clock answers 401. Each account then has a token bucket
// (RatePerMinute sustained, Burst) on the venue's clock; an empty bucket
// answers 429 "Request was throttled.".
//
// Prices are a pure function of (Seed, symbol, whole second of the venue's
// clock), so two venues with one seed quote the same prices at the same
// time. Market orders fill at once at the ask (buy) or bid (sell); limit
// orders fill when the market crosses, in seeded chunks unless
// NoPartialFills; stop orders trigger on crossing. fee_charged is the
// account's fee_ratio times the filled notional. A create the account cannot
// cover is accepted (201) with state "failed". A cancel answers the order
// still open and settles to "canceled" CancelDelay later. All of this is
// evaluated lazily whenever a request arrives: there are no goroutines or
// timers, so a clockwork.FakeClock drives everything.
//
// Validation is strict on purpose: unknown body fields, decimals sent as
// JSON numbers or in exponent form, amounts off the pair's increments and
// orders outside max_order_size/min_order_amount are all 400
// validation_error with the offending attr.
//
// # Faults
//
// Inject scripts Faults: the next Times requests matching Method and Path
// get a canned answer, a lost response after the create is committed
// (500/503, or a dropped connection), latency on the venue's clock, a
// redirect to another host, or a "next" link to another host. SetMix adds a
// seeded random mix of 429s, 5xx, lost responses and latency.
// SetDuplicateMode picks what a reused client_order_id does.
//
// Some faults commit a create and then lie about it: truncated_body,
// other_order_body and wrong_client_order_id answer the 2xx with a body cut
// in half, with another order's JSON, or with the new order under another
// client_order_id; refused_stream, protocol_error and goaway end the HTTP/2
// stream after the commit with RST_STREAM REFUSED_STREAM, RST_STREAM
// PROTOCOL_ERROR or a GOAWAY that claims the request unprocessed (through
// Config.StreamAbort, which a frame-level server provides; without one they
// drop the connection, as lose_response status 0 does).
//
// # Hostile modes
//
// Hostile (Config.Hostile, SetHostile, or a fault plan's "hostile") makes
// the venue disagree with the client's assumptions for as long as it is
// set: ClockOffset moves the venue's own now (the signature window, every
// timestamp it writes, the ledger's times, and the Date header, which the
// venue sets from its own clock on every answer it gives, whatever the
// server underneath would write); ListLag hides orders younger than the
// lag from the orders list while GET .../orders/{id}/ shows them at once;
// OmitClientOrderID drops the client_order_id field from that fraction of
// the orders' list rows (the same orders on every list); DropNext nulls the
// "next" link of that fraction of the list pages that should have one.
//
// A fault plan file (for the CLI's --faults FILE) is JSON:
//
//	{
//	  "faults": [
//	    {"kind": "respond", "method": "GET", "path": "/api/v2/crypto/trading/accounts/",
//	     "times": 2, "status": 503, "headers": {"Retry-After": "1"},
//	     "body": "{\"type\":\"server_error\",\"errors\":[{\"detail\":\"down\",\"attr\":null}]}"},
//	    {"kind": "lose_response", "method": "POST", "path": "/api/v2/crypto/trading/orders/", "status": 0},
//	    {"kind": "latency", "path": "/api/v2/crypto/marketdata/*/", "delay": "1.5s", "times": 3},
//	    {"kind": "latency", "method": "POST", "path": "/api/v2/crypto/trading/orders/", "delay": "15s", "after_commit": true},
//	    {"kind": "redirect", "status": 302, "location": "https://elsewhere.example"},
//	    {"kind": "foreign_next", "path": "/api/v2/crypto/trading/orders/", "location": "https://evil.example"},
//	    {"kind": "truncated_body", "method": "POST", "path": "/api/v2/crypto/trading/orders/"},
//	    {"kind": "refused_stream", "method": "POST", "path": "/api/v2/crypto/trading/orders/", "times": 3}
//	  ],
//	  "mix": {"seed": 7, "rate_429": 0.05, "rate_5xx": 0.02, "rate_lost": 0.01,
//	          "rate_latency": 0.1, "latency": "250ms"},
//	  "duplicate": "create_second",
//	  "hostile": {"clock_offset": "-3m", "list_lag": "90s",
//	              "omit_client_order_id": 0.5, "drop_next": 1}
//	}
//
// kind is one of respond, lose_response, latency, redirect, foreign_next,
// truncated_body, other_order_body, wrong_client_order_id, refused_stream,
// protocol_error, goaway;
// path is a prefix, or a path.Match pattern when it holds '*', '?' or '[';
// times defaults to 1; lose_response status 0 drops the connection;
// duplicate is return_original, reject or create_second; in hostile,
// clock_offset and list_lag are Go durations (clock_offset negative when
// the venue is behind) and omit_client_order_id and drop_next fractions in
// [0, 1]. ParseFaultPlan
// reads it (unknown fields are an error) and Apply installs it.
//
// # Ledger
//
// Ledger records every request (time, method, request-target, x-timestamp,
// whether the signature was valid, status, fault) and every order created
// through the API, so tests can assert "exactly one order per
// client_order_id" with OrdersByClientID or DuplicateClientIDs.
//
// A Venue is safe for concurrent use.
package venue
