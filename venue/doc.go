// Package venue is a simulated Robinhood Crypto Trading API venue, v1 and
// v2, for tests, simulations and a sandbox. It authenticates every request
// with Ed25519 exactly as the real one does, rate-limits per account,
// validates orders strictly, fills them against seeded, deterministic
// prices, and misbehaves on request. Package broker/brokertest wraps it as
// a test double, as net/http/httptest wraps a handler.
//
// It is an independent oracle: it imports none of tradewire's client code
// (signing, transport, orders, idempotency, broker, internal/wire) and
// nothing of tradewire outside venue/: its HTTP/2 front is its own
// (venue/internal/h2front). It checks signatures with crypto/ed25519
// directly, so a bug shared with the client cannot pass on both sides. A
// test enforces it, for the venue's tests too.
//
// # Serving
//
// New builds a Venue from a Config whose zero value is the demo venue. A
// Venue is an http.Handler; Serve serves it on a listener, over HTTP/1.1
// or over TLS with HTTP/2 as the real venue is served, minting a
// certificate authority a client trusts (Server.CACertPEM). Only there do
// the HTTP/2 stream faults end a stream rather than the connection.
//
//	v, err := venue.New(venue.Config{Seed: 1, Faults: venue.FaultPlan{Duplicate: venue.CreateSecond}})
//	ln, err := net.Listen("tcp", "127.0.0.1:0")
//	srv := v.Serve(ln, true)
//	defer srv.Close()
//	// point a client at srv.URL, trusting srv.CACertPEM, signing with
//	// v.Config().APIKey and v.Config().PrivateKey
//
// # Behaviour
//
// Every request must carry x-api-key, x-timestamp and x-signature; a
// missing header answers 400 text/plain. The signature is verified over
// api_key + timestamp + request-target (as received) + METHOD + body; an
// unknown key, a bad signature or a timestamp more than signatureWindow
// from the venue's now answers 401. All but the signature is judged on
// the headers before a byte of the body is read, so a request refused on
// them is answered without its body being read. A body is read up to
// 64 KiB (a create is a few hundred bytes): a larger one, declared in
// Content-Length or found, answers 413 client_error without being read
// further, and one not received in time (the server's read timeout)
// answers 408. Each account then has a token bucket
// (Config.RateLimits.Account; default 100 a minute in bursts of 300, the
// real venue's budget) on the venue's clock, shared by every endpoint; an empty bucket
// answers 429 "Request was throttled.", without Retry-After, as the real
// venue's 429s come.
//
// The vendor also says its limits are "applied per endpoint and may differ
// among each endpoint", with values that "fluctuate depending on the
// availability of our service". Config.RateLimits models that (see
// RateLimits): the endpoint classes market_data (best_bid_ask,
// estimated_price, trading_pairs), account_reads (accounts, holdings),
// order_reads (the orders list and one order) and order_writes (creates and
// cancels), v1 and v2 paths alike, may each have a bucket of their own per
// account; a schedule lowers and restores buckets at given times after the
// venue starts, on its clock; and a 429 may carry a Retry-After computed
// from the bucket or fixed. Each Ledger row names its request's class
// (Request.Class), so a test can count the 429s and the requests served
// per class in each phase of the schedule. ParseRateLimits reads the JSON
// form, the file the CLI's sim serve --rate-limits takes:
//
//	{
//	  "account": {"per_minute": 100, "burst": 300},
//	  "classes": {"market_data": {"per_minute": 300, "burst": 300},
//	              "order_writes": {"per_minute": 100, "burst": 300}},
//	  "schedule": [{"at": "10m", "class": "order_writes", "per_minute": 20, "burst": 20},
//	               {"at": "20m", "class": "order_writes", "per_minute": 100, "burst": 300}],
//	  "retry_after": "bucket"
//	}
//
// at is a Go duration after the venue's start; a step without class
// changes the account-wide bucket; retry_after is off (the default),
// bucket or whole seconds such as "5s". Unknown fields are an error.
//
// Prices are a pure function of (Config.Seed, symbol, whole second of the
// venue's clock), so two venues with one seed quote the same prices at the
// same time. Each pair's book has depth: 50 seeded levels a side, each a
// little further from the best bid or ask and larger than the one before
// (the top level holds about $150k of BTC-USD, $100k of ETH-USD, a few
// thousand dollars of the thinner pairs), the last taking whatever is
// left. A market order fills at once at the average price of the levels
// its size takes, on the quote increment rounded against it; an estimated
// price is that same average for its quantity, so a bigger quantity gets
// a worse price, and a size within the top level the best ask (buy) or bid
// (sell) itself. Limit orders fill when the market crosses, in seeded
// chunks, from the levels within their limit only; stop orders trigger on
// crossing. Now and then the book misbehaves, as the live one does, seeded
// and deterministic: about one second in 900 per pair it is crossed (the
// bid above the ask; best_bid_ask sends it so and orders fill against it),
// and about every hour a pair's book goes stale for 3 to 15 s (it keeps
// the prices and the timestamp of the second it froze at). A create the
// account cannot cover is accepted (201) with state "failed".
//
// The catalogue is 42 USD pairs, at most 20 a page of trading_pairs:
// BTC-USD, DOGE-USD, ETH-USD and SOL-USD (the pairs seeded history
// trades) and others, some "untradable" or "sellonly" (a create on an
// untradable pair, or a buy on a sell-only one, answers 400
// validation_error on attr symbol, "Trading pair is untradable: SYM" or
// "Trading pair is sell only: SYM"), some without min_order_amount (no
// minimum). The vendor documents the statuses but no answer for them.
//
// Fees follow a tier table: fee_ratio 0.0095 below a 30-day volume of
// 50000 USD, 0.0085 from 50000, 0.006 from 250000, 0.004 from 1000000. The
// 30-day volume is the account's filled notional on the day and the 29
// UTC days before, plus the volume it started with (Config.ThirtyDayVolume) for 30
// days from the venue's start. accounts reports the tier in force and the
// next (null at the top); each fill pays the tier in force when it fills,
// so the fill that crosses a threshold pays the old one. fee_charged is
// the sum over the fills.
//
// Config.AccountStatus and ReadOnly set the account's status and key. A "sell_only" account's
// buys answer 400 validation_error "Account is sell only." on attr side; a
// "deactivated" account's creates answer 403 client_error "Account is
// deactivated." (its reads and cancels work); a read-only key's creates
// and cancels answer 403 client_error "You do not have permission to
// perform this action.", the answer the venue gives for another
// account's number. The vendor names the statuses and a 403 for a key
// without trade scope, but documents neither answer.
//
// Timestamps take the forms of the live captures: an order's created_at,
// updated_at and execution timestamps are in US Eastern time with its
// offset and microseconds ("2026-08-20T13:26:18.409035-04:00"; -05:00 in
// winter, by the rule in force since 2007); best_bid_ask and
// estimated_price timestamps in UTC with "Z" and nanoseconds
// ("2026-08-19T19:20:41.579217945Z"). A client must read both. A cancel answers the order still open and settles
// to "canceled" a second later. Limit, stop_loss and stop_limit orders take
// the time_in_force values the vendor documents (market orders none): gtc
// (the default) stays open until it fills or is canceled; gfd, gfw and gfm
// end at the end of the day, week or month on the venue's clock. The
// vendor names no time zone, so the venue takes UTC calendar boundaries:
// the next 00:00 UTC, the next Monday 00:00 UTC (weeks run Monday to
// Sunday), the first of the next month 00:00 UTC. At that instant the order
// stops filling and ends "canceled", keeping any fills, with updated_at at
// the expiry. Stop configs echo time_in_force, as the spec's order schema
// does; limit configs do not, as the live capture of a gtc limit order
// does not. Config decimals may be sent as decimal strings (as the
// vendor's samples do) or as JSON numbers (as its spec types them).
// Validation is otherwise strict on purpose: unknown body fields, decimal
// strings in exponent form, amounts off the pair's increments and orders
// outside max_order_size/min_order_amount are all 400 validation_error
// with the offending attr; so are an estimated price for more than the
// pair's max_order_size (attr quantity), a trading_pairs symbol the venue
// does not list ("Select a valid choice.", attr symbol) and a holdings or
// orders list without the account_number the spec requires ("This field
// is required.", attr account_number).
//
// Listings (accounts, trading_pairs, holdings, orders) page as the real
// venue's do: {"next", "previous", "results"}, with absolute links that
// keep every parameter. limit sets a page's size (default Config.PageSize),
// an integer from 1 to 1000 (or the page size, if larger: the spec leaves
// the maximum to the venue's configuration); any other value is a 400
// validation_error naming limit. The v2 spec documents limit on every
// listing but the orders list, and v1's on its orders list; the venue
// honours it on all. Every page after the first has a previous link, and
// following previous links from the last page reads the same pages back;
// orders pages are read by key either way, so they stay stable while
// orders arrive (a page read backwards toward new orders may be short, as
// a Django REST framework cursor page is). A cursor the venue did not
// issue is a 404.
//
// # v1 and v2
//
// The venue serves every operation of the vendor's OpenAPI document under
// /api/v2/ and under /api/v1/, plus GET .../orders/{id}/ under both, which
// the document lacks and the vendor's samples call. Both versions are one
// venue: one book, one set of accounts, one token bucket per account, one
// signature check (over the path as sent), one client_order_id key per
// account, so an order placed through either is seen, listed and canceled
// through both. Faults and the Ledger see v1 paths as they see v2's: a
// fault's path matches the version it names.
//
// A v1 request is answered by its v2 sibling and written in v1's shapes,
// as the vendor's spec gives them: GET accounts/ is a single object
// (account_number, status, buying_power, buying_power_currency); there
// are no fees anywhere (no fee_tier_status, fee_ratio, fee_charged,
// estimated_fee_remaining); v1 takes no account_number (holdings and
// the orders list need none; one that is sent must be the key's own, as
// on v2, or the answer is 403); orders carry filled_asset_quantity and
// their config values as JSON numbers (executions stay strings); the
// estimated price lives at /api/v1/crypto/marketdata/estimated_price/; a
// cancel answers 200 text/plain "Cancel request was submitted for order
// {id}". Errors are the same envelope in both versions. Where the spec is
// silent the venue does as v2 does, and:
//
//   - best_bid_ask and estimated_price give price, the midpoint of the
//     bid and ask (for an estimate: of those estimated for that quantity),
//     bid_inclusive_of_sell_spread and ask_inclusive_of_buy_spread (v2's
//     bid and ask), and sell_spread = (price - bid) / price and buy_spread
//     = (ask - price) / price, ratios like fee_ratio rounded to 10 digits,
//     negative when the book is crossed. They are JSON numbers, as the spec
//     types them. An estimate row carries its own side only.
//   - trading_pairs gives min_order_size, which v1's TradingPair declares:
//     the venue's minimum is a quote amount (v2's min_order_amount), which
//     it applies to v1 orders too, so min_order_size is the least multiple
//     of asset_increment worth min_order_amount at the pair's bid of the
//     second answered (asset_increment for a pair without a minimum). A
//     limit order is judged at its limit price, so one priced below the
//     bid needs more.
//   - A create takes the same body as on v2 (time_in_force included) and is
//     validated the same way.
//
// # Time
//
// Everything the venue does happens lazily on requests, measured on its
// clock (Config.Clock; default the real clock): price moves, fills, the ~1 s
// cancel settlement, the token buckets and their schedule, the 30 s
// signature window and injected latency. Nothing runs in the background.
//
// A resting order is evaluated against the market of each second from its
// creation on, and fills (or triggers) at the first second its price
// allows. Prices are a pure function of the seed, the symbol and the
// second, so the venue knows ahead, from bounds on the price, when an
// order cannot act; a request looks only at the orders that may act by its
// now. Its cost does not grow with the number of orders the venue holds
// (BenchmarkVenueCost).
//
// For a simulation test, share one Clock (NewClock) between the venue and
// the client, and drive it with the usual clockwork idiom: waits cost no
// wall time, and the test's advancing never times out a request in
// flight, because Clock.BlockUntilContext counts waits (timers, sleeps)
// but not bounds (the client's per-attempt timeout, a context deadline):
//
//	clk := venue.NewClock(start)
//	srv, _ := brokertest.New(venue.Config{Clock: clk})
//	client, _ := broker.New(broker.Config{APIKey: srv.APIKey, PrivateKey: key, BaseURL: srv.URL,
//		Transport: transport.Config{RoundTripper: srv.Transport(), Clock: clk}})
//	ctx, cancel := venue.WithTimeout(t.Context(), clk, time.Minute)
//	defer cancel()
//	go func() {
//		for clk.BlockUntilContext(ctx, 1) == nil { // n: how many goroutines wait
//			clk.Advance(100 * time.Millisecond)
//		}
//	}()
//	runBot(ctx, client, clk)
//
// A clockwork.FakeClock counts the per-attempt timeout as a waiter, so the
// same idiom on it moves the time while a request runs and times the
// request out (the error says so and names NewClock). Give a context a
// deadline on the clock with WithTimeout, not context.WithTimeout (a wall
// clock deadline compared with the fake clock's now) nor
// clockwork.WithTimeout (wall clock for any clock but its FakeClock, and
// its context's Err blocks until it is done). Inside a testing/synctest
// bubble, New with the real clock (the default) works as it is: the
// bubble's fake time drives everything.
//
// # Faults
//
// A FaultPlan is everything the venue does wrong: Config.Faults sets it up
// from the start, and Venue.SetFaultPlan changes a running Venue by it. A Fault scripts the next N
// matching requests: a canned status ("respond"), a committed create
// whose answer is lost ("lose_response": 429, 500, 502, 503, 504 or a
// dropped connection), latency on the venue's clock ("latency"), a
// redirect to another host ("redirect") or a "next" link to another
// host ("foreign_next"). A Mix adds a seeded random mix of 429s, 5xx,
// lost responses and latency for simulation runs. Some faults commit a
// create and then lie about it: a 2xx with a body cut short
// ("truncated_body"), with another order's JSON ("other_order_body") or
// under another client_order_id ("wrong_client_order_id"); or an HTTP/2
// stream ended after the commit with RST_STREAM REFUSED_STREAM
// ("refused_stream"), RST_STREAM PROTOCOL_ERROR ("protocol_error") or a
// GOAWAY that claims the request unprocessed ("goaway"), which Go's
// HTTP/2 client would replay by itself if the request let it. A plan's
// DuplicateMode picks what a reused client_order_id does: ReturnOriginal
// (the default), Reject400 or CreateSecond (the dangerous venue):
//
//	v, err := venue.New(venue.Config{Clock: clk, Faults: venue.FaultPlan{
//		Duplicate: venue.CreateSecond,
//		Faults: []venue.Fault{{Kind: "lose_response",
//			Method: "POST", Path: "/api/v2/crypto/trading/orders/", Status: 503}},
//	}})
//
// ParseFaultPlan reads the JSON form, the file the CLI's --faults flag
// takes:
//
//	{
//	  "faults": [
//	    {"kind": "respond", "method": "GET", "path": "/api/v2/crypto/trading/accounts/",
//	     "times": 2, "status": 503, "headers": {"Retry-After": "1"}, "body": "..."},
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
//	  "hostile": {"clock_offset": "-3m", "list_lag": "90s", "omit_client_order_id": 0.5, "drop_next": 1}
//	}
//
// kind is one of respond, lose_response, latency, redirect, foreign_next,
// truncated_body, other_order_body, wrong_client_order_id, refused_stream,
// protocol_error and goaway; path is a prefix, or a path.Match pattern when
// it holds '*', '?' or '['; times defaults to 1; lose_response with status 0
// drops the connection; duplicate is return_original, reject or
// create_second; in hostile, clock_offset and list_lag are Go durations
// (clock_offset negative when the venue is behind) and
// omit_client_order_id and drop_next fractions in [0, 1]. Unknown fields
// are an error, so a typo cannot silently disable a fault.
//
// # Hostile modes
//
// A hostile venue does not share the client's assumptions, for as long as
// a plan's Hostile sets it: ClockOffset moves the venue's own now ahead or
// behind its clock, for the 30 s signature window, the timestamps it
// writes, the ledger's times and the Date header it sets on every answer;
// ListLag makes the orders list show each order as it was the lag ago
// (not at all if younger), so its fills and state changes appear there
// late (GET .../orders/{id}/ shows it as it is); OmitClientOrderID drops
// client_order_id from some or all list rows; DropNext nulls the "next"
// link of some or all list pages that should have one.
//
// # Assertions
//
// Ledger records every request (venue time, method, request-target,
// x-timestamp, signature validity, status, fault) and every order created,
// so a test can assert that a client left exactly one order per
// client_order_id. Its counts and per-client_order_id answers are exact;
// Config.LedgerLimit bounds the requests it keeps to the most recent:
//
//	if dups := v.Ledger().DuplicateClientIDs(); len(dups) > 0 {
//		t.Fatalf("orders placed twice: %v", dups)
//	}
//
// # History
//
// Config.History seeds that many orders over the last 30 days (filled, partly filled
// then canceled, canceled, failed, open). Config.BulkOrders adds that many final
// orders generated on demand from their index, for pagination and fee-sweep
// benchmarks at any size.
//
// # Orders placed elsewhere
//
// Venue.PlaceExternal places an order in the account as another tool
// would, with a client_order_id of that tool's (a create's JSON body; with
// no client_order_id, one drawn from the seed), at the venue's now: a
// test of a watch or a reconciler places one between two polls and checks
// that it is reported as external, never confused with the client's own.
// It sends no request; the Ledger's orders hold it with External set.
//
// A Venue is safe for concurrent use.
package venue
