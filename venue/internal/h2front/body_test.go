package h2front

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

// readCountingListener counts every byte read from the connections it
// accepts.
type readCountingListener struct {
	net.Listener
	read atomic.Int64
}

func (l *readCountingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &readCountingConn{Conn: c, n: &l.read}, nil
}

type readCountingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c *readCountingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// zeros is a lazy body of n zero bytes: a 1 GiB body costs nothing until
// it is read. It counts what the client took of it.
type zeros struct{ n, read atomic.Int64 }

func newZeros(n int64) *zeros { z := &zeros{}; z.n.Store(n); return z }

func (z *zeros) Read(p []byte) (int, error) {
	left := z.n.Load() - z.read.Load()
	if left <= 0 {
		return 0, io.EOF
	}
	k := int(min(int64(len(p)), left))
	clear(p[:k])
	z.read.Add(int64(k))
	return k, nil
}

// refuseUnread answers 400 without reading the body, as the venue
// answers an unsigned request.
func refuseUnread(w http.ResponseWriter, _ *http.Request) {
	http.Error(w, "Request missing required headers", http.StatusBadRequest)
}

// readLimited reads at most 64 KiB of a body, as the venue does, and
// answers 413 for a larger one, 408 for one that times out.
func readLimited(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(io.LimitReader(r.Body, 64<<10+1))
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		http.Error(w, "timeout", http.StatusRequestTimeout)
	case err != nil:
		http.Error(w, err.Error(), http.StatusBadRequest)
	case len(b) > 64<<10:
		http.Error(w, "too large", http.StatusRequestEntityTooLarge)
	default:
		w.Write(b)
	}
}

// TestHugeBodyIsNotRead: a client streaming a 1 GiB body to a handler
// that answers without reading it (or reads 64 KiB of it) gets the answer,
// and the server reads no more than its windows let the client send:
// 64 KiB of body a stream over HTTP/2 (twice that for the handler that
// reads its 64 KiB), a buffer's worth over HTTP/1.1.
func TestHugeBodyIsNotRead(t *testing.T) {
	t.Parallel()
	const gib = 1 << 30
	for _, tc := range []struct {
		name    string
		h       http.HandlerFunc
		h1      bool
		chunked bool
		status  int
		most    int64
	}{
		{"h2, unread", refuseUnread, false, false, http.StatusBadRequest, 72 << 10},
		{"h2, unread, no length", refuseUnread, false, true, http.StatusBadRequest, 72 << 10},
		{"h2, 64 KiB read", readLimited, false, false, http.StatusRequestEntityTooLarge, 136 << 10},
		{"http/1.1, unread", refuseUnread, true, false, http.StatusBadRequest, 72 << 10},
		{"http/1.1, unread, chunked", refuseUnread, true, true, http.StatusBadRequest, 72 << 10},
		{"http/1.1, 64 KiB read", readLimited, true, true, http.StatusRequestEntityTooLarge, 136 << 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			inner, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			ln := &readCountingListener{Listener: inner}
			opts := []Option{}
			if tc.h1 {
				opts = append(opts, WithHTTP1())
			}
			s := NewServerListener(ln, tc.h, opts...)
			defer s.Close()
			c := s.Client()
			if tc.h1 {
				tr := c.Transport.(*http.Transport)
				tr.Protocols = nil
				tr.ForceAttemptHTTP2 = false
				tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
			}
			z := newZeros(gib)
			var body io.Reader = z
			if tc.chunked {
				body = struct{ io.Reader }{z} // no length known to the client
			}
			req, _ := http.NewRequestWithContext(testContext(t), http.MethodPost, s.URL+"/orders/", body)
			if !tc.chunked {
				req.ContentLength = gib
			}
			resp, err := c.Do(req)
			if err != nil {
				t.Fatalf("the client got no answer: %v (it sent %d bytes)", err, z.read.Load())
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status || (resp.ProtoMajor == 2) == tc.h1 {
				t.Errorf("%s %d, want %d over %s", resp.Proto, resp.StatusCode, tc.status, map[bool]string{true: "HTTP/1.1", false: "HTTP/2"}[tc.h1])
			}
			c.CloseIdleConnections()
			s.Close() // every connection read to its end
			if n := ln.read.Load(); n > tc.most {
				t.Errorf("the server read %d bytes of the client's %d, want at most %d", n, z.read.Load(), tc.most)
			}
			t.Logf("server read %d bytes; the client produced %d", ln.read.Load(), z.read.Load())
		})
	}
}

// TestSlowBodyTimesOutHTTP2: a body that does not arrive within the
// server's body timeout ends with a timeout error, which the handler
// answers, and the client's stream is released. The timeout runs on the
// server's network clock, fake here.
func TestSlowBodyTimesOutHTTP2(t *testing.T) {
	t.Parallel()
	clk := clockwork.NewFakeClock()
	s := NewServer(http.HandlerFunc(readLimited), func(s *Server) { s.netClock, s.bodyTimeout = clk, time.Second })
	defer s.Close()
	pr, pw := io.Pipe()
	defer pw.Close()
	req, _ := http.NewRequestWithContext(testContext(t), http.MethodPost, s.URL+"/orders/", pr)
	req.ContentLength = 100
	type result struct {
		resp *http.Response
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := s.Client().Do(req)
		done <- result{resp, err}
	}()
	if _, err := pw.Write([]byte("{")); err != nil { // one byte, then nothing
		t.Fatal(err)
	}
	ctx := testContext(t)
	if err := clk.BlockUntilContext(ctx, 1); err != nil { // the stream's body timer
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatal(r.err)
		}
		r.resp.Body.Close()
		if r.resp.StatusCode != http.StatusRequestTimeout {
			t.Errorf("status %d, want 408 from the handler's timed-out read", r.resp.StatusCode)
		}
	case <-ctx.Done():
		t.Fatal("no answer after the body timeout")
	}
}

// TestSlowBodyTimesOutHTTP1: over HTTP/1.1 a client trickling its body
// is cut off by the server's own read deadline (short here), answered 408
// and its connection closed.
func TestSlowBodyTimesOutHTTP1(t *testing.T) {
	t.Parallel()
	s := NewServer(http.HandlerFunc(readLimited), WithHTTP1(), func(s *Server) { s.bodyTimeout = 200 * time.Millisecond })
	defer s.Close()
	conn, err := tls.Dial("tcp", strings.TrimPrefix(s.URL, "https://"), &tls.Config{RootCAs: poolOf(s), NextProtos: []string{"http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetReadDeadline(time.Now().Add(10 * time.Second)) // the test's own bound, far above the server's
	if _, err := io.WriteString(conn, "POST /orders/ HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100\r\n\r\n{"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout || !resp.Close {
		t.Errorf("status %d, close %v: want 408 and the connection closed", resp.StatusCode, resp.Close)
	}
	if _, err := conn.Read(make([]byte, 1)); err == nil || isTimeout(err) {
		t.Errorf("after the answer, read %v: want the connection closed by the server", err)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func poolOf(s *Server) *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(s.Certificate())
	return p
}
