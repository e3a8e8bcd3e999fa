package brokertest_test

import (
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"net/http"
	"strconv"
	"testing"

	"github.com/tradewire/tradewire/broker/brokertest"
	"github.com/tradewire/tradewire/venue"
)

// get sends a signed GET of the accounts list through c.
func get(t *testing.T, s *brokertest.Server, c *http.Client) *http.Response {
	t.Helper()
	const target = "/api/v2/crypto/trading/accounts/"
	ts := strconv.FormatInt(s.Clock.Now().Unix(), 10)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, s.URL+target, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("x-api-key", s.APIKey)
	req.Header.Set("x-timestamp", ts)
	req.Header.Set("x-signature", base64.StdEncoding.EncodeToString(ed25519.Sign(s.PrivateKey, []byte(s.APIKey+ts+target+"GET"))))
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// TestServers: each Server answers a request signed with its credentials
// through Client, over the wire it says, and Inject's fault reaches it.
func TestServers(t *testing.T) {
	t.Parallel()
	mem, err := brokertest.New(venue.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		srv   *brokertest.Server
		proto string
		tls   bool
	}{
		{"in memory", mem, "HTTP/1.1", false},
		{"loopback", brokertest.NewServer(venue.Config{}), "HTTP/1.1", false},
		{"TLS", brokertest.NewTLSServer(venue.Config{}), "HTTP/2.0", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.srv
			defer s.Close()
			c := s.Client()
			if resp := get(t, s, c); resp.StatusCode != http.StatusOK || resp.Proto != tc.proto {
				t.Fatalf("answered %s over %s, want 200 over %s", resp.Status, resp.Proto, tc.proto)
			}
			if err := s.Inject(venue.Fault{Kind: "respond", Method: http.MethodGet, Status: http.StatusTeapot}); err != nil {
				t.Fatal(err)
			}
			if resp := get(t, s, c); resp.StatusCode != http.StatusTeapot {
				t.Fatalf("answered %s, want the injected 418", resp.Status)
			}
			if got := len(s.Ledger().Requests()); got != 2 {
				t.Errorf("ledger holds %d requests, want 2", got)
			}
			if !tc.tls {
				if s.CACertPEM() != nil || s.Certificate() != nil {
					t.Error("a Server without TLS has a certificate authority")
				}
				return
			}
			b, _ := pem.Decode(s.CACertPEM())
			if b == nil {
				t.Fatal("CACertPEM holds no PEM block")
			}
			ca, err := x509.ParseCertificate(b.Bytes)
			if err != nil || !ca.Equal(s.Certificate()) || !ca.IsCA {
				t.Fatalf("CACertPEM is not the authority Certificate returns: %v", err)
			}
		})
	}
}
