package brokertest

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
	"sync"

	"github.com/jonboulle/clockwork"

	"github.com/tradewire/tradewire/venue"
)

// InMemoryURL is the base URL of a Server made by New: it exists only
// inside the RoundTripper of Client's Transport. It is https so that a
// client insisting on https for non-loopback hosts accepts it.
const InMemoryURL = "https://venue.brokertest.invalid"

// Server is a simulated venue (a *venue.Venue) reachable over a loopback
// listener (NewServer, NewTLSServer) or only in memory (New), with the
// credentials a client signs with. The Venue's methods reach its ledger
// (Ledger) and fault injection (SetFaultPlan, PendingFaults). It is safe
// for concurrent use.
type Server struct {
	*venue.Venue

	// URL is the base URL to point a client at, without a trailing slash.
	URL string
	// APIKey is the x-api-key the venue accepts.
	APIKey string
	// PrivateKey signs requests for APIKey.
	PrivateKey ed25519.PrivateKey
	// PrivateKeyBase64 is the base64 of PrivateKey's 32-byte seed, the form
	// TRADEWIRE_PRIVATE_KEY takes.
	PrivateKeyBase64 string
	// AccountNumber is the account APIKey trades.
	AccountNumber string
	// Clock is the venue's clock; advance it if it is a fake.
	Clock clockwork.Clock

	ts   *httptest.Server // NewServer
	tls  *venue.Server    // NewTLSServer
	rt   http.RoundTripper
	once sync.Once
}

// New returns a Server for the venue cfg configures, reachable only
// through Client's Transport (no sockets), at InMemoryURL. Use it inside
// testing/synctest bubbles. It fails if venue.New does.
func New(cfg venue.Config) (*Server, error) {
	v, err := venue.New(cfg)
	if err != nil {
		return nil, err
	}
	c := v.Config()
	return &Server{Venue: v, URL: InMemoryURL, APIKey: c.APIKey, PrivateKey: c.PrivateKey,
		PrivateKeyBase64: base64.StdEncoding.EncodeToString(c.PrivateKey.Seed()),
		AccountNumber:    c.AccountNumber, Clock: c.Clock, rt: roundTripper{v}}, nil
}

// NewServer starts a Server listening on a loopback address and sets URL to
// it (http://127.0.0.1:port). Like httptest.NewServer it panics if it cannot
// start, including on an invalid cfg. Call Close when done.
func NewServer(cfg venue.Config) *Server {
	s := mustNew(cfg)
	s.ts = httptest.NewServer(s.Venue)
	s.URL = s.ts.URL
	return s
}

// NewTLSServer starts a Server served over TLS with HTTP/2 on a loopback
// address, as the real venue is served (venue.Venue.Serve), and sets URL
// to it (https://127.0.0.1:port). Its certificate is signed by a
// certificate authority minted with it (CACertPEM, Certificate);
// Client's Transport speaks HTTP/2 to it and trusts only that authority. Only
// there do the stream faults ("refused_stream",
// FaultProtocolError, FaultGoAway) end the stream as they say. Like
// httptest.NewTLSServer it panics if it cannot start, including on an
// invalid cfg. Call Close when done.
func NewTLSServer(cfg venue.Config) *Server {
	s := mustNew(cfg)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic("brokertest: listen: " + err.Error())
	}
	s.tls = s.Venue.Serve(ln, true)
	s.URL = s.tls.URL
	pool := x509.NewCertPool()
	pool.AddCert(s.tls.CA)
	var protos http.Protocols
	protos.SetHTTP2(true)
	s.rt = &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		ForceAttemptHTTP2: true,
		Protocols:         &protos,
	}
	return s
}

func mustNew(cfg venue.Config) *Server {
	s, err := New(cfg)
	if err != nil {
		panic(err)
	}
	return s
}

// Close shuts down the listener, if any, blocking until requests finish,
// and closes the idle connections of Client's Transport.
func (s *Server) Close() {
	s.once.Do(func() {
		if s.ts != nil {
			s.ts.Close()
		}
		if s.tls != nil {
			s.tls.Close()
			s.rt.(*http.Transport).CloseIdleConnections()
		}
	})
}

