package venue_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"

	"github.com/jonboulle/clockwork"

	"github.com/tradewire/tradewire/venue"
)

// The venue's external tests reach it as a client does, through a
// testServer: package brokertest's Server, which they cannot import (the
// venue's tests, too, depend on nothing of tradewire outside venue/).

// inMemoryURL is the base URL of a testServer made by newServer.
const inMemoryURL = "https://venue.test.invalid"

// testServer is a Venue with the URL and credentials a client needs.
type testServer struct {
	*venue.Venue
	URL              string
	APIKey           string
	PrivateKey       ed25519.PrivateKey
	PrivateKeyBase64 string
	AccountNumber    string
	Clock            clockwork.Clock

	ts  *httptest.Server
	tls *venue.Server
	rt  http.RoundTripper
}

// newServer returns a testServer reached in memory, through Transport.
func newServer(cfg venue.Config) (*testServer, error) {
	v, err := venue.New(cfg)
	if err != nil {
		return nil, err
	}
	c := v.Config()
	return &testServer{Venue: v, URL: inMemoryURL, APIKey: c.APIKey, PrivateKey: c.PrivateKey,
		PrivateKeyBase64: base64.StdEncoding.EncodeToString(c.PrivateKey.Seed()),
		AccountNumber:    c.AccountNumber, Clock: c.Clock, rt: memTransport{v}}, nil
}

// newLoopbackServer serves the venue over HTTP/1.1 on loopback; Transport
// still reaches it in memory. It panics if it cannot start.
func newLoopbackServer(cfg venue.Config) *testServer {
	s, err := newServer(cfg)
	if err != nil {
		panic(err)
	}
	s.ts = httptest.NewServer(s.Venue)
	s.URL = s.ts.URL
	return s
}

// newTLSServer serves the venue with Serve over TLS on loopback; Transport
// speaks HTTP/2 and trusts only its authority. It panics if it cannot
// start.
func newTLSServer(cfg venue.Config) *testServer {
	s, err := newServer(cfg)
	if err != nil {
		panic(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	s.tls = s.Serve(ln, true)
	s.URL = s.tls.URL
	pool := x509.NewCertPool()
	pool.AddCert(s.tls.CA)
	var protos http.Protocols
	protos.SetHTTP2(true)
	s.rt = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		ForceAttemptHTTP2: true, Protocols: &protos}
	return s
}

func (s *testServer) Close() {
	if s.ts != nil {
		s.ts.Close()
	}
	if s.tls != nil {
		s.tls.Close()
		s.rt.(*http.Transport).CloseIdleConnections()
	}
}

func (s *testServer) Transport() http.RoundTripper { return s.rt }

func (s *testServer) Inject(f ...venue.Fault) error {
	return s.SetFaultPlan(venue.FaultPlan{Faults: f})
}

func (s *testServer) CACertPEM() []byte {
	if s.tls == nil {
		return nil
	}
	return s.tls.CACertPEM
}

func (s *testServer) Certificate() *x509.Certificate {
	if s.tls == nil {
		return nil
	}
	return s.tls.CA
}

// memTransport serves a request in memory; a dropped connection is
// io.ErrUnexpectedEOF.
type memTransport struct{ h http.Handler }

func (m memTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		body = b
	}
	in := req.Clone(req.Context())
	in.Body = io.NopCloser(bytes.NewReader(body))
	in.ContentLength = int64(len(body))
	in.RequestURI = req.URL.RequestURI()
	if in.Host == "" {
		in.Host = req.URL.Host
	}
	if req.URL.Scheme == "https" {
		in.TLS = &tls.ConnectionState{HandshakeComplete: true}
	}
	in.RemoteAddr = "192.0.2.1:1234"
	rec := httptest.NewRecorder()
	dropped := func() (dropped bool) {
		defer func() {
			if p := recover(); p != nil {
				if p != http.ErrAbortHandler {
					panic(p)
				}
				dropped = true
			}
		}()
		m.h.ServeHTTP(rec, in)
		return false
	}()
	if dropped {
		return nil, io.ErrUnexpectedEOF
	}
	if err := req.Context().Err(); err != nil {
		return nil, err
	}
	resp := rec.Result()
	resp.Request = req
	if cl := resp.Header.Get("Content-Length"); cl != "" {
		if n, err := strconv.ParseInt(cl, 10, 64); err == nil {
			resp.ContentLength = n
		}
	}
	return resp, nil
}
