// Package brokertest provides a simulated Robinhood Crypto Trading API
// venue (package venue) for tests, the way net/http/httptest provides a
// server: a Server with the URL and credentials a client needs, on a
// loopback listener (NewServer), over TLS with HTTP/2 as the real venue is
// served (NewTLSServer), or in memory (New, for testing/synctest bubbles).
// The venue's configuration, faults, ledger and fake clock are package
// venue's:
//
//	srv := brokertest.NewTLSServer(venue.Config{Clock: clk,
//		Faults: venue.FaultPlan{Duplicate: venue.CreateSecond}})
//	defer srv.Close()
//	// configure the client with srv.URL, srv.APIKey, srv.PrivateKey and
//	// srv.Client().Transport
//	if dups := srv.Ledger().DuplicateClientIDs(); len(dups) > 0 {
//		t.Fatalf("orders placed twice: %v", dups)
//	}
package brokertest
