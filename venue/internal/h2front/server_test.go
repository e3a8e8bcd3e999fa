package h2front

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

func setup(t *testing.T, h http.Handler) *Server {
	t.Helper()
	s := NewServer(h)
	t.Cleanup(s.Close)
	return s
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func echo(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("X-Proto", r.Proto)
	w.Header().Set("X-Method", r.Method)
	w.Header().Set("X-Target", r.RequestURI)
	w.Header().Set("X-Length", fmt.Sprint(r.ContentLength))
	w.WriteHeader(http.StatusCreated)
	w.Write(body)
}

func TestGetRoundTrip(t *testing.T) {
	t.Parallel()
	s := setup(t, http.HandlerFunc(echo))
	req, _ := http.NewRequestWithContext(testContext(t), http.MethodGet, s.URL+"/api/v2/x/?a=1&b=%2C", nil)
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.ProtoMajor != 2 || resp.StatusCode != http.StatusCreated || len(body) != 0 {
		t.Fatalf("got %s %d %q, want HTTP/2 201 and no body", resp.Proto, resp.StatusCode, body)
	}
	if got := resp.Header.Get("X-Proto"); got != "HTTP/2.0" {
		t.Errorf("server saw %q, want HTTP/2.0", got)
	}
	if got := resp.Header.Get("X-Target"); got != "/api/v2/x/?a=1&b=%2C" {
		t.Errorf("server saw target %q", got)
	}
	if resp.Header.Get("Date") == "" {
		t.Error("no Date header")
	}
}

func TestPostBodies(t *testing.T) {
	t.Parallel()
	s := setup(t, http.HandlerFunc(echo))
	c := s.Client()
	// Sizes across the client's and server's default windows (65535) and
	// the frame size (16384).
	for _, n := range []int{1, 16384, 16385, 70000, 1 << 20} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			want := bytes.Repeat([]byte("0123456789abcdef"), n/16+1)[:n]
			req, _ := http.NewRequestWithContext(testContext(t), http.MethodPost, s.URL+"/orders/", bytes.NewReader(want))
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			got, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("echoed %d bytes, want %d", len(got), len(want))
			}
			if resp.ContentLength != int64(n) || resp.Header.Get("X-Length") != fmt.Sprint(n) {
				t.Errorf("content length %d, server saw %s; want %d", resp.ContentLength, resp.Header.Get("X-Length"), n)
			}
		})
	}
}

func TestLargeHeaders(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("v", 40000) // more than two frames of header block
	s := setup(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Echo", r.Header.Get("X-Big"))
	}))
	req, _ := http.NewRequestWithContext(testContext(t), http.MethodGet, s.URL+"/", nil)
	req.Header.Set("X-Big", big)
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Header.Get("X-Echo") != big {
		t.Fatalf("echoed header of %d bytes, want %d", len(resp.Header.Get("X-Echo")), len(big))
	}
}

