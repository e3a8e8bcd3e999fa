package venue_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/tradewire/tradewire/venue"
)

const createBody = `{"client_order_id":"2b8e1f0e-2b61-4a52-9a56-1b2b3c4d5e6f","side":"buy","type":"limit","symbol":"DOGE-USD","limit_order_config":{"asset_quantity":"10","limit_price":"0.01"}}`

func TestTLSServerSpeaksHTTP2(t *testing.T) {
	t.Parallel()
	clk := clockwork.NewFakeClockAt(time.Date(2026, 8, 20, 12, 0, 0, 0, time.UTC))
	s := newTLSServer(venue.Config{Clock: clk, PageSize: 1, History: 3})
	defer s.Close()
	if !strings.HasPrefix(s.URL, "https://127.0.0.1:") {
		t.Fatalf("URL %s", s.URL)
	}
	resp, err := (&http.Client{Transport: s.Transport()}).Do(signedRequest(t, s, "GET", "/api/v2/crypto/trading/orders/?account_number="+s.AccountNumber, ""))
	if err != nil {
		t.Fatal(err)
	}
	var page struct{ Next *string }
	json.NewDecoder(resp.Body).Decode(&page)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Proto != "HTTP/2.0" {
		t.Fatalf("status %d over %s, want 200 over HTTP/2.0", resp.StatusCode, resp.Proto)
	}
	if page.Next == nil || !strings.HasPrefix(*page.Next, s.URL+"/") {
		t.Errorf("next %v, want a link on %s", page.Next, s.URL)
	}
	if got, want := resp.Header.Get("Date"), clk.Now().UTC().Format(http.TimeFormat); got != want {
		t.Errorf("Date %q, want the venue's clock %q", got, want)
	}
	// The PEM is what a client must trust, and it is enough.
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(s.CACertPEM()) || s.Certificate() == nil {
		t.Fatal("no usable CA certificate")
	}
	// A client that does not trust it is refused.
	if _, err := http.DefaultClient.Do(signedRequest(t, s, "GET", "/api/v2/crypto/trading/accounts/", "")); err == nil {
		t.Error("a client without the CA certificate was served")
	}
}

func TestTLSServerStreamFaultsCommit(t *testing.T) {
	t.Parallel()
	for _, k := range []string{"refused_stream", "protocol_error", "goaway"} {
		t.Run(string(k), func(t *testing.T) {
			t.Parallel()
			s := newTLSServer(venue.Config{})
			defer s.Close()
			s.Inject(venue.Fault{Kind: k, Method: "POST", Path: "/api/v2/crypto/trading/orders/"})
			req := signedRequest(t, s, "POST", "/api/v2/crypto/trading/orders/?account_number="+s.AccountNumber, createBody)
			req.GetBody = nil // nothing beneath may replay it: count the venue's creates
			if resp, err := (&http.Client{Transport: s.Transport()}).Do(req); err == nil {
				resp.Body.Close()
				t.Fatalf("answered %d, want the stream ended", resp.StatusCode)
			}
			if n := len(s.Ledger().OrdersByClientID("2b8e1f0e-2b61-4a52-9a56-1b2b3c4d5e6f")); n != 1 {
				t.Errorf("%d orders, want the create committed once", n)
			}
		})
	}
}

// TestTLSServerMaxConcurrentStreams: a venue whose Config.MaxConcurrentStreams
// is negative refuses every HTTP/2 stream before serving it; the Ledger
// records each one as refused_unserved, dropped, with no status and no
// effect. The client, which net/http keeps re-sending, is stopped once
// the venue has refused two.
func TestTLSServerMaxConcurrentStreams(t *testing.T) {
	t.Parallel()
	s := newTLSServer(venue.Config{MaxConcurrentStreams: -1})
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	go func() {
		n := 0
		s.Ledger().AwaitRequests(ctx, 0, func(venue.Request) bool { n++; return n == 2 })
		cancel()
	}()
	req := signedRequest(t, s, "POST", "/api/v2/crypto/trading/orders/?account_number="+s.AccountNumber, createBody)
	if resp, err := (&http.Client{Transport: s.Transport()}).Do(req.WithContext(ctx)); err == nil {
		resp.Body.Close()
		t.Fatalf("answered %d, want every stream refused", resp.StatusCode)
	}
	reqs := s.Ledger().Requests()
	if len(reqs) < 2 || len(s.Ledger().Orders()) != 0 {
		t.Fatalf("ledger %+v with %d orders; want at least 2 requests and no order", reqs, len(s.Ledger().Orders()))
	}
	for _, r := range reqs {
		if r.Fault != "refused_unserved" || !r.Dropped || r.Status != 0 || r.SignatureValid || r.Method != "POST" ||
			r.Target != "/api/v2/crypto/trading/orders/?account_number="+s.AccountNumber || r.Class != "order_writes" {
			t.Errorf("recorded %+v, want a refused_unserved POST of the order_writes class", r)
		}
	}
}

