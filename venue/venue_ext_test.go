package venue_test

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/tradewire/tradewire/venue"
)

// signedRequest builds a request signed by hand with crypto/ed25519.
func signedRequest(t testing.TB, s *testServer, method, target, body string) *http.Request {
	t.Helper()
	seed, err := base64.StdEncoding.DecodeString(s.PrivateKeyBase64)
	if err != nil {
		t.Fatal(err)
	}
	key := ed25519.NewKeyFromSeed(seed)
	ts := strconv.FormatInt(s.Clock.Now().Unix(), 10)
	req, err := http.NewRequest(method, s.URL+target, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("x-api-key", s.APIKey)
	req.Header.Set("x-timestamp", ts)
	req.Header.Set("x-signature", base64.StdEncoding.EncodeToString(ed25519.Sign(key, []byte(s.APIKey+ts+target+method+body))))
	return req
}

// status sends req through c and returns the status answered.
func status(t testing.TB, c *http.Client, req *http.Request) int {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestLoopbackServer(t *testing.T) {
	t.Parallel()
	clk := clockwork.NewFakeClockAt(time.Date(2026, 8, 20, 12, 0, 0, 0, time.UTC))
	s := newLoopbackServer(venue.Config{Clock: clk, Seed: 1})
	defer s.Close()
	if !strings.HasPrefix(s.URL, "http://127.0.0.1:") {
		t.Fatalf("URL %s", s.URL)
	}
	resp, err := http.DefaultClient.Do(signedRequest(t, s, "GET", "/api/v2/crypto/trading/accounts/", ""))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	// Dropped connection over a real socket: a transport error, order committed.
	s.Inject(venue.Fault{Kind: "lose_response", Method: "POST"})
	body := `{"client_order_id":"0b8e1f0e-2b61-4a52-9a56-1b2b3c4d5e6f","side":"buy","type":"market","symbol":"BTC-USD","market_order_config":{"asset_quantity":"0.0001"}}`
	if resp, err := http.DefaultClient.Do(signedRequest(t, s, "POST", "/api/v2/crypto/trading/orders/?account_number="+s.AccountNumber, body)); err == nil {
		resp.Body.Close()
		t.Fatalf("want an error, got %d", resp.StatusCode)
	}
	if n := len(s.Ledger().OrdersByClientID("0b8e1f0e-2b61-4a52-9a56-1b2b3c4d5e6f")); n != 1 {
		t.Fatalf("orders = %d", n)
	}
}

func TestInMemoryTransport(t *testing.T) {
	t.Parallel()
	clk := clockwork.NewFakeClockAt(time.Date(2026, 8, 20, 12, 0, 0, 0, time.UTC))
	s, err := newServer(venue.Config{Clock: clk, PageSize: 2, History: 10, Faults: venue.FaultPlan{Duplicate: venue.CreateSecond}})
	if err != nil {
		t.Fatal(err)
	}
	if s.URL != inMemoryURL {
		t.Fatalf("URL %s", s.URL)
	}
	c := &http.Client{Transport: s.Transport()}
	resp, err := c.Do(signedRequest(t, s, "GET", "/api/v2/crypto/trading/orders/?account_number="+s.AccountNumber, ""))
	if err != nil {
		t.Fatal(err)
	}
	var page struct {
		Next    *string
		Results []json.RawMessage
	}
	json.NewDecoder(resp.Body).Decode(&page)
	resp.Body.Close()
	if resp.StatusCode != 200 || len(page.Results) != 2 || page.Next == nil || !strings.HasPrefix(*page.Next, inMemoryURL+"/") {
		t.Fatalf("%d %v", resp.StatusCode, page.Next)
	}
	// Lost responses: dropped connection is io.ErrUnexpectedEOF; 503 is an answer.
	body := `{"client_order_id":"1b8e1f0e-2b61-4a52-9a56-1b2b3c4d5e6f","side":"buy","type":"market","symbol":"ETH-USD","market_order_config":{"asset_quantity":"0.001"}}`
	target := "/api/v2/crypto/trading/orders/?account_number=" + s.AccountNumber
	if err := s.Inject(venue.Fault{Kind: "lose_response", Method: "POST"},
		venue.Fault{Kind: "lose_response", Method: "POST", Status: 503}); err != nil {
		t.Fatal(err)
	}
	_, err = c.Do(signedRequest(t, s, "POST", target, body))
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err = %v", err)
	}
	resp, err = c.Do(signedRequest(t, s, "POST", target, body))
	if err != nil || resp.StatusCode != 503 {
		t.Fatalf("%v %v", resp, err)
	}
	resp.Body.Close()
	// CreateSecond: the naive retries above placed two orders.
	if n := len(s.Ledger().OrdersByClientID("1b8e1f0e-2b61-4a52-9a56-1b2b3c4d5e6f")); n != 2 {
		t.Fatalf("orders = %d", n)
	}
	if c := s.Ledger().Counts(); c.Creates != 2 || c.Dropped != 1 || c.ByStatus[503] != 1 {
		t.Errorf("counts %+v", c)
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	for _, c := range []venue.Config{
		{PageSize: -1},
		{RateLimits: venue.RateLimits{Account: venue.RateLimit{PerMinute: 0, Burst: 1}}},
		{Faults: venue.FaultPlan{Duplicate: "maybe"}},
		{APIKey: "key", PrivateKey: nil},
		{LedgerLimit: -1},
	} {
		if _, err := newServer(c); err == nil {
			t.Errorf("config %+v accepted", c)
		}
	}
	if _, err := venue.ParseFaultPlan([]byte(`{"faults":[{"kind":"nope"}]}`)); err == nil {
		t.Error("bad plan accepted")
	}
	p, err := venue.ParseFaultPlan([]byte(`{"faults":[{"kind":"respond","status":418}]}`))
	if err != nil {
		t.Fatal(err)
	}
	s, err := newServer(venue.Config{Faults: p, RateLimits: venue.RateLimits{Account: venue.RateLimit{PerMinute: math.Inf(1)}}})
	if err != nil || s.PendingFaults() != 1 {
		t.Fatalf("%v %d", err, s.PendingFaults())
	}
}

// TestAccountRateLimit: the zero account-wide bucket is the default, an
// infinite rate turns it off, and any other non-positive value is refused.
func TestAccountRateLimit(t *testing.T) {
	for _, tc := range []struct {
		perMinute float64
		burst     int
		ok        bool
	}{{0, 0, true}, {math.Inf(1), 0, true}, {100, 300, true}, {-1, 1, false}, {5, 0, false}, {0, 5, false}} {
		_, err := newServer(venue.Config{RateLimits: venue.RateLimits{Account: venue.RateLimit{PerMinute: tc.perMinute, Burst: tc.burst}}})
		if (err == nil) != tc.ok {
			t.Errorf("account bucket %v/min burst %d: err = %v, want ok %v", tc.perMinute, tc.burst, err, tc.ok)
		}
	}
}

// TestConfigFaults: the faults of Config.Faults are pending from the start
// and its duplicate mode is in force.
func TestConfigFaults(t *testing.T) {
	t.Parallel()
	clk := clockwork.NewFakeClockAt(time.Date(2026, 8, 20, 12, 0, 0, 0, time.UTC))
	respond := venue.Fault{Kind: "respond", Method: "GET", Status: 418}
	s, err := newServer(venue.Config{Clock: clk, Faults: venue.FaultPlan{Faults: []venue.Fault{respond, respond}, Duplicate: venue.CreateSecond}})
	if err != nil {
		t.Fatal(err)
	}
	if n := s.PendingFaults(); n != 2 {
		t.Fatalf("%d faults pending, want 2", n)
	}
	c := &http.Client{Transport: s.Transport()}
	for range 2 {
		if st := status(t, c, signedRequest(t, s, "GET", "/api/v2/crypto/trading/accounts/", "")); st != 418 {
			t.Fatalf("status %d, want the injected 418", st)
		}
	}
	body := `{"client_order_id":"3b8e1f0e-2b61-4a52-9a56-1b2b3c4d5e6f","side":"buy","type":"market","symbol":"ETH-USD","market_order_config":{"asset_quantity":"0.001"}}`
	target := "/api/v2/crypto/trading/orders/?account_number=" + s.AccountNumber
	for range 2 {
		if st := status(t, c, signedRequest(t, s, "POST", target, body)); st != 201 {
			t.Fatalf("status %d, want 201 from a CreateSecond venue", st)
		}
	}
	if _, err := newServer(venue.Config{Faults: venue.FaultPlan{Hostile: &venue.Hostile{ListLag: -time.Second}}}); err == nil {
		t.Error("a negative list lag was accepted")
	}
}

// TestSetFaultPlan: a running Server's plan queues faults, replaces what
// it sets, keeps what it leaves unset, and changes nothing when any part
// is invalid.
func TestSetFaultPlan(t *testing.T) {
	t.Parallel()
	clk := clockwork.NewFakeClockAt(time.Date(2026, 8, 20, 12, 0, 0, 0, time.UTC))
	s, err := newServer(venue.Config{Clock: clk, Faults: venue.FaultPlan{
		Faults:    []venue.Fault{{Kind: "respond", Method: "DELETE", Status: 418}},
		Duplicate: venue.CreateSecond,
	}})
	if err != nil {
		t.Fatal(err)
	}
	bad := venue.FaultPlan{
		Faults:    []venue.Fault{{Kind: "respond", Status: 503}},
		Duplicate: venue.Reject400,
		Hostile:   &venue.Hostile{DropNext: 2},
	}
	if err := s.SetFaultPlan(bad); err == nil {
		t.Fatal("a plan with an invalid hostile mode was accepted")
	}
	if n := s.PendingFaults(); n != 1 {
		t.Fatalf("%d faults pending after a refused plan, want 1: it changed something", n)
	}
	offset := -20 * time.Second
	if err := s.SetFaultPlan(venue.FaultPlan{
		Faults:  []venue.Fault{{Kind: "respond", Method: "DELETE", Status: 418, Times: 2}},
		Hostile: &venue.Hostile{ClockOffset: offset},
	}); err != nil {
		t.Fatal(err)
	}
	if n := s.PendingFaults(); n != 3 {
		t.Fatalf("%d faults pending, want 1 + 2 queued", n)
	}
	c := &http.Client{Transport: s.Transport()}
	resp, err := c.Do(signedRequest(t, s, "GET", "/api/v2/crypto/trading/accounts/", ""))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got, want := resp.Header.Get("Date"), clk.Now().Add(offset).UTC().Format(http.TimeFormat); got != want {
		t.Errorf("Date %q, want %q: the hostile clock offset is set", got, want)
	}
	// The duplicate mode the plan left unset is still CreateSecond.
	body := `{"client_order_id":"4b8e1f0e-2b61-4a52-9a56-1b2b3c4d5e6f","side":"buy","type":"market","symbol":"ETH-USD","market_order_config":{"asset_quantity":"0.001"}}`
	target := "/api/v2/crypto/trading/orders/?account_number=" + s.AccountNumber
	for range 2 {
		// Signed on the clock: 20 s from the venue's now, inside the signature window.
		if st := status(t, c, signedRequest(t, s, "POST", target, body)); st != 201 {
			t.Fatalf("status %d, want 201 from the CreateSecond venue", st)
		}
	}
	if n := len(s.Ledger().OrdersByClientID("4b8e1f0e-2b61-4a52-9a56-1b2b3c4d5e6f")); n != 2 {
		t.Fatalf("%d orders, want 2 from the CreateSecond venue", n)
	}
	// ReturnOriginal restores the default.
	if err := s.SetFaultPlan(venue.FaultPlan{Duplicate: venue.ReturnOriginal}); err != nil {
		t.Fatal(err)
	}
	st := status(t, c, signedRequest(t, s, "POST", target, body))
	if n := len(s.Ledger().OrdersByClientID("4b8e1f0e-2b61-4a52-9a56-1b2b3c4d5e6f")); st != 200 || n != 2 {
		t.Fatalf("answered %d with %d orders, want 200 and the original orders only", st, n)
	}
}

func TestZeroLedgerIsEmpty(t *testing.T) {
	t.Parallel()
	var l venue.Ledger
	if l.Requests() != nil || l.Orders() != nil || l.Counts().Total != 0 || l.DuplicateClientIDs() != nil {
		t.Fatal("zero Ledger is not empty")
	}
}
