package venue

import (
	"context"
	"crypto/x509"
	"io"
	"log"
	"math"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/tradewire/tradewire/venue/internal/h2front"
)

// Server is a Venue served on a listener by Serve. It is safe for
// concurrent use.
type Server struct {
	// URL is the base URL to point a client at, without a trailing slash:
	// http://ADDR, or https://ADDR when served over TLS.
	URL string
	// CACertPEM is the PEM of the certificate authority that signed the
	// certificate a TLS server presents, which a client must trust (for the
	// CLI: --ca-cert FILE or SSL_CERT_FILE); nil without TLS.
	CACertPEM []byte
	// CA is the certificate authority of CACertPEM; nil without TLS.
	CA *x509.Certificate

	h2     *h2front.Server
	h1     *http.Server
	served sync.WaitGroup
}

// The HTTP/1.1 server's bounds: how long a request's headers may take and
// how long a connection may wait for its next request.
const (
	readHeaderTimeout  = 10 * time.Second
	idleTimeout        = 2 * time.Minute
	defaultBodyTimeout = 10 * time.Second
	shutdownGrace      = 5 * time.Second
)

// Serve serves v on ln until Close, and owns ln. Without TLS it serves
// HTTP/1.1. With TLS it mints a certificate authority (Server.CACertPEM)
// and a server certificate it signs, for 127.0.0.1, ::1 and localhost,
// and serves HTTP/2, as the real venue is served, or HTTP/1.1 to a client
// that cannot speak HTTP/2; it controls HTTP/2 at the frame level, so the
// stream faults (faultRefusedStream, faultProtocolError, faultGoAway) end
// the stream as they say. Either way a request's headers are checked
// before its body is read, a body must arrive within Config.BodyTimeout,
// and a body the venue leaves unread is not read at all. Serve panics if
// it cannot make a certificate.
func (v *Venue) Serve(ln net.Listener, tls bool) *Server {
	body := v.cfg.BodyTimeout
	if body <= 0 {
		body = defaultBodyTimeout
	}
	s := &Server{}
	if tls {
		opts := []h2front.Option{h2front.WithClock(v.e.clock), h2front.WithHTTP1(), h2front.WithBodyTimeout(body), h2front.WithRefused(v.e.refusedUnserved)}
		if n := v.cfg.MaxConcurrentStreams; n != 0 {
			opts = append(opts, h2front.WithMaxConcurrentStreams(uint32(min(max(n, 0), math.MaxUint32))))
		}
		s.h2 = h2front.NewServerListener(ln, v, opts...)
		s.URL, s.CACertPEM, s.CA = s.h2.URL, s.h2.CACertPEM(), s.h2.Certificate()
		return s
	}
	s.URL = "http://" + ln.Addr().String()
	s.h1 = &http.Server{
		Handler:           h2front.ReadBodyWithin(v, body),
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idleTimeout,
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	s.served.Add(1)
	go func() {
		defer s.served.Done()
		_ = s.h1.Serve(ln) // ends when Close closes ln
	}()
	return s
}

// Close stops the listener and ends every connection. Over HTTP/1.1 it
// first waits up to 5 seconds for the requests in flight to be answered;
// over TLS it ends the connections at once (ending the contexts of
// requests in flight) and waits for their handlers.
func (s *Server) Close() {
	if s.h2 != nil {
		s.h2.Close()
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if s.h1.Shutdown(ctx) != nil {
		_ = s.h1.Close()
	}
	s.served.Wait()
}

// faultRefusedUnserved is the Ledger's Fault for an HTTP/2 stream the
// TLS server refused before the venue saw it.
const faultRefusedUnserved = "refused_unserved"

// refusedUnserved records a stream the TLS server refused before serving
// it: a request that arrived and was neither judged nor answered.
func (v *engine) refusedUnserved(method, target string) {
	p, _, _ := strings.Cut(target, "?")
	v.ledger.add(Request{Time: v.now(), Method: method, Target: target, Dropped: true,
		Fault: faultRefusedUnserved, Class: classNames[classOf(method, p)]})
}

// streamAbort ends a request's HTTP/2 stream for the venue's stream
// faults when h2front serves it; false otherwise (in memory, HTTP/1.1),
// and the venue drops the connection instead.
func streamAbort(r *http.Request, k faultKind) bool {
	kinds := map[faultKind]h2front.Kind{
		faultRefusedStream: h2front.RefusedStream,
		faultProtocolError: h2front.ProtocolError,
		faultGoAway:        h2front.GoAway,
	}
	hk, ok := kinds[k]
	return ok && h2front.Abort(r, hk)
}