func TestConcurrentStreams(t *testing.T) {
	t.Parallel()
	var inFlight, peak atomic.Int32
	release := make(chan struct{})
	s := setup(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		if n == 20 {
			close(release)
		}
		<-release
		inFlight.Add(-1)
		echo(w, r)
	}))
	c := s.Client()
	ctx := testContext(t)
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := range 20 {
		wg.Go(func() {
			want := fmt.Sprintf("body %d", i)
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/", strings.NewReader(want))
			resp, err := c.Do(req)
			if err != nil {
				errs <- err
				return
			}
			defer resp.Body.Close()
			got, _ := io.ReadAll(resp.Body)
			if string(got) != want || resp.ProtoMajor != 2 {
				errs <- fmt.Errorf("got %s %q, want HTTP/2 %q", resp.Proto, got, want)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if peak.Load() < 20 {
		t.Errorf("peak %d handlers at once, want 20", peak.Load())
	}
}

// TestAbortKinds: each kind is observed by the client as that frame, after
// the handler ran, and a client that may replay (the request built with
// GetBody, as http.NewRequest does for a bytes.Reader) does so.
func TestAbortKinds(t *testing.T) {
	t.Parallel()
	for _, k := range []Kind{RefusedStream, ProtocolError, GoAway} {
		t.Run(k.String(), func(t *testing.T) {
			t.Parallel()
			var calls atomic.Int32
			s := setup(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if calls.Add(1) == 1 && !Abort(r, k) {
					t.Error("Abort reported false on an h2front request")
				}
				echo(w, r)
			}))
			ctx := testContext(t)

			// A body the client cannot rewind: the abort reaches the caller.
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/", io.NopCloser(strings.NewReader("x")))
			req.ContentLength = 1
			resp, err := s.Client().Do(req)
			if err == nil {
				resp.Body.Close()
				t.Fatalf("got %d, want an error", resp.StatusCode)
			}
			if !strings.Contains(err.Error(), wantErr[k]) {
				t.Errorf("error %q does not mention %q", err, wantErr[k])
			}
			if n := calls.Load(); n != 1 {
				t.Errorf("handler ran %d times, want 1", n)
			}

			// A body with GetBody: net/http replays the POST by itself.
			calls.Store(0)
			req, _ = http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/", bytes.NewReader([]byte("x")))
			resp, err = s.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if n := calls.Load(); n != 2 {
				t.Errorf("handler ran %d times, want 2 (one replay by net/http)", n)
			}
		})
	}
}

var wantErr = map[Kind]string{
	RefusedStream: "REFUSED_STREAM",
	ProtocolError: "PROTOCOL_ERROR",
	GoAway:        "GOAWAY",
}

func TestAbortMethodPolicy(t *testing.T) {
	t.Parallel()
	var posts, gets atomic.Int32
	s := setup(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			posts.Add(1)
		} else {
			gets.Add(1)
		}
	}))
	s.AbortMethod(http.MethodPost, RefusedStream, 2)
	ctx := testContext(t)
	c := s.Client()
	do := func(method string) error {
		req, _ := http.NewRequestWithContext(ctx, method, s.URL+"/", nil)
		if method == http.MethodPost {
			req.Body = io.NopCloser(strings.NewReader("{}"))
			req.ContentLength = 2
		}
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	if err := do(http.MethodGet); err != nil {
		t.Fatalf("GET: %v", err)
	}
	for i := range 2 {
		if err := do(http.MethodPost); err == nil {
			t.Fatalf("POST %d: no error, want REFUSED_STREAM", i+1)
		}
	}
	if err := do(http.MethodPost); err != nil {
		t.Fatalf("third POST (policy used up): %v", err)
	}
	if posts.Load() != 3 || gets.Load() != 1 {
		t.Errorf("server saw %d POSTs and %d GETs, want 3 and 1", posts.Load(), gets.Load())
	}
}

func TestAbortOutsideServer(t *testing.T) {
	t.Parallel()
	r, _ := http.NewRequest(http.MethodPost, "http://example.test/", nil)
	if Abort(r, RefusedStream) {
		t.Fatal("Abort reported true for a request not served by a Server")
	}
}

func TestHandlerSeesClientCancel(t *testing.T) {
	t.Parallel()
	ended := make(chan error, 1)
	started := make(chan struct{})
	s := setup(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-r.Context().Done()
		ended <- r.Context().Err()
	}))
	ctx, cancel := context.WithCancel(testContext(t))
	go func() { <-started; cancel() }()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/", nil)
	if resp, err := s.Client().Do(req); err == nil {
		resp.Body.Close()
		t.Fatal("want an error")
	}
	select {
	case err := <-ended:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("handler's context ended with %v", err)
		}
	case <-testContext(t).Done():
		t.Fatal("handler's context never ended after the client's RST_STREAM")
	}
}

func TestCloseEndsHandlers(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	s := NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-r.Context().Done()
	}))
	errc := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(testContext(t), http.MethodGet, s.URL+"/", nil)
		resp, err := s.Client().Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	<-started
	s.Close() // returns only once the handler has
	if err := <-errc; err == nil {
		t.Error("request succeeded across Close")
	}
	s.Close() // idempotent
}

func TestHTTP1Refused(t *testing.T) {
	t.Parallel()
	s := setup(t, http.HandlerFunc(echo))
	pool := x509.NewCertPool()
	pool.AddCert(s.Certificate())
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, NextProtos: []string{"http/1.1"}}}}
	req, _ := http.NewRequestWithContext(testContext(t), http.MethodGet, s.URL+"/", nil)
	if resp, err := c.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("HTTP/1.1 client got %s %d, want a failed handshake", resp.Proto, resp.StatusCode)
	}
}

