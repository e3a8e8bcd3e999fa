package h2front

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// Kind is how a stream is ended instead of delivering the handler's
// answer.
type Kind int

const (
	// Deliver sends the handler's answer: the ordinary case.
	Deliver Kind = iota
	// RefusedStream ends the stream with RST_STREAM(REFUSED_STREAM), which
	// claims the request was not processed.
	RefusedStream
	// ProtocolError ends the stream with RST_STREAM(PROTOCOL_ERROR).
	ProtocolError
	// GoAway sends a graceful GOAWAY (NO_ERROR) whose last-stream-id is
	// below the stream's, claiming it was never processed, and closes the
	// connection once its other streams are answered.
	GoAway
)

// String returns the kind's name.
func (k Kind) String() string {
	switch k {
	case Deliver:
		return "deliver"
	case RefusedStream:
		return "RST_STREAM(REFUSED_STREAM)"
	case ProtocolError:
		return "RST_STREAM(PROTOCOL_ERROR)"
	case GoAway:
		return "GOAWAY"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Server serves an http.Handler over TLS + HTTP/2 (h2 via ALPN only) on a
// loopback listener. Create it with NewServer; it is safe for concurrent
// use.
type Server struct {
	// URL is the server's base URL, https://127.0.0.1:port, with no
	// trailing slash.
	URL string

	handler http.Handler
	ln      net.Listener
	tlsConf *tls.Config
	ca      *x509.Certificate // the authority that signed the server's certificate
	caPEM   []byte
	wg      sync.WaitGroup // the accept loop, every connection, every handler

	mu        sync.Mutex
	closed    bool
	conns     map[net.Conn]struct{}
	policies  map[string]*policy
	transport []*http.Transport
	clock     clockwork.Clock
	// maxStreams is the SETTINGS_MAX_CONCURRENT_STREAMS advertised and
	// enforced on every connection.
	maxStreams uint32
	// nconns and nstreams count the TLS connections accepted and the HTTP/2
	// streams the clients opened, served or refused.
	nconns, nstreams int

	// h1 serves the connections that negotiate HTTP/1.1 (WithHTTP1);
	// h1conns hands them to it.
	h1      *http.Server
	h1conns *connListener

	// bodyTimeout bounds how long a request's body may take to arrive
	// (default defaultBodyTimeout); netClock runs its timers (the real
	// clock: network time, whatever clock the handler's own time runs on).
	bodyTimeout time.Duration
	netClock    clockwork.Clock

	// refused, if set, is told of every stream refused before a handler
	// saw it (WithRefused).
	refused func(method, target string)
}

// defaultBodyTimeout is how long a request's body may take to arrive,
// from its headers (HTTP/2) or from the handler's start (HTTP/1.1): a
// read of it after that fails with an error whose Timeout method reports
// true, and once the handler has answered, the stream is reset (HTTP/2)
// or the connection closed (HTTP/1.1). headerTimeout bounds how long an
// HTTP/1.1 request's headers may take, idleTimeout how long an HTTP/1.1
// connection may wait for its next request.
const (
	defaultBodyTimeout = 10 * time.Second
	headerTimeout      = 10 * time.Second
	idleTimeout        = 2 * time.Minute
)

// Option configures a Server.
type Option func(*Server)

// WithClock sets the clock the Date header of an answer is read from when
// the handler set none (default: the real clock). Give it the clock the
// handler's own time runs on.
func WithClock(c clockwork.Clock) Option { return func(s *Server) { s.clock = c } }

// WithHTTP1 makes the server offer http/1.1 in ALPN after h2 and serve a
// connection that negotiates it, or that asks for no protocol at all,
// with net/http's own HTTP/1.1 server: for clients that cannot speak
// HTTP/2, as the real venue serves them. Such requests are answered as
// net/http answers them; Abort reports false for them and AbortMethod
// does not touch them, so stream faults stay HTTP/2's. A client that
// offers h2 still gets HTTP/2.
func WithHTTP1() Option {
	return func(s *Server) {
		s.h1conns = &connListener{addr: s.ln.Addr(), conns: make(chan net.Conn), done: make(chan struct{})}
		s.h1 = &http.Server{
			ReadHeaderTimeout: headerTimeout,
			IdleTimeout:       idleTimeout,
			ErrorLog:          log.New(io.Discard, "", 0),
		}
	}
}

// WithBodyTimeout sets how long a request's body may take to arrive
// (default 10 seconds).
func WithBodyTimeout(d time.Duration) Option { return func(s *Server) { s.bodyTimeout = d } }

// WithMaxConcurrentStreams sets the SETTINGS_MAX_CONCURRENT_STREAMS the
// server advertises on every new connection (default 100) and enforces: a
// stream opened while n are open on its connection is refused with
// RST_STREAM(REFUSED_STREAM) before any handler sees it. 0 refuses every
// stream, as a server shedding load may advertise; a client can still
// open one before it reads the server's SETTINGS.
func WithMaxConcurrentStreams(n uint32) Option { return func(s *Server) { s.maxStreams = n } }

// WithRefused makes the server call f with the method and
// request-target of every stream it refuses before a handler sees it: one
// opened beyond the concurrent streams allowed (WithMaxConcurrentStreams)
// or on a connection going away. f runs on the connection's read loop
// and must not block.
func WithRefused(f func(method, target string)) Option {
	return func(s *Server) { s.refused = f }
}

type policy struct {
	kind      Kind
	remaining int // < 0: every request
}

// NewServer starts a Server for h on 127.0.0.1 with a fresh certificate
// for 127.0.0.1, ::1 and localhost, signed by a fresh certificate
// authority (Certificate, CACertPEM). Like httptest.NewServer it
// panics if it cannot listen.
func NewServer(h http.Handler, opts ...Option) *Server {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic("h2front: listen: " + err.Error())
	}
	return NewServerListener(ln, h, opts...)
}

// NewServerListener is NewServer on a listener of the caller's, such as
// one on a fixed loopback port for `sim serve --tls`. The certificate
// covers 127.0.0.1, ::1 and localhost only; URL names ln's address. The
// Server owns ln and closes it in Close. It panics if it cannot make a
// certificate.
func NewServerListener(ln net.Listener, h http.Handler, opts ...Option) *Server {
	cert, ca, caPEM, err := mintCerts()
	if err != nil {
		ln.Close()
		panic("h2front: " + err.Error())
	}
	s := &Server{
		URL:         "https://" + ln.Addr().String(),
		handler:     h,
		ln:          ln,
		ca:          ca,
		caPEM:       caPEM,
		conns:       make(map[net.Conn]struct{}),
		policies:    make(map[string]*policy),
		clock:       clockwork.NewRealClock(),
		maxStreams:  maxConcurrentStreams,
		bodyTimeout: defaultBodyTimeout,
		netClock:    clockwork.NewRealClock(),
		tlsConf: &tls.Config{
			Certificates: []tls.Certificate{cert},
			NextProtos:   []string{http2.NextProtoTLS},
			MinVersion:   tls.VersionTLS12,
		},
	}
	for _, o := range opts {
		o(s)
	}
	if s.h1 != nil {
		s.h1.Handler = ReadBodyWithin(s.handler, s.bodyTimeout)
		s.tlsConf.NextProtos = append(s.tlsConf.NextProtos, "http/1.1")
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			_ = s.h1.Serve(s.h1conns) // ends when Close closes h1conns
		}()
	}
	s.wg.Add(1)
	go s.accept()
	return s
}

