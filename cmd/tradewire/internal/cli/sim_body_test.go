package cli

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tradewire/tradewire/venue"
)

// lazyZeros is a lazy request body of n zero bytes that counts what the
// client took of it: a 1 GiB body costs nothing until it is read.
type lazyZeros struct{ n, read atomic.Int64 }

func (z *lazyZeros) Read(p []byte) (int, error) {
	left := z.n.Load() - z.read.Load()
	if left <= 0 {
		return 0, io.EOF
	}
	k := int(min(int64(len(p)), left))
	clear(p[:k])
	z.read.Add(int64(k))
	return k, nil
}

// bytesReadListener counts every byte read from the connections it
// accepts.
type bytesReadListener struct {
	net.Listener
	read atomic.Int64
}

func (l *bytesReadListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &bytesReadConn{Conn: c, n: &l.read}, nil
}

type bytesReadConn struct {
	net.Conn
	n *atomic.Int64
}

func (c *bytesReadConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// venueErrorType is the type of the venue's error envelope in b, or "".
func venueErrorType(b []byte) string {
	var e struct {
		Type   string            `json:"type"`
		Errors []json.RawMessage `json:"errors"`
	}
	if json.Unmarshal(b, &e) != nil || len(e.Errors) == 0 {
		return ""
	}
	return e.Type
}

// serveSimHTTP serves a fresh venue with the server "sim serve" uses, on
// a listener that counts the bytes it reads.
func serveSimHTTP(t *testing.T, bodyTimeout time.Duration) (*venue.Venue, *bytesReadListener, string) {
	t.Helper()
	v, err := venue.New(venue.Config{BodyTimeout: bodyTimeout})
	if err != nil {
		t.Fatal(err)
	}
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := &bytesReadListener{Listener: inner}
	hs := v.Serve(ln, false)
	t.Cleanup(hs.Close)
	return v, ln, hs.URL
}

// TestSimHTTPServer_HugeBodiesAreNotRead: an unsigned 1 GiB POST, declared
// or chunked, and a signed one over 64 KiB, are answered (400, 413 in the
// venue's envelope) while the server reads at most the 64 KiB limit of
// them (and 8 KiB of headers, framing and read buffer).
func TestSimHTTPServer_HugeBodiesAreNotRead(t *testing.T) {
	t.Parallel()
	const gib, limit = 1 << 30, 64 << 10
	const path = "/api/v2/crypto/trading/orders/?account_number=TW0000000001"
	for _, tc := range []struct {
		name    string
		signed  bool
		chunked bool
		status  int
	}{
		{"unsigned, declared", false, false, http.StatusBadRequest},
		{"unsigned, chunked", false, true, http.StatusBadRequest},
		{"signed, declared", true, false, http.StatusRequestEntityTooLarge},
		{"signed, chunked", true, true, http.StatusRequestEntityTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v, ln, base := serveSimHTTP(t, simBodyTimeout)
			cfg := v.Config()
			z := &lazyZeros{}
			z.n.Store(gib)
			var body io.Reader = z
			if tc.chunked {
				body = struct{ io.Reader }{z}
			}
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, base+path, body)
			if !tc.chunked {
				req.ContentLength = gib
			}
			if tc.signed {
				// Headers the venue accepts; the body is never signed.
				req.Header.Set("x-api-key", cfg.APIKey)
				req.Header.Set("x-timestamp", strconv.FormatInt(cfg.Clock.Now().Unix(), 10))
				req.Header.Set("x-signature", strings.Repeat("A", 86)+"==")
			}
			tr := &http.Transport{}
			defer tr.CloseIdleConnections()
			resp, err := (&http.Client{Transport: tr}).Do(req)
			if err != nil {
				t.Fatalf("no answer: %v (the client sent %d bytes)", err, z.read.Load())
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status || venueErrorType(b) == "" && tc.status == http.StatusRequestEntityTooLarge {
				t.Errorf("answered %d %s, want %d", resp.StatusCode, b, tc.status)
			}
			// The limit of body, plus the headers, the chunks' framing and
			// one read buffer (4 KiB) ahead.
			if n := ln.read.Load(); n > limit+8<<10 {
				t.Errorf("the server read %d bytes, want at most the %d-byte limit and 8 KiB", n, limit)
			}
			t.Logf("server read %d bytes; the client produced %d", ln.read.Load(), z.read.Load())
		})
	}
}

