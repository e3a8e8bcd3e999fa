// Package brokertest provides a simulated Robinhood Crypto Trading API v2
// venue for tests and simulations, the way net/http/httptest provides a
// server. It is the importable face of tradewire's venue simulator: the
// venue authenticates every request with Ed25519 exactly as the real one
// does, rate-limits per account, validates orders strictly, fills them
// against seeded, deterministic prices, and misbehaves on request.
//
// # Three ways in
//
// NewServer listens on a loopback address; point any client at Server.URL
// (http://127.0.0.1:port) and call Close when done:
//
//	srv := brokertest.NewServer(brokertest.WithClock(clk), brokertest.WithSeed(1))
//	defer srv.Close()
//	// configure the client with srv.URL, srv.APIKey, srv.PrivateKeyBase64
//
// New builds the same venue without a listener. Requests reach it only
// through Server.Transport, an http.RoundTripper that calls the handler in
// memory, so it works inside testing/synctest bubbles. Its URL is
// InMemoryURL (https://venue.brokertest.invalid): https, so a client that
// demands https for non-loopback hosts accepts it. A dropped-connection
// fault surfaces from the RoundTripper as io.ErrUnexpectedEOF.
//
//	srv, err := brokertest.New(brokertest.WithClock(clk))
//	httpClient := &http.Client{Transport: srv.Transport()}
//
// NewTLSServer serves the venue as the real one is served: TLS with HTTP/2
// on a loopback address (https://127.0.0.1:port). Server.Client speaks
// HTTP/2 to it and trusts only its self-signed certificate; CACertPEM is
// that certificate for any other client. Only there do the HTTP/2 stream
// faults end a stream rather than the connection.
//
//	srv := brokertest.NewTLSServer(brokertest.WithDuplicateMode(brokertest.CreateSecond))
//	defer srv.Close()
//	httpClient := srv.Client() // resp.Proto == "HTTP/2.0"
//
// # Time
//
// Everything the venue does happens lazily on requests, measured on its
// clock (WithClock; default the real clock): price moves, fills, the ~1 s
// cancel settlement, the token bucket, the 30 s signature window and
// injected latency. Nothing runs in the background.
//
// For a simulation test, share one Clock (NewClock) between the venue and
// the client, and drive it with the usual clockwork idiom: waits cost no
// wall time, and the test's advancing never times out a request in
// flight, because Clock.BlockUntilContext counts waits (timers, sleeps)
// but not bounds (the client's per-attempt timeout, a context deadline):
//
//	clk := brokertest.NewClock(start)
//	srv, _ := brokertest.New(brokertest.WithClock(clk))
//	client, _ := broker.New(broker.WithCredentials(srv.APIKey, key), broker.WithBaseURL(srv.URL),
//		broker.WithRoundTripper(srv.Transport()), broker.WithClock(clk))
//	ctx, cancel := brokertest.WithTimeout(t.Context(), clk, time.Minute)
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
// Inject (or WithFaults) scripts the next N matching requests: a canned
// status (FaultRespond), a committed create whose answer is lost
// (FaultLoseResponse: 429, 500, 502, 503, 504 or a dropped connection), latency on the
// venue's clock (FaultLatency), a redirect to another host (FaultRedirect)
// or a "next" link to another host (FaultForeignNext). SetMix (or WithMix)
// adds a seeded random mix for simulation runs. Some faults commit a create
// and then lie about it: a 2xx with a body cut short (FaultTruncatedBody),
// with another order's JSON (FaultOtherOrderBody) or under another
// client_order_id (FaultWrongClientOrderID); or an HTTP/2 stream ended
// after the commit with RST_STREAM REFUSED_STREAM (FaultRefusedStream),
// RST_STREAM PROTOCOL_ERROR (FaultProtocolError) or a GOAWAY that claims
// the request unprocessed (FaultGoAway), which Go's HTTP/2 client would
// replay by itself if the request let it. WithDuplicateMode picks what
// a reused client_order_id does: ReturnOriginal (the default), Reject400 or
// CreateSecond (the dangerous venue). LoadFaultPlan reads the JSON file the
// CLI's --faults flag takes:
//
//	{
//	  "faults": [
//	    {"kind": "respond", "method": "GET", "path": "/api/v2/crypto/trading/accounts/",
//	     "times": 2, "status": 503, "headers": {"Retry-After": "1"}, "body": "..."},
//	    {"kind": "lose_response", "method": "POST", "path": "/api/v2/crypto/trading/orders/", "status": 0},
//	    {"kind": "latency", "path": "/api/v2/crypto/marketdata/*/", "delay": "1.5s", "times": 3},
//	    {"kind": "latency", "method": "POST", "path": "/api/v2/crypto/trading/orders/", "delay": "15s", "after_commit": true},
//	    {"kind": "redirect", "status": 302, "location": "https://elsewhere.example"},
//	    {"kind": "foreign_next", "path": "/api/v2/crypto/trading/orders/", "location": "https://evil.example"}
//	  ],
//	  "mix": {"seed": 7, "rate_429": 0.05, "rate_5xx": 0.02, "rate_lost": 0.01,
//	          "rate_latency": 0.1, "latency": "250ms"},
//	  "duplicate": "create_second",
//	  "hostile": {"clock_offset": "-3m", "list_lag": "90s", "omit_client_order_id": 0.5, "drop_next": 1}
//	}
//
// The other kinds are truncated_body, other_order_body,
// wrong_client_order_id, refused_stream, protocol_error and goaway.
// path is a prefix, or a path.Match pattern when it holds '*', '?' or '[';
// times defaults to 1; lose_response with status 0 drops the connection;
// unknown fields are an error.
//
// # Hostile modes
//
// A hostile venue does not share the client's assumptions, for as long as
// the mode is set (WithHostile, SetHostile, a plan's "hostile", or one
// option each): WithClockOffset moves the venue's own now ahead or behind
// its clock, for the 30 s signature window, the timestamps it writes and
// the Date header it sets on every answer; WithListLag hides orders younger
// than the lag from the orders list (GET .../orders/{id}/ shows them at
// once); WithOmittedClientOrderIDs drops client_order_id from some or all
// list rows; WithDroppedNext nulls the "next" link of some or all list pages
// that should have one.
//
// # Assertions
//
// Ledger records every request (venue time, method, request-target,
// x-timestamp, signature validity, status, fault) and every order created,
// so a test can assert that a client left exactly one order per
// client_order_id:
//
//	if dups := srv.Ledger().DuplicateClientIDs(); len(dups) > 0 {
//		t.Fatalf("orders placed twice: %v", dups)
//	}
//
// # History
//
// WithHistory(n) seeds n orders over the last 30 days (filled, partly filled
// then canceled, canceled, failed, open). WithBulkOrders(n) adds n final
// orders generated on demand from their index, for pagination and fee-sweep
// benchmarks at any size.
//
// A Server is safe for concurrent use.
package brokertest