// TestWithHTTP1 serves an HTTP/1.1 client (ALPN http/1.1, or no ALPN at
// all) beside an HTTP/2 one; stream faults stay HTTP/2's.
func TestWithHTTP1(t *testing.T) {
	t.Parallel()
	s := NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Aborted", strconv.FormatBool(Abort(r, RefusedStream)))
		echo(w, r)
	}), WithHTTP1())
	t.Cleanup(s.Close)
	pool := x509.NewCertPool()
	pool.AddCert(s.Certificate())
	for _, tc := range []struct {
		name   string
		protos []string // the client's ALPN
		h2     bool
		want   string // r.Proto the handler saw
	}{
		{"alpn http/1.1", []string{"http/1.1"}, false, "HTTP/1.1"},
		{"no alpn", nil, false, "HTTP/1.1"},
		{"alpn h2", nil, true, "HTTP/2.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, NextProtos: tc.protos}, ForceAttemptHTTP2: tc.h2}
			if !tc.h2 {
				tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{} // HTTP/1.1 only
			}
			defer tr.CloseIdleConnections()
			// A body that cannot be rewound: Go's HTTP/2 client cannot
			// replay the refused stream, so the error comes at once.
			req, _ := http.NewRequestWithContext(testContext(t), http.MethodPost, s.URL+"/o/?q=1", io.NopCloser(strings.NewReader("abc")))
			req.ContentLength = 3
			resp, err := (&http.Client{Transport: tr}).Do(req)
			if tc.h2 {
				// The handler chose RefusedStream: HTTP/2 ends the stream.
				if err == nil {
					resp.Body.Close()
					t.Fatalf("HTTP/2: got %d, want the stream refused", resp.StatusCode)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusCreated || resp.Header.Get("X-Proto") != tc.want || resp.Header.Get("X-Target") != "/o/?q=1" || resp.Header.Get("X-Length") != "3" {
				t.Fatalf("got %s %d %v, want %s 201 for /o/?q=1 with 3 bytes", resp.Proto, resp.StatusCode, resp.Header, tc.want)
			}
			if resp.Header.Get("X-Aborted") != "false" {
				t.Fatal("Abort did not report false on HTTP/1.1")
			}
		})
	}
	// Close ends the HTTP/1.1 connections too.
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	defer tr.CloseIdleConnections()
	req, _ := http.NewRequestWithContext(testContext(t), http.MethodGet, s.URL+"/", nil)
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	s.Close()
	if _, err := (&http.Client{Transport: tr}).Do(req.Clone(testContext(t))); err == nil {
		t.Fatal("a request after Close was answered")
	}
}

func TestCACertPEM(t *testing.T) {
	t.Parallel()
	s := setup(t, http.HandlerFunc(echo))
	block, _ := pem.Decode(s.CACertPEM())
	if block == nil || block.Type != "CERTIFICATE" || !bytes.Equal(block.Bytes, s.Certificate().Raw) {
		t.Fatal("CACertPEM is not the server's certificate authority")
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(s.CACertPEM()) {
		t.Fatal("PEM not accepted by a pool")
	}
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}}
	defer c.CloseIdleConnections()
	req, _ := http.NewRequestWithContext(testContext(t), http.MethodGet, strings.Replace(s.URL, "127.0.0.1", "localhost", 1)+"/", nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.ProtoMajor != 2 {
		t.Errorf("got %s, want HTTP/2", resp.Proto)
	}
}

// TestNoGoroutinesLeft runs alone (not parallel): after Close, and once
// the client's idle connections are closed, the goroutine count is back
// where it started, across every way a stream can end.
func TestNoGoroutinesLeft(t *testing.T) {
	before := runtime.NumGoroutine()
	s := NewServer(http.HandlerFunc(echo))
	c := s.Client()
	ctx := testContext(t)
	for _, k := range []Kind{Deliver, RefusedStream, ProtocolError, GoAway} {
		s.AbortMethod(http.MethodPost, k, 1)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/", io.NopCloser(strings.NewReader("x")))
		req.ContentLength = 1
		if resp, err := c.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	s.Close()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines left over (was %d):\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestNewServerListener(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := NewServerListener(ln, http.HandlerFunc(echo))
	t.Cleanup(s.Close)
	if s.URL != "https://"+ln.Addr().String() {
		t.Fatalf("URL %q for listener %s", s.URL, ln.Addr())
	}
	req, _ := http.NewRequestWithContext(testContext(t), http.MethodGet, s.URL+"/", nil)
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

// TestDateFromTheServersClock: an answer whose handler set no Date gets
// one from the clock given with WithClock; a handler's own Date stands.
func TestDateFromTheServersClock(t *testing.T) {
	at := time.Date(2031, time.May, 4, 10, 20, 30, 0, time.UTC)
	s := NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/own" {
			w.Header().Set("Date", "Mon, 01 Jan 2029 00:00:00 GMT")
		}
	}), WithClock(clockwork.NewFakeClockAt(at)))
	defer s.Close()
	for path, want := range map[string]string{"/": at.Format(http.TimeFormat), "/own": "Mon, 01 Jan 2029 00:00:00 GMT"} {
		resp, err := s.Client().Get(s.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.Header.Get("Date"); got != want {
			t.Errorf("%s: Date %q, want %q", path, got, want)
		}
	}
}