// Inject queues scripted faults after those still pending; each affects
// the next Times requests that match it (see venue.Fault). It fails,
// queuing none, if any fault is invalid. It is
// SetFaultPlan(venue.FaultPlan{Faults: f}).
func (s *Server) Inject(f ...venue.Fault) error {
	return s.SetFaultPlan(venue.FaultPlan{Faults: f})
}

// Client returns an *http.Client that reaches the venue; give a tradewire
// client its Transport (transport.Config.RoundTripper). For a Server made
// by New or NewServer the Transport serves requests in memory, without
// sockets, whatever the request's host; a dropped-connection fault returns
// io.ErrUnexpectedEOF. For a NewTLSServer it speaks TLS + HTTP/2 to the
// listener and trusts only the server's certificate authority. It is safe
// for concurrent use.
func (s *Server) Client() *http.Client { return &http.Client{Transport: s.rt} }

// CACertPEM returns the PEM of the certificate authority that signed the
// certificate a NewTLSServer presents, which a client must trust (for the
// CLI: --ca-cert FILE or SSL_CERT_FILE), or nil for a Server without TLS.
func (s *Server) CACertPEM() []byte {
	if s.tls == nil {
		return nil
	}
	return bytes.Clone(s.tls.CACertPEM)
}

// Certificate returns the certificate authority of CACertPEM, or nil for a
// Server without TLS.
func (s *Server) Certificate() *x509.Certificate {
	if s.tls == nil {
		return nil
	}
	return s.tls.CA
}

type roundTripper struct{ h http.Handler }

func (rt roundTripper) RoundTrip(req *http.Request) (resp *http.Response, err error) {
	var body []byte
	if req.Body != nil {
		body, err = io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
	}
	// The venue reads the request and never changes it: a shallow copy
	// holds the fields the server side sets without cloning the headers.
	in := req.WithContext(req.Context())
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
	w := &memResponse{header: http.Header{}}
	dropped := false
	func() {
		defer func() {
			if p := recover(); p != nil {
				if p != http.ErrAbortHandler {
					panic(p)
				}
				dropped = true
			}
		}()
		rt.h.ServeHTTP(w, in)
	}()
	if dropped {
		return nil, io.ErrUnexpectedEOF
	}
	if err := req.Context().Err(); err != nil {
		return nil, err
	}
	resp = w.result()
	resp.Request = req
	return resp, nil
}

// memResponse is the in-memory ResponseWriter: httptest.ResponseRecorder's
// answer (the headers as of WriteHeader, a body sniffed for its
// Content-Type when it has none), without its copies.
type memResponse struct {
	header, sent http.Header // sent: the headers as of WriteHeader
	status       int
	body         bytes.Buffer
}

func (m *memResponse) Header() http.Header { return m.header }

func (m *memResponse) WriteHeader(code int) {
	if m.sent != nil {
		return
	}
	m.status, m.sent = code, m.header
	m.header = http.Header{} // later changes are not sent, as on a real server
}

func (m *memResponse) Write(b []byte) (int, error) {
	if m.sent == nil {
		if _, ok := m.header["Content-Type"]; !ok && m.header.Get("Transfer-Encoding") == "" {
			m.header.Set("Content-Type", http.DetectContentType(b))
		}
		m.WriteHeader(http.StatusOK)
	}
	return m.body.Write(b)
}

func (m *memResponse) result() *http.Response {
	m.WriteHeader(http.StatusOK) // a handler that wrote nothing answered 200
	resp := &http.Response{
		Status: strconv.Itoa(m.status) + " " + http.StatusText(m.status), StatusCode: m.status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: m.sent,
		Body: io.NopCloser(bytes.NewReader(m.body.Bytes())), ContentLength: -1,
	}
	if cl := m.sent.Get("Content-Length"); cl != "" {
		if n, err := strconv.ParseInt(cl, 10, 64); err == nil && n >= 0 {
			resp.ContentLength = n
		}
	}
	return resp
}
