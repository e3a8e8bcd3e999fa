package brokertest

import (
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"net/http/httptest"

	"github.com/tradewire/tradewire/internal/venue"
)

// tlsFront is the TLS + HTTP/2 listener of a NewTLSServer.
type tlsFront struct {
	close func()
	caPEM []byte
	cert  *x509.Certificate
}

// NewTLSServer starts a Server served over TLS with HTTP/2 on a loopback
// address, as the real venue is served, and sets URL to it
// (https://127.0.0.1:port). Client speaks HTTP/2 to it and trusts only its
// self-signed certificate (CACertPEM, Certificate). Like
// httptest.NewTLSServer it panics if it cannot start, including on an
// invalid Option. Call Close when done.
func NewTLSServer(opts ...Option) *Server {
	s, err := New(opts...)
	if err != nil {
		panic(err)
	}
	ts := httptest.NewUnstartedServer(s.v)
	ts.EnableHTTP2 = true
	ts.StartTLS()
	s.URL = ts.URL
	s.client = ts.Client()
	s.tls = &tlsFront{close: ts.Close, cert: ts.Certificate(),
		caPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw})}
	return s
}

// CACertPEM returns the PEM of the certificate a NewTLSServer presents,
// which a client must trust (for the CLI: --ca-cert FILE or
// SSL_CERT_FILE), or nil for a Server without TLS.
func (s *Server) CACertPEM() []byte {
	if s.tls == nil {
		return nil
	}
	return append([]byte(nil), s.tls.caPEM...)
}

// Certificate returns the certificate a NewTLSServer presents, or nil.
func (s *Server) Certificate() *x509.Certificate {
	if s.tls == nil {
		return nil
	}
	return s.tls.cert
}

// streamAbort ends a request's HTTP/2 stream for the venue's stream
// faults when a frame-level server serves it; false otherwise, and the
// venue drops the connection instead.
func streamAbort(*http.Request, venue.FaultKind) bool { return false }