// countingListener counts the writes on the connections it accepts.
type countingListener struct {
	net.Listener
	writes atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, writes: &l.writes}, nil
}

type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// TestResponseInOneWrite: an answer that fits the windows, its HEADERS and
// its DATA, leaves the server in one write to the connection (not a write
// per frame); a small request body costs no write of its own, the
// connection's window being given back once connRefresh is owed, so that
// bodies beyond the 65,535 window in all still go through.
func TestResponseInOneWrite(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := &countingListener{Listener: ln}
	payload := bytes.Repeat([]byte("x"), 2000)
	s := NewServerListener(cl, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			echo(w, r)
			return
		}
		w.Write(payload)
	}))
	t.Cleanup(s.Close)
	c := s.Client()
	get := func() {
		t.Helper()
		req, _ := http.NewRequestWithContext(testContext(t), http.MethodGet, s.URL+"/", nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if body, _ := io.ReadAll(resp.Body); !bytes.Equal(body, payload) {
			t.Fatalf("body of %d bytes, want %d", len(body), len(payload))
		}
	}
	get() // the handshake and the settings
	for range 3 {
		before := cl.writes.Load()
		get()
		if n := cl.writes.Load() - before; n != 1 {
			t.Fatalf("an answer took %d writes, want 1", n)
		}
	}
	const posts, size = 100, 1000
	post := bytes.Repeat([]byte("y"), size)
	before := cl.writes.Load()
	for range posts {
		req, _ := http.NewRequestWithContext(testContext(t), http.MethodPost, s.URL+"/", bytes.NewReader(post))
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !bytes.Equal(body, post) {
			t.Fatalf("echoed %d bytes, want %d", len(body), size)
		}
	}
	// The connection's window is given back as handlers read their
	// bodies, so now and then an update leaves in a write of its own,
	// racing the answer: a few more writes than the floor, never one per
	// request more.
	if n, want := cl.writes.Load()-before, int64(posts+posts/((connRefresh+size-1)/size)); n < want || n > want+posts/10 {
		t.Errorf("%d posts of %d bytes took %d writes, want %d to %d", posts, size, n, want, want+posts/10)
	}
}

// TestMaxConcurrentStreamsZero: a server advertising 0 refuses a stream a
// client opens before reading its SETTINGS, with REFUSED_STREAM and
// without running the handler, counts the connection and the stream, and
// tells WithRefused's function of it before the refusal is sent.
func TestMaxConcurrentStreamsZero(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	var told atomic.Value
	s := NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { calls.Add(1) }), WithMaxConcurrentStreams(0),
		WithRefused(func(method, target string) { told.Store(method + " " + target) }))
	t.Cleanup(s.Close)
	pool := x509.NewCertPool()
	pool.AddCert(s.Certificate())
	tc, err := tls.Dial("tcp", strings.TrimPrefix(s.URL, "https://"), &tls.Config{RootCAs: pool, NextProtos: []string{http2.NextProtoTLS}})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	tc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(tc, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(tc, tc)
	var hbuf bytes.Buffer
	enc := hpack.NewEncoder(&hbuf)
	for _, f := range [][2]string{{":method", "GET"}, {":scheme", "https"}, {":authority", "127.0.0.1"}, {":path", "/"}} {
		enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hbuf.Bytes(), EndStream: true, EndHeaders: true}); err != nil {
		t.Fatal(err)
	}
	var advertised, refused bool
	for !refused {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("reading frames: %v (settings with 0 seen: %v)", err, advertised)
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if v, ok := f.Value(http2.SettingMaxConcurrentStreams); ok && v == 0 && !f.IsAck() {
				advertised = true
			}
		case *http2.RSTStreamFrame:
			if f.StreamID != 1 || f.ErrCode != http2.ErrCodeRefusedStream {
				t.Fatalf("RST_STREAM %d %v, want stream 1 REFUSED_STREAM", f.StreamID, f.ErrCode)
			}
			refused = true
		case *http2.HeadersFrame:
			t.Fatal("the stream was answered")
		}
	}
	if !advertised {
		t.Error("no SETTINGS_MAX_CONCURRENT_STREAMS 0 before the refusal")
	}
	if calls.Load() != 0 || s.Streams() != 1 || s.Conns() != 1 {
		t.Errorf("handler ran %d times, %d streams, %d connections; want 0, 1, 1", calls.Load(), s.Streams(), s.Conns())
	}
	if got, _ := told.Load().(string); got != "GET /" {
		t.Errorf("WithRefused was told %q, want \"GET /\"", got)
	}
}