// Certificate returns the certificate authority a client must trust: the
// one that signed the server's certificate, minted with it for this
// Server alone.
func (s *Server) Certificate() *x509.Certificate { return s.ca }

// CACertPEM returns the certificate authority of Certificate in PEM form,
// for a client that is told where to find it (curl --cacert,
// SSL_CERT_FILE).
func (s *Server) CACertPEM() []byte { return bytes.Clone(s.caPEM) }

// Conns returns how many TLS connections the server has accepted.
func (s *Server) Conns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nconns
}

// Streams returns how many HTTP/2 streams clients have opened on the
// server, served or refused.
func (s *Server) Streams() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nstreams
}

// Client returns an *http.Client whose transport trusts the server's
// certificate authority (only), speaks HTTP/2 only and uses no proxy. Close closes its idle
// connections.
func (s *Server) Client() *http.Client {
	pool := x509.NewCertPool()
	pool.AddCert(s.ca)
	var protos http.Protocols
	protos.SetHTTP2(true)
	tr := &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		ForceAttemptHTTP2: true,
		Protocols:         &protos,
	}
	s.mu.Lock()
	s.transport = append(s.transport, tr)
	s.mu.Unlock()
	return &http.Client{Transport: tr}
}

// AbortMethod sets the server's policy for requests with method: the next
// times of them (every one when times is negative) are ended with k after
// their handler returns, as if the handler had called Abort(r, k). times
// 0, or k Deliver, removes the policy. A later call for the same method
// replaces the earlier one. A handler's own call to Abort takes precedence
// and does not use up the count.
func (s *Server) AbortMethod(method string, k Kind, times int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if times == 0 || k == Deliver {
		delete(s.policies, method)
		return
	}
	s.policies[method] = &policy{kind: k, remaining: times}
}