// TestSimHTTPServer_TricklingClientIsCutOff: a client that sends its
// headers and one byte of a 200-byte body, then stalls, is answered 408
// and its connection closed once the body timeout (short here) passes.
func TestSimHTTPServer_TricklingClientIsCutOff(t *testing.T) {
	t.Parallel()
	v, _, base := serveSimHTTP(t, 300*time.Millisecond)
	cfg := v.Config()
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetReadDeadline(time.Now().Add(10 * time.Second)) // the test's bound, far above the server's
	head := "POST /api/v2/crypto/trading/orders/?account_number=TW0000000001 HTTP/1.1\r\nHost: 127.0.0.1\r\n" +
		"x-api-key: " + cfg.APIKey + "\r\nx-timestamp: " + strconv.FormatInt(cfg.Clock.Now().Unix(), 10) + "\r\n" +
		"x-signature: " + strings.Repeat("A", 86) + "==\r\nContent-Length: 200\r\n\r\n{"
	if _, err := io.WriteString(conn, head); err != nil {
		t.Fatal(err)
	}
	// Nothing more is sent: only the server's own timeout answers. The
	// deadline is set once for the whole body, so bytes trickled in
	// would not move it.
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout || venueErrorType(b) != "client_error" {
		t.Errorf("answered %d %s, want 408 in the venue's envelope", resp.StatusCode, b)
	}
	if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
		var ne net.Error
		if !errors.As(err, &ne) || ne.Timeout() {
			t.Errorf("after the answer: %v, want the connection closed", err)
		}
	}
}

// TestSimServe_UnsignedHugeBodyIsRefusedUnread: through "sim serve",
// plain and --tls (HTTP/2), an unsigned 1 GiB POST streamed by a client is
// answered 400 for its missing headers long before the client could send
// it: the client produced no more than the kernel's and the transport's
// buffers hold.
func TestSimServe_UnsignedHugeBodyIsRefusedUnread(t *testing.T) {
	t.Parallel()
	const gib = 1 << 30
	for _, tlsOn := range []bool{false, true} {
		args := []string{"--addr", "127.0.0.1:0"}
		if tlsOn {
			args = append(args, "--tls")
		}
		env, _, stop := startSimServe(t, args...)
		rt := http.DefaultTransport.(*http.Transport).Clone()
		var client http.RoundTripper = rt
		if tlsOn {
			client = trustingTransport(t, env[envSSLCertFile]).next
		}
		z := &lazyZeros{}
		z.n.Store(gib)
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, env[envBaseURL]+"/api/v2/crypto/trading/orders/", z)
		req.ContentLength = gib
		resp, err := (&http.Client{Transport: client}).Do(req)
		if err != nil {
			t.Fatalf("tls %v: no answer: %v (the client sent %d bytes)", tlsOn, err, z.read.Load())
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		rt.CloseIdleConnections()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "missing required headers") {
			t.Errorf("tls %v: answered %d %s, want 400 for the missing headers", tlsOn, resp.StatusCode, b)
		}
		if n := z.read.Load(); n > 16<<20 {
			t.Errorf("tls %v: the client sent %d bytes before its answer, want the body left unread", tlsOn, n)
		}
		t.Logf("tls %v: %s, the client produced %d bytes", tlsOn, resp.Proto, z.read.Load())
		if r := stop(); r.code != 0 {
			t.Errorf("tls %v: exit %d, stderr %q", tlsOn, r.code, r.stderr)
		}
	}
}
