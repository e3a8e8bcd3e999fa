// Package brokertest provides a simulated Robinhood Crypto Trading API v2
// venue for tests and simulations, the way net/http/httptest provides a
// server. It is the importable face of tradewire's venue simulator: the
// venue authenticates every request with Ed25519 exactly as the real one
// does, rate-limits per account, validates orders strictly, fills them
// against seeded, deterministic prices, and misbehaves on request.
//
// # Two ways in
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
// # Time
//
// Everything the venue does happens lazily on requests, measured on its
// clock (WithClock; default the real clock): price moves, fills, the ~1 s
// cancel settlement, the token bucket, the 30 s signature window and
// injected latency. With a clockwork.FakeClock, advance it to move the
// market; nothing runs in the background.
//
// # Faults
//
// Inject (or WithFaults) scripts the next N matching requests: a canned
// status (FaultRespond), a committed create whose answer is lost
// (FaultLoseResponse: 429, 500, 502, 503, 504 or a dropped connection), latency on the
// venue's clock (FaultLatency), a redirect to another host (FaultRedirect)
// or a "next" link to another host (FaultForeignNext). SetMix (or WithMix)
// adds a seeded random mix for simulation runs. WithDuplicateMode picks what
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
//	  "duplicate": "return_original"
//	}
//
// path is a prefix, or a path.Match pattern when it holds '*', '?' or '[';
// times defaults to 1; lose_response with status 0 drops the connection;
// unknown fields are an error.
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
