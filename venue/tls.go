package brokertest

import (
	"crypto/x509"
	"net/http"

	"github.com/tradewire/tradewire/internal/h2front"
)

// tlsFront is the TLS + HTTP/2 listener of a NewTLSServer.
type tlsFront struct {
	close func()
	caPEM []byte
	cert  *x509.Certificate // the authority
}

// NewTLSServer starts a Server served over TLS with HTTP/2 on a loopback
// address, as the real venue is served, and sets URL to it
// (https://127.0.0.1:port). Its certificate, for 127.0.0.1, ::1 and
// localhost, is signed by a certificate authority minted with it
// (CACertPEM, Certificate); Transport speaks HTTP/2 to it and trusts only
// that authority. The server controls
// HTTP/2 at the frame level, so the stream faults (FaultRefusedStream,
// FaultProtocolError, FaultGoAway) end the stream as they say. Like
// httptest.NewTLSServer it panics if it cannot start, including on an
// invalid Option. Call Close when done.
func NewTLSServer(opts ...Option) *Server {
	s, err := New(opts...)
	if err != nil {
		panic(err)
	}
	hs := h2front.NewServer(s.v, h2front.WithClock(s.v.clock))
	s.URL = hs.URL
	s.rt = hs.Client().Transport
	s.tls = &tlsFront{close: hs.Close, cert: hs.Certificate(), caPEM: hs.CACertPEM()}
	return s
}

// CACertPEM returns the PEM of the certificate authority that signed the
// certificate a NewTLSServer presents, which a client must trust (for the
// CLI: --ca-cert FILE or SSL_CERT_FILE), or nil for a Server without TLS.
func (s *Server) CACertPEM() []byte {
	if s.tls == nil {
		return nil
	}
	return append([]byte(nil), s.tls.caPEM...)
}

// Certificate returns the certificate authority of CACertPEM, or nil for a
// Server without TLS.
func (s *Server) Certificate() *x509.Certificate {
	if s.tls == nil {
		return nil
	}
	return s.tls.cert
}

// streamAbort ends a request's HTTP/2 stream for the venue's stream
// faults when h2front serves it; false otherwise (in memory, HTTP/1.1),
// and the venue drops the connection instead.
func streamAbort(r *http.Request, k FaultKind) bool {
	kinds := map[FaultKind]h2front.Kind{
		FaultRefusedStream: h2front.RefusedStream,
		FaultProtocolError: h2front.ProtocolError,
		FaultGoAway:        h2front.GoAway,
	}
	hk, ok := kinds[k]
	return ok && h2front.Abort(r, hk)
}