// decide returns how the policy ends a request with method.
func (s *Server) decide(method string) Kind {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.policies[method]
	if !ok {
		return Deliver
	}
	if p.remaining > 0 {
		p.remaining--
		if p.remaining == 0 {
			delete(s.policies, method)
		}
	}
	return p.kind
}

// Close stops the listener, closes every connection (ending the contexts
// of requests in flight) and waits for every goroutine the server started,
// handlers included. It also closes the idle connections of the clients
// made by Client.
func (s *Server) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.ln.Close()
	for nc := range s.conns {
		nc.Close()
	}
	transports := s.transport
	s.mu.Unlock()
	if s.h1 != nil {
		s.h1conns.Close()
		s.h1.Close()
	}
	s.wg.Wait()
	for _, tr := range transports {
		tr.CloseIdleConnections()
	}
}

type streamKey struct{}

// Abort, called by a handler served by a Server, makes the server end r's
// stream after the handler returns — so any side effect of the handler, a
// committed create, has happened — with RST_STREAM(REFUSED_STREAM),
// RST_STREAM(PROTOCOL_ERROR), or a GOAWAY whose last-stream-id is below
// the stream's (claiming it was never processed) followed by closing the
// connection. Whatever the handler wrote is discarded. Abort(r, Deliver)
// undoes an earlier call and overrides the server's AbortMethod policy.
//
// It reports false, and does nothing, if r is not served by a Server
// (HTTP/1.1, in memory), so the caller can fall back to another fault.
func Abort(r *http.Request, k Kind) bool {
	st, ok := r.Context().Value(streamKey{}).(*stream)
	if !ok {
		return false
	}
	st.mu.Lock()
	st.abort, st.chosen = k, true
	st.mu.Unlock()
	return true
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			nc.Close()
			return
		}
		s.conns[nc] = struct{}{}
		s.nconns++
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serveConn(nc)
	}
}

func (s *Server) serveConn(nc net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, nc)
		s.mu.Unlock()
		nc.Close()
	}()
	tc := tls.Server(nc, s.tlsConf)
	if err := tc.Handshake(); err != nil {
		return
	}
	state := tc.ConnectionState()
	if state.NegotiatedProtocol != http2.NextProtoTLS {
		if s.h1 != nil && (state.NegotiatedProtocol == "http/1.1" || state.NegotiatedProtocol == "") {
			s.h1conns.serve(tc)
		}
		return
	}
	preface := make([]byte, len(http2.ClientPreface))
	if _, err := io.ReadFull(tc, preface); err != nil || string(preface) != http2.ClientPreface {
		return
	}
	c := newConn(s, tc, &state)
	c.serve()
}

// conn is one HTTP/2 connection.
type conn struct {
	srv   *Server
	tc    *tls.Conn
	state *tls.ConnectionState
	raddr string // tc's remote address, printed once for every request
	fr    *http2.Framer
	ctx   context.Context
	stop  context.CancelFunc

	// wmu serialises frame writes and the header encoder. The framer
	// writes into bw, which each write flushes: the frames written under
	// one hold of wmu go out in one write to the connection.
	wmu  sync.Mutex
	bw   *bufio.Writer
	henc *hpack.Encoder
	hbuf bytes.Buffer

	mu            sync.Mutex
	cond          *sync.Cond // window changes, stream resets, close
	closed        bool
	goingAway     bool
	sendWindow    int64  // connection-level window for our DATA
	initialWindow int64  // the peer's SETTINGS_INITIAL_WINDOW_SIZE
	maxFrame      uint32 // the peer's SETTINGS_MAX_FRAME_SIZE
	maxStreamID   uint32
	streams       map[uint32]*stream
	// recvOwed is the connection-level receive window consumed and not
	// yet given back; only the serve loop touches it.
	recvOwed uint32
	handlers sync.WaitGroup
}

func newConn(s *Server, tc *tls.Conn, state *tls.ConnectionState) *conn {
	ctx, stop := context.WithCancel(context.Background())
	bw := bufio.NewWriterSize(tc, writeBufferSize)
	c := &conn{
		srv:           s,
		tc:            tc,
		state:         state,
		raddr:         tc.RemoteAddr().String(),
		bw:            bw,
		fr:            http2.NewFramer(bw, tc),
		ctx:           ctx,
		stop:          stop,
		sendWindow:    65535,
		initialWindow: 65535,
		maxFrame:      16384,
		streams:       make(map[uint32]*stream),
	}
	c.cond = sync.NewCond(&c.mu)
	c.henc = hpack.NewEncoder(&c.hbuf)
	c.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	return c
}

const maxConcurrentStreams = 100

// initialWindow is a stream's receive window, the protocol's default,
// which the server never raises.
const initialWindow = 65535

