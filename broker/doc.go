// Package broker is the facade bots and batch scripts import to talk to the
// Robinhood Crypto Trading API v2: the account and its fee tier, holdings,
// trading pairs, best bid/ask, estimated prices, orders, fee summaries and
// order previews, and placing, looking up, canceling, recovering and
// watching orders, risk limits and a kill switch. A bot needs no other
// tradewire package.
//
// Build a Client with New from a Config: explicit credentials or the
// environment:
//
//	c, err := broker.New(broker.Config{Getenv: os.Getenv})
//
// reads TRADEWIRE_API_KEY, TRADEWIRE_PRIVATE_KEY (base64) or
// TRADEWIRE_PRIVATE_KEY_FILE, and TRADEWIRE_BASE_URL (default
// https://trading.robinhood.com). Fields set explicitly (APIKey and
// PrivateKey, BaseURL) win over the environment; New reads no environment
// unless Getenv is set. Every call takes a context. Each zero field of a
// Config is its default, documented on the field.
//
// The lower packages' settings have one field each: Config.Transport
// (package transport: clock, rate limit, retry policy, limiter, attempt
// timeout) and Config.Orders (package orders: namespace, send cap):
//
//	c, err := broker.New(broker.Config{Getenv: os.Getenv,
//		Transport: transport.Config{RatePerMinute: 50, Burst: 100},
//		Orders:    orders.Config{Namespace: "momentum"}})
//
// The Client runs on its transport's clock. A bot that needs neither
// imports broker alone.
//
// Listings (Holdings, TradingPairs, Orders) are Go iterators that fetch
// pages lazily and hold one page at a time; Collect reads a whole listing.
// A next link is followed only on the base URL's scheme and host, a
// repeated link fails rather than loop, and a listing longer than the
// page cap (Config.PageCap, default 20; Paging.MaxPages) fails with a
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
// (transport.Config.Retry, in Config.Transport; the zero
// policy makes one attempt). Writes — creates and cancels — are sent once
// by the transport and never retried there; only Place may send a create
// again, after a lookup (# Idempotency).
// All waits run on the injected clock (Config.Transport.Clock) and end at once when the
// context does.
//
// # Idempotency
//
// Place(ctx, key, req) places an OrderRequest once per key, whatever
// fails in between: it derives the client_order_id from the account, the
// namespace (Config.Orders.Namespace) and the key (ClientOrderID), records
// the intent durably before the first send, and never sends a create again
// unless a lookup has shown it absent after every signature it was sent
// with expired (the engine is package orders; Config.Orders configures
// it, such as MaxSends 1 to forbid re-sends). Preview and
// Place refuse the same requests offline.
//
// Intents go to Config.IntentStore, the bolt file of
// Config.IntentStoreFile, the fleet's Redis of Config.RedisURL, or else the
// file at idempotency.DefaultPath(). The store is opened on the first
// Place, Recover, OrderByKey or Intent: a Client that only reads never
// opens or locks it. Close closes what the Client opened. Several Clients
// may share one store (Config.IntentStore): the store's claim lets one Place
// or Recover work on a key at a time, and any other is told
// ErrInProgress. OrderByKey finds an order again
// (the store first, then the venue's orders list); Intent reads the store
// alone. CancelOrder is the one cancel, safe to repeat: a second cancel of
// a final order matches ErrRejected. With Config.RedisURL, every process of
// a fleet shares one rate budget and one intent store.
//
// # Restarts
//
// A restarted bot calls Recover once, which settles by lookup what an
// earlier process left open and places nothing. Then, for each job it may
// have placed, it calls Place with the same key and the same request (the
// order comes back, or the key is settled first), or asks Intent, which
// answers from the store alone. A bot that re-derives its request (a
// fresh quote) and places the same key gets ErrInvalidRequest naming what
// the key already holds (*orders.Error's State and OrderID): its order,
// which may be live; a rejection or nothing, after which the job is not
// placed; or an unsettled create, for Recover to settle. Placing that job
// under a new key while its order may be live places a second order.
//
// # Watching orders
//
// The venue has no order stream. WaitFinal reads one order until it is
// filled, canceled or failed, on the Client's clock, and returns it (or,
// when ctx ends first, the last order read and ctx's error):
//
//	if _, err := c.CancelOrder(ctx, o.ID); err != nil { ... }
//	final, err := c.WaitFinal(ctx, o.ID)
//
// Watch yields the changes of the account's orders as Events (created,
// partially filled, filled, canceled, failed; with the fill since the
// order's last event, its Intent in the store, or External for an order
// the store did not place), polling the orders list by updated_at with an
// overlap, on the Client's transport and rate budget:
//
//	for ev, err := range c.Watch(ctx, broker.WatchConfig{}) {
//		if err != nil {
//			continue // a failed poll: the watch polls again
//		}
//		if ev.Order.ID == o.ID && ev.Order.State.Final() {
//			break // the cursor is saved in the intent store
//		}
//	}
//
// It misses no order's final state or cumulative fill, and reports no
// change twice, across a clean stop and restart with the same
// WatchConfig.Name and store. After a crash it yields again the changes
// since its last save, each with the same Event.ID, for the consumer to
// skip. This rests on the venue's updated_at (every change moves it) and
// on its list's lag: an update the list shows more than
// WatchConfig.Overlap (30 s) after its updated_at can be missed.
//
// # Kill switch
//
// Halt stops every create made through the intent store — by every
// goroutine and Client of the process, and with a fleet's Redis by every
// process — within a second, durably (a restart keeps it halted), and
// then cancels every open order of the account, paging through the
// orders list within the rate budget; its *HaltReport says what it
// canceled and what stayed open. A refused Place sends nothing and
// matches ErrHalted (and ErrNotSent: the same key later). Resume lifts
// it. The Placer reads the halt record at most once a second, and again
// just before each create leaves.
//
// # Errors
//
// Every error a bot branches on is named here, matched with errors.Is
// (the values are package orders' and transport's, so either spelling
// matches). For Place, check them in this order and treat anything else
// as unknown:
//
//	o, err := c.Place(ctx, key, req)
//	switch {
//	case err == nil: // placed: o is the order
//	case errors.Is(err, broker.ErrRecordedOrder): // placed; o is the recorded copy
//	case errors.Is(err, broker.ErrInProgress): // another holder: same key later
//	case errors.Is(err, broker.ErrUnknownOutcome): // may exist: same key later, or Recover
//	case errors.Is(err, broker.ErrRejected): // the venue said no: nothing is live
//	case errors.Is(err, broker.ErrNotPlaced): // nothing placed: same key is safe
//	case errors.Is(err, broker.ErrNotSent): // nothing sent now (ErrHalted too): same key later only
//	case errors.Is(err, broker.ErrInvalidRequest): // refused offline (# Restarts, # Limits)
//	default: // treat as unknown
//	}
//
// The sentinels are all a bot needs. Behind them is one type,
// *orders.Error, whose Kind is the sentinel it matches and whose message
// names the client_order_id (ClientOrderID(key) gives it too), the reason
// and the cause; with ErrRecordedOrder, Place returns the recorded order.
//
// Arguments are checked before anything is sent: a refusal is an
// *ArgumentError naming the field, matching ErrInvalidRequest. The
// venue's answers arrive as package transport's errors — a
// *transport.StatusError carries the status and the venue's error envelope
// with its field paths — and errors.Is works with transport.ErrNotFound,
// ErrRejected, ErrCredentials, ErrRateLimited, ErrUnavailable and
// ErrUnknownOutcome; a refused cancel matches ErrRejected and wraps the
// venue's *transport.StatusError with its words. This package adds
// ErrNoSuchOrder (a 404 for an order id, or no order for a key's
// client_order_id from OrderByKey), *PageCapError, ErrUnknownSymbol and
// ErrAccount; a 2xx answer that does not decode is an error naming its
// path.
//
// # Limits
//
// Config.Limits sets risk limits (see Limits; zero is none). Place
// refuses an order that breaks one with a *LimitError, matching
// ErrInvalidRequest, whose Limit, Value and Setting say which limit, what
// was judged and the limit's setting; the order was not placed and
// nothing was sent for it. LimitDenials counts the refusals. Preview
// reports the same limits as Violations, Code being the limit's name.
//
// The per-order limits (Symbols, MaxOrderNotional, MaxOrderQuantity) are
// judged before the intent store is touched: a refusal reads nothing but,
// for a market order under a notional limit, the venue's estimated price
// for its quantity; with a key, the store is then read (and the account,
// unless known) so that a key already sent is answered as it was, never
// refused as "not placed". The account's limits (MaxDailyNotional,
// MaxOpenOrders) are judged once the intent is recorded pending and
// before its create is sent, counted from the intent store, so they hold
// across every Client and process sharing it (the fleet's Redis); a
// refused intent is settled as not placed. Because each Place records
// its intent before it counts, of two Places that only one fits, at least
// one sees the other and is refused; both may be, and a later Place of
// the same key is judged again. MaxDailyNotional reads the store alone;
// MaxOpenOrders adds the venue's open, pending and partially filled orders
// (every order of the account, however placed) as the Client last listed
// them, at most 30 seconds ago: a refusal sends no request while that
// read is fresh, and a filled or cancelled order frees its place within
// 30 seconds. Each Place they judge reads the store's intents of the last
// day (MaxDailyNotional) or minute (MaxOpenOrders alone); the bolt and
// memory stores leave older settled intents unread
// (idempotency.RecentLister), the Redis and PostgreSQL stores list them
// all.
//
// # Telemetry
//
// A Client records metrics and spans through the OpenTelemetry API when
// Config.Transport has a MeterProvider or a TracerProvider, and nothing
// without one (this package links no SDK). Each Place is a span
// "tradewire.Place", with its client_order_id, whose lookups and sends
// are child spans; any other call's requests are spans only inside the
// caller's trace (a ctx carrying a span), so that reads and a Watch's
// polls outside one start no traces. docs/metrics.md in the repository
// lists every metric and what to alert on; examples/telemetry wires the
// SDK and a Prometheus endpoint.
//
// # Testing
//
// Point a Client at an httptest server on a loopback address with
// Config.BaseURL (http is allowed only for loopback), or at the simulated
// venue in package brokertest with Config.Transport.RoundTripper and its in-memory
// transport. For deterministic time with no test sleeping, share one
// venue.NewClock between the venue (venue.Config.Clock) and the
// Client (Config.Transport.Clock), and give contexts a
// deadline on it with venue.WithTimeout; not a clockwork.FakeClock, which counts the
// per-attempt timeout as a waiter, so the usual BlockUntilContext/Advance
// loop moves time while a request is in flight and times it out. Or run the
// in-memory venue and the Client inside a testing/synctest bubble, both on
// the default real clock: time there is virtual. examples/simtest in the
// repository shows both.
package broker