// TestTLSServerStreamFaultsInviteReplays shows why the stream faults
// matter: a request that net/http may rebuild (GetBody set, as
// http.NewRequest sets it for a bytes.Reader) is sent again beneath the
// caller after each of them, and a venue that creates a second order for a
// reused client_order_id holds two. tradewire's transport must not allow it.
func TestTLSServerStreamFaultsInviteReplays(t *testing.T) {
	t.Parallel()
	for _, k := range []string{"refused_stream", "protocol_error", "goaway"} {
		t.Run(string(k), func(t *testing.T) {
			t.Parallel()
			s := newTLSServer(venue.Config{Faults: venue.FaultPlan{Duplicate: venue.CreateSecond}})
			defer s.Close()
			s.Inject(venue.Fault{Kind: k, Method: "POST", Path: "/api/v2/crypto/trading/orders/"})
			req := signedRequest(t, s, "POST", "/api/v2/crypto/trading/orders/?account_number="+s.AccountNumber, createBody)
			resp, err := (&http.Client{Transport: s.Transport()}).Do(req)
			if err != nil {
				t.Fatalf("net/http did not replay: %v", err)
			}
			resp.Body.Close()
			if n := len(s.Ledger().OrdersByClientID("2b8e1f0e-2b61-4a52-9a56-1b2b3c4d5e6f")); resp.StatusCode != 201 || n != 2 {
				t.Errorf("answered %d with %d orders at the venue; want 201 after a silent replay, 2 orders", resp.StatusCode, n)
			}
		})
	}
}

func TestHostileOptions(t *testing.T) {
	t.Parallel()
	clk := clockwork.NewFakeClockAt(time.Date(2026, 8, 20, 12, 0, 0, 0, time.UTC))
	s, err := newServer(venue.Config{Clock: clk, Faults: venue.FaultPlan{Hostile: &venue.Hostile{
		ClockOffset: -20 * time.Second, ListLag: time.Minute, OmitClientOrderID: 1, DropNext: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: s.Transport()}).Do(signedRequest(t, s, "GET", "/api/v2/crypto/trading/accounts/", ""))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got, want := resp.Header.Get("Date"), clk.Now().Add(-20*time.Second).UTC().Format(http.TimeFormat); got != want {
		t.Errorf("Date %q, want %q (20 s behind)", got, want)
	}
	for _, h := range []venue.Hostile{{ListLag: -time.Second}, {OmitClientOrderID: 2}, {DropNext: -1}} {
		if _, err := newServer(venue.Config{Faults: venue.FaultPlan{Hostile: &h}}); err == nil {
			t.Errorf("hostile modes %+v accepted", h)
		}
	}
	p, err := venue.ParseFaultPlan([]byte(`{"hostile":{"clock_offset":"1m"}}`))
	if err != nil {
		t.Fatal(err)
	}
	s, err = newServer(venue.Config{Clock: clk, Faults: p})
	if err != nil {
		t.Fatal(err)
	}
	bid, _, _ := s.Quote("BTC-USD")
	later, err := newServer(venue.Config{Clock: clockwork.NewFakeClockAt(clk.Now().Add(time.Minute))})
	if err != nil {
		t.Fatal(err)
	}
	ahead, _, _ := later.Quote("BTC-USD")
	if !bid.Equal(ahead) {
		t.Errorf("a venue a minute ahead quotes %s, a venue at that time %s", bid, ahead)
	}
}

// TestTLSServerCertificateIsALeafOfItsCA: the server presents an end
// entity (CA:FALSE, serverAuth) that verifies against CACertPEM alone for
// each loopback name, and CACertPEM is a CA; rustls-based clients refuse
// a CA presented as a server's certificate.
func TestTLSServerCertificateIsALeafOfItsCA(t *testing.T) {
	t.Parallel()
	s := newTLSServer(venue.Config{})
	defer s.Close()
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(s.CACertPEM()) {
		t.Fatal("CACertPEM holds no certificate")
	}
	if ca := s.Certificate(); !ca.IsCA || ca.KeyUsage&x509.KeyUsageCertSign == 0 {
		t.Errorf("Certificate: IsCA %v, KeyUsage %b: want the CA", ca.IsCA, ca.KeyUsage)
	}
	conn, err := tls.Dial("tcp", strings.TrimPrefix(s.URL, "https://"), &tls.Config{RootCAs: roots, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	leaf := conn.ConnectionState().PeerCertificates[0]
	conn.Close()
	if leaf.IsCA || leaf.KeyUsage&x509.KeyUsageCertSign != 0 || leaf.Equal(s.Certificate()) {
		t.Errorf("served certificate: IsCA %v, KeyUsage %b: a CA used as an end entity", leaf.IsCA, leaf.KeyUsage)
	}
	for _, name := range []string{"127.0.0.1", "::1", "localhost"} {
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