// connRefresh is how much of the connection's receive window (65,535,
// never raised) may be owed before it is given back.
const connRefresh = 16 << 10

// writeBufferSize holds a response's HEADERS and its first DATA frame of
// the default maximum size, so that a small answer is one write.
const writeBufferSize = 32 << 10

func (c *conn) serve() {
	defer c.shutdown()
	if err := c.write(func(fr *http2.Framer) error {
		return fr.WriteSettings(http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: c.srv.maxStreams})
	}); err != nil {
		return
	}
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
			var se http2.StreamError
			if errors.As(err, &se) {
				c.resetStream(se.StreamID, se.Code)
				continue
			}
			var ce http2.ConnectionError
			if errors.As(err, &ce) {
				c.mu.Lock()
				last := c.maxStreamID
				c.mu.Unlock()
				c.write(func(fr *http2.Framer) error { return fr.WriteGoAway(last, http2.ErrCode(ce), nil) })
			}
			return
		}
		if err := c.handleFrame(f); err != nil {
			return
		}
	}
}

func (c *conn) handleFrame(f http2.Frame) error {
	switch f := f.(type) {
	case *http2.SettingsFrame:
		if f.IsAck() {
			return nil
		}
		var tableSize uint32
		var hasTableSize bool
		c.mu.Lock()
		err := f.ForeachSetting(func(st http2.Setting) error {
			switch st.ID {
			case http2.SettingInitialWindowSize:
				delta := int64(st.Val) - c.initialWindow
				c.initialWindow = int64(st.Val)
				for _, s := range c.streams {
					s.sendWindow += delta
				}
			case http2.SettingMaxFrameSize:
				c.maxFrame = st.Val
			case http2.SettingHeaderTableSize:
				tableSize, hasTableSize = st.Val, true
			}
			return nil
		})
		c.cond.Broadcast()
		c.mu.Unlock()
		if err != nil {
			return err
		}
		return c.write(func(fr *http2.Framer) error {
			if hasTableSize {
				c.henc.SetMaxDynamicTableSizeLimit(tableSize)
			}
			return fr.WriteSettingsAck()
		})
	case *http2.MetaHeadersFrame:
		return c.handleHeaders(f)
	case *http2.DataFrame:
		n := f.Header().Length
		data := f.Data()
		c.mu.Lock()
		st := c.streams[f.StreamID]
		c.mu.Unlock()
		// The connection's window is given back once connRefresh is owed:
		// what a stream holds unread is bounded by its own window, which
		// is given back as the handler reads (bodyBuffer.Read), so a
		// handler that reads no body holds at most one window of it. A
		// small request's body costs no write of its own.
		c.recvOwed += n
		pad := n - uint32(len(data)) // padding is given back at once
		if c.recvOwed >= connRefresh || (pad > 0 && st != nil) {
			owed := c.recvOwed
			c.recvOwed = 0
			err := c.write(func(fr *http2.Framer) error {
				if err := fr.WriteWindowUpdate(0, owed); err != nil {
					return err
				}
				if pad > 0 && st != nil && !f.StreamEnded() {
					return fr.WriteWindowUpdate(f.StreamID, pad)
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
		if st != nil {
			if !st.body.write(data, int64(n)) {
				// More than the window the stream was given.
				st.body.closeWithError(errFlowControl)
				return c.resetStream(f.StreamID, http2.ErrCodeFlowControl)
			}
			if f.StreamEnded() {
				st.endBody()
			}
		}
	case *http2.WindowUpdateFrame:
		c.mu.Lock()
		if f.StreamID == 0 {
			c.sendWindow += int64(f.Increment)
		} else if st, ok := c.streams[f.StreamID]; ok {
			st.sendWindow += int64(f.Increment)
		}
		c.cond.Broadcast()
		c.mu.Unlock()
	case *http2.PingFrame:
		if !f.IsAck() {
			data := f.Data
			return c.write(func(fr *http2.Framer) error { return fr.WritePing(true, data) })
		}
	case *http2.RSTStreamFrame:
		c.mu.Lock()
		if st, ok := c.streams[f.StreamID]; ok {
			st.reset = true
			st.cancel()
			st.body.closeWithError(errStreamReset)
		}
		c.cond.Broadcast()
		c.mu.Unlock()
	case *http2.GoAwayFrame:
		return errClientGoAway
	}
	// PRIORITY, PUSH_PROMISE and unknown frames are ignored.
	return nil
}

var (
	errFlowControl  = errors.New("h2front: the client sent more than the stream's window")
	errStreamReset  = errors.New("h2front: stream reset by the client")
	errConnClosed   = errors.New("h2front: connection closed")
	errClientGoAway = errors.New("h2front: client sent GOAWAY")
)

func (c *conn) handleHeaders(f *http2.MetaHeadersFrame) error {
	id := f.StreamID
	c.mu.Lock()
	if st, ok := c.streams[id]; ok {
		// Trailers: their fields are dropped, the body ends.
		c.mu.Unlock()
		if f.StreamEnded() {
			st.endBody()
		}
		return nil
	}
	if id%2 == 0 || id <= c.maxStreamID {
		last := c.maxStreamID
		c.mu.Unlock()
		c.write(func(fr *http2.Framer) error { return fr.WriteGoAway(last, http2.ErrCodeProtocol, nil) })
		return errors.New("h2front: bad stream id")
	}
	c.maxStreamID = id
	goingAway := c.goingAway
	full := uint32(len(c.streams)) >= c.srv.maxStreams
	c.mu.Unlock()
	c.srv.mu.Lock()
	c.srv.nstreams++
	c.srv.mu.Unlock()
	if goingAway || full {
		// Truthfully never processed.
		if c.srv.refused != nil {
			c.srv.refused(f.PseudoValue("method"), f.PseudoValue("path"))
		}
		return c.resetStream(id, http2.ErrCodeRefusedStream)
	}

	path := f.PseudoValue("path")
	u, err := url.ParseRequestURI(path)
	method := f.PseudoValue("method")
	if err != nil || method == "" {
		return c.resetStream(id, http2.ErrCodeProtocol)
	}
	header := make(http.Header)
	for _, hf := range f.RegularFields() {
		header.Add(http.CanonicalHeaderKey(hf.Name), hf.Value)
	}
	if cookies := header.Values("Cookie"); len(cookies) > 1 {
		header.Set("Cookie", strings.Join(cookies, "; "))
	}
	ctx, cancel := context.WithCancel(c.ctx)
	st := &stream{id: id, cancel: cancel, body: newBodyBuffer(initialWindow)}
	req := &http.Request{
		Method:     method,
		URL:        u,
		Proto:      "HTTP/2.0",
		ProtoMajor: 2,
		Header:     header,
		Host:       f.PseudoValue("authority"),
		RemoteAddr: c.raddr,
		RequestURI: path,
		TLS:        c.state,
	}
	if f.StreamEnded() {
		req.Body = http.NoBody
		st.endBody()
	} else {
		st.body.refund = func(n uint32) {
			c.write(func(fr *http2.Framer) error { return fr.WriteWindowUpdate(id, n) })
		}
		st.timer = c.srv.netClock.AfterFunc(c.srv.bodyTimeout, func() { st.body.closeWithError(errBodyTimeout) })
		req.Body = st.body
		req.ContentLength = -1
		if cl, err := strconv.ParseInt(header.Get("Content-Length"), 10, 64); err == nil && cl >= 0 {
			req.ContentLength = cl
		}
	}
	req = req.WithContext(context.WithValue(ctx, streamKey{}, st))

	c.mu.Lock()
	st.sendWindow = c.initialWindow
	c.streams[id] = st
	c.handlers.Add(1)
	c.mu.Unlock()
	c.srv.wg.Add(1)
	go c.runHandler(st, req)
	return nil
}

// stream is one request and its answer.
type stream struct {
	id     uint32
	cancel context.CancelFunc
	body   *bodyBuffer
	// timer ends a body that takes longer than the server's bodyTimeout;
	// nil for a request without one. Set before the handler starts.
	timer clockwork.Timer
	// ended is set by the serve loop when the client has ended the body.
	ended atomic.Bool

	// Guarded by conn.mu.
	sendWindow int64
	reset      bool

	mu     sync.Mutex
	abort  Kind
	chosen bool // Abort was called
}

func (c *conn) runHandler(st *stream, req *http.Request) {
	defer c.srv.wg.Done()
	defer c.handlers.Done()
	rw := &responseWriter{header: make(http.Header)}
	panicked := func() (panicked bool) {
		defer func() {
			if recover() != nil {
				panicked = true
			}
		}()
		c.srv.handler.ServeHTTP(rw, req)
		return false
	}()
	st.mu.Lock()
	kind, chosen := st.abort, st.chosen
	st.mu.Unlock()
	if !chosen {
		kind = c.srv.decide(req.Method)
	}
	c.mu.Lock()
	reset := st.reset
	c.mu.Unlock()
	switch {
	case reset:
		// The client gave up on the stream: nothing more to say on it.
	case panicked:
		c.resetStream(st.id, http2.ErrCodeInternal)
	case kind == RefusedStream:
		c.resetStream(st.id, http2.ErrCodeRefusedStream)
	case kind == ProtocolError:
		c.resetStream(st.id, http2.ErrCodeProtocol)
	case kind == GoAway:
		last := uint32(0)
		if st.id > 2 {
			last = st.id - 2
		}
		c.mu.Lock()
		c.goingAway = true
		c.mu.Unlock()
		c.write(func(fr *http2.Framer) error {
			return fr.WriteGoAway(last, http2.ErrCodeNo, []byte("h2front: stream aborted"))
		})
	default:
		if err := c.writeResponse(st, req, rw); err != nil && !errors.Is(err, errStreamReset) {
			c.tc.Close()
		} else if err == nil && !st.ended.Load() {
			// Answered before the client sent its whole body: ask it to
			// stop sending, without error (RFC 9113, section 8.1).
			c.resetStream(st.id, http2.ErrCodeNo)
		}
	}
	c.removeStream(st)
}

// endBody marks st's body complete: the client sent END_STREAM.
func (st *stream) endBody() {
	st.ended.Store(true)
	st.body.closeWithError(io.EOF)
	if st.timer != nil {
		st.timer.Stop()
	}
}

// removeStream forgets st; on a connection going away, the last stream to
// go closes the connection for writing, so the client reads the GOAWAY and
// then the end of the connection.
func (c *conn) removeStream(st *stream) {
	st.cancel()
	st.body.closeWithError(errStreamDone)
	if st.timer != nil {
		st.timer.Stop()
	}
	c.mu.Lock()
	delete(c.streams, st.id)
	done := c.goingAway && len(c.streams) == 0 && !c.closed
	c.mu.Unlock()
	if done {
		c.wmu.Lock()
		c.tc.CloseWrite()
		c.wmu.Unlock()
	}
}

var errStreamDone = errors.New("h2front: handler returned")

func (c *conn) resetStream(id uint32, code http2.ErrCode) error {
	return c.write(func(fr *http2.Framer) error { return fr.WriteRSTStream(id, code) })
}

// write runs fn with the framer, one writer at a time, and sends what it
// wrote in one write to the connection.
func (c *conn) write(fn func(*http2.Framer) error) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	err := fn(c.fr) // the framer writes each frame whole, or not at all
	if ferr := c.bw.Flush(); err == nil {
		err = ferr
	}
	return err
}

// hopHeaders are connection-specific and must not appear in HTTP/2.
var hopHeaders = map[string]bool{
	"connection": true, "keep-alive": true, "proxy-connection": true,
	"transfer-encoding": true, "upgrade": true, "content-length": true,
}

func (c *conn) writeResponse(st *stream, req *http.Request, rw *responseWriter) error {
	status := rw.status
	if status == 0 {
		status = http.StatusOK
	}
	body := rw.body.Bytes()
	bodyAllowed := req.Method != http.MethodHead && status != http.StatusNoContent && status != http.StatusNotModified
	if !bodyAllowed {
		body = nil
	}
	if rw.header.Get("Content-Type") == "" && len(body) > 0 {
		rw.header.Set("Content-Type", http.DetectContentType(body))
	}
	if rw.header.Get("Date") == "" {
		rw.header.Set("Date", c.srv.clock.Now().UTC().Format(http.TimeFormat))
	}
	c.mu.Lock()
	maxFrame := int(c.maxFrame)
	c.mu.Unlock()

	err := c.write(func(fr *http2.Framer) error {
		c.hbuf.Reset()
		enc := func(name, value string) { c.henc.WriteField(hpack.HeaderField{Name: name, Value: value}) }
		enc(":status", strconv.Itoa(status))
		for k, vs := range rw.header {
			lk := strings.ToLower(k)
			if hopHeaders[lk] {
				continue
			}
			for _, v := range vs {
				enc(lk, v)
			}
		}
		if bodyAllowed || req.Method == http.MethodHead {
			enc("content-length", strconv.Itoa(rw.body.Len()))
		}
		block := c.hbuf.Bytes()
		first := block[:min(len(block), maxFrame)]
		rest := block[len(first):]
		if err := fr.WriteHeaders(http2.HeadersFrameParam{
			StreamID: st.id, BlockFragment: first, EndStream: len(body) == 0, EndHeaders: len(rest) == 0,
		}); err != nil {
			return err
		}
		for len(rest) > 0 {
			chunk := rest[:min(len(rest), maxFrame)]
			rest = rest[len(chunk):]
			if err := fr.WriteContinuation(st.id, len(rest) == 0, chunk); err != nil {
				return err
			}
		}
		// As much of the body as the windows take now goes in the same
		// write as the headers.
		for len(body) > 0 {
			n, err := c.takeWindow(st, len(body), false)
			if err != nil || n == 0 {
				return err
			}
			chunk := body[:n]
			body = body[n:]
			if err := fr.WriteData(st.id, len(body) == 0, chunk); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for len(body) > 0 {
		n, err := c.takeWindow(st, len(body), true)
		if err != nil {
			return err
		}
		chunk := body[:n]
		body = body[n:]
		end := len(body) == 0
		if err := c.write(func(fr *http2.Framer) error { return fr.WriteData(st.id, end, chunk) }); err != nil {
			return err
		}
	}
	return nil
}

// takeWindow takes from the connection's and st's send windows the room
// for the next DATA frame of up to want bytes, and returns its size. If
// wait, it waits for room; otherwise it returns 0 when there is none.
func (c *conn) takeWindow(st *stream, want int, wait bool) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for wait && !c.closed && !st.reset && (c.sendWindow <= 0 || st.sendWindow <= 0) {
		c.cond.Wait()
	}
	if c.closed {
		return 0, errConnClosed
	}
	if st.reset {
		return 0, errStreamReset
	}
	n := int(max(0, min(int64(want), c.sendWindow, st.sendWindow, int64(c.maxFrame))))
	c.sendWindow -= int64(n)
	st.sendWindow -= int64(n)
	return n, nil
}

// shutdown ends the connection: every request's context, every body
// still being read, every writer waiting for a window. It waits for the
// connection's handlers.
func (c *conn) shutdown() {
	c.mu.Lock()
	c.closed = true
	for _, st := range c.streams {
		st.cancel()
		st.body.closeWithError(errConnClosed)
	}
	c.cond.Broadcast()
	c.mu.Unlock()
	c.stop()
	c.tc.Close()
	c.handlers.Wait()
}

// responseWriter buffers a handler's answer whole.
type responseWriter struct {
	header      http.Header
	status      int
	wroteHeader bool
	body        bytes.Buffer
}

func (w *responseWriter) Header() http.Header { return w.header }

func (w *responseWriter) WriteHeader(code int) {
	if w.wroteHeader || code < 200 {
		return
	}
	w.status, w.wroteHeader = code, true
}

func (w *responseWriter) Write(p []byte) (int, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	return w.body.Write(p)
}

// bodyBuffer is a request body fed by the connection's reader without
// blocking it. It holds at most the stream's receive window: the window
// is given back to the client (refund) as the handler reads.
type bodyBuffer struct {
	mu     sync.Mutex
	cond   *sync.Cond
	buf    []byte
	err    error
	window int64          // what the client may still send
	refund func(n uint32) // gives n bytes of window back; nil: never needed
}

func newBodyBuffer(window int64) *bodyBuffer {
	b := &bodyBuffer{window: window}
	b.cond = sync.NewCond(&b.mu)
	return b
}

// write adds p, a DATA frame of length bytes (padding included) to the
// body. It reports false if the frame exceeds the stream's window.
func (b *bodyBuffer) write(p []byte, length int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.window -= length
	if b.window < 0 {
		return false
	}
	b.window += length - int64(len(p)) // the padding is given back at once
	if b.err == nil {
		b.buf = append(b.buf, p...)
	}
	b.cond.Broadcast()
	return true
}

func (b *bodyBuffer) closeWithError(err error) {
	b.mu.Lock()
	if b.err == nil {
		b.err = err
	}
	b.cond.Broadcast()
	b.mu.Unlock()
}

// Read implements io.Reader. What it takes from the buffer is given back
// to the client as window while the body is still arriving.
func (b *bodyBuffer) Read(p []byte) (int, error) {
	b.mu.Lock()
	for len(b.buf) == 0 && b.err == nil {
		b.cond.Wait()
	}
	if len(b.buf) > 0 {
		n := copy(p, b.buf)
		b.buf = b.buf[n:]
		refund := b.err == nil && b.refund != nil
		if refund {
			b.window += int64(n)
		}
		b.mu.Unlock()
		if refund {
			b.refund(uint32(n))
		}
		return n, nil
	}
	err := b.err
	b.mu.Unlock()
	return 0, err
}

// Close implements io.Closer.
func (b *bodyBuffer) Close() error {
	b.closeWithError(errors.New("h2front: read on closed body"))
	return nil
}

// errBodyTimeout ends a body that did not arrive within the server's
// bodyTimeout.
var errBodyTimeout error = timeoutError{}

type timeoutError struct{}

func (timeoutError) Error() string   { return "h2front: request body not received in time" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

// ReadBodyWithin wraps h, for net/http's HTTP/1.1 server, so that a
// request's body must arrive within d of the handler's start: a read after
// that fails with an error whose Timeout method reports true. A body the
// handler leaves unread is not read after it returns (net/http would read
// up to 256 KiB of it to reuse the connection): the connection closes
// after the answer. A request without a body is left alone, so that a
// handler's own long wait does not end its request's context.
func ReadBodyWithin(h http.Handler, d time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
			h.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		wall := clockwork.NewRealClock() // a socket deadline is on the system's clock
		if rc.SetReadDeadline(wall.Now().Add(d)) != nil {
			h.ServeHTTP(w, r) // not net/http's own writer: nothing to bound
			return
		}
		body := &deadlineBody{ReadCloser: r.Body, rc: rc}
		r2 := *r // net/http still reads r.Body, its own, once h returns
		r2.Body = body
		h.ServeHTTP(w, &r2)
		if body.eof {
			return
		}
		// Unread: one more byte, if the client is sending, marks the body
		// too large (http.MaxBytesReader), on which net/http answers, reads
		// no more and closes the connection without resetting it; the
		// deadline after that makes any read of the rest fail at once.
		rc.SetReadDeadline(wall.Now().Add(unreadWait))
		if n, _ := http.MaxBytesReader(w, body, 0).Read(make([]byte, 1)); n == 0 && body.eof {
			return // it was whole after all
		}
		rc.SetReadDeadline(time.Unix(1, 0))
	})
}

// unreadWait is how long ReadBodyWithin waits for a byte of a body the
// handler left unread.
const unreadWait = 50 * time.Millisecond

// deadlineBody lifts the read deadline once the body is read whole, so
// that net/http's watch for the client going away, which starts then,
// does not take the deadline for a disconnect.
type deadlineBody struct {
	io.ReadCloser
	rc  *http.ResponseController
	eof bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.eof {
		b.eof = true
		b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

// mintCerts makes a fresh certificate authority and a server certificate
// it signs for 127.0.0.1, ::1 and localhost. It returns the server's
// certificate (the leaf, served alone), the authority parsed and in PEM:
// a client trusts the authority. The leaf is an end entity (CA:FALSE, no
// keyCertSign), as strict verifiers such as rustls require of a server's
// certificate; the authority signs certificates and nothing else.
func mintCerts() (tls.Certificate, *x509.Certificate, []byte, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, nil, err
	}
	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, nil, err
	}
	limit := new(big.Int).Lsh(big.NewInt(1), 62)
	caSerial, err := rand.Int(rand.Reader, limit)
	if err != nil {
		return tls.Certificate{}, nil, nil, err
	}
	leafSerial, err := rand.Int(rand.Reader, limit)
	if err != nil {
		return tls.Certificate{}, nil, nil, err
	}
	// A client checks the validity on its own clock, whatever the
	// handler's time is: a window wide enough for any clock a test or a
	// simulation runs on.
	notBefore := time.Date(2000, time.January, 1, 0, 0, 0, 0, time.UTC)
	notAfter := time.Date(2099, time.December, 31, 0, 0, 0, 0, time.UTC)
	caTmpl := &x509.Certificate{
		SerialNumber:          caSerial,
		Subject:               pkix.Name{Organization: []string{"tradewire h2front"}, CommonName: "tradewire h2front local CA"},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return tls.Certificate{}, nil, nil, fmt.Errorf("CA certificate: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return tls.Certificate{}, nil, nil, err
	}
	leafTmpl := &x509.Certificate{
		SerialNumber:          leafSerial,
		Subject:               pkix.Name{Organization: []string{"tradewire h2front"}, CommonName: "localhost"},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageDigitalSignature, // an ECDSA key: no key encipherment
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  false,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		DNSNames:              []string{"localhost"},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, ca, &leafKey.PublicKey, caKey)
	if err != nil {
		return tls.Certificate{}, nil, nil, fmt.Errorf("server certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(leafDER)
	if err != nil {
		return tls.Certificate{}, nil, nil, err
	}
	cert := tls.Certificate{Certificate: [][]byte{leafDER}, PrivateKey: leafKey, Leaf: leaf}
	return cert, ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), nil
}

// connListener is the net.Listener through which serveConn hands the
// HTTP/1.1 connections to net/http's server (WithHTTP1).
type connListener struct {
	addr  net.Addr
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

// serve hands tc to the HTTP/1.1 server and returns when the server has
// closed it, or at once if the listener is closed.
func (l *connListener) serve(tc *tls.Conn) {
	c := &trackedConn{Conn: tc, closed: make(chan struct{})}
	select {
	case l.conns <- c:
	case <-l.done:
		return
	}
	select {
	case <-c.closed:
	case <-l.done:
	}
}

func (l *connListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *connListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *connListener) Addr() net.Addr { return l.addr }

// trackedConn tells serve when net/http's server has closed it.
type trackedConn struct {
	net.Conn
	once   sync.Once
	closed chan struct{}
}

func (c *trackedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { close(c.closed) })
	return err
}
