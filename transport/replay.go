package transport

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/http/httptrace"
	"time"
)

// net/http sends a GET again by itself, beneath the client: its HTTP/2
// client after RST_STREAM(REFUSED_STREAM), RST_STREAM(PROTOCOL_ERROR) or a
// GOAWAY that leaves the stream out, and, on a connection that cannot take
// it (a server advertising MAX_CONCURRENT_STREAMS 0), by dialing another,
// without bound; its HTTP/1 client when a kept-alive connection turns out
// dead. Every such try first asks for a connection, which net/http reports
// to the request's httptrace hooks before anything is written on it:
// GetConn when it looks for one (in its pool or by dialing), GotConn when
// it has one, and GotConn alone when HTTP/2 tries another stream on a
// connection it holds. So every GET and HEAD attempt carries a trace that
// counts tries (a GetConn, or a GotConn not following one): the first is
// the one the attempt waited for the rate budget for, and every further
// one takes a token of its own from the same budget before net/http goes
// on, if one is free at once: the hooks run under net/http's HTTP/2
// connection pool lock, where a wait would hold up every other request.
// When the budget does not admit it, the attempt's context is ended, with
// the refusal as its cause, before the hook returns, and nothing more is
// written (the client's own retry then sends the request again, after its
// backoff and with a token):
//
//   - HTTP/2 checks it after taking the connection's write lock and
//     before it writes a stream's HEADERS (encodeAndWriteHeaders), and
//     http.Transport before it looks for a connection again;
//   - HTTP/1 writes a request on a connection it got without looking at
//     the context, so a connection it gets after the refusal, which
//     carries this request alone, is closed first, and the write fails
//     having written nothing.
//
// An attempt's replays are also capped at maxReplays, budget or no
// budget: net/http tries again at once (or after a second, over one
// HTTP/2 connection), where the client's own retries back off and draw
// on the retry budget, so a venue that refuses every stream does not
// spend a shared rate budget on one read.
//
// A trace the caller put on the context is composed with this one
// (httptrace.WithClientTrace): its hooks still fire.

// maxReplays is how many times net/http may send one attempt again by
// itself. A graceful GOAWAY or a dead kept-alive connection costs one.
const maxReplays = 4

// errReplayLimit is the refusal of a replay beyond maxReplays.
var errReplayLimit = fmt.Errorf("an attempt is sent again by net/http at most %d times", maxReplays)

// guardsReplays reports whether net/http may replay a request with method
// by itself, so that its attempts carry the replay guard.
func guardsReplays(method string) bool {
	return method == http.MethodGet || method == http.MethodHead
}

// getConn is the attempt's httptrace.GetConn: a try begins.
func (st *attemptState) getConn(string) {
	st.try()
	st.pending = true
}

// gotConn is the attempt's httptrace.GotConn: a try has its connection,
// or, with no GetConn before it, a try begins on a connection net/http
// holds. A connection got after the budget refused a try is closed unless
// other requests share it.
func (st *attemptState) gotConn(info httptrace.GotConnInfo) {
	if st.pending {
		st.pending = false
	} else {
		st.try()
	}
	if st.refused != nil && info.Conn != nil && !st.client.sharedConn(info.Conn) {
		info.Conn.Close()
	}
}

// try counts a try and, after the first, waits for the rate budget for
// it, or ends the attempt (as it does beyond maxReplays). net/http calls the hooks on the goroutine that
// called RoundTrip, before RoundTrip returns.
func (st *attemptState) try() {
	st.tries++
	if st.tries == 1 || st.refused != nil {
		return
	}
	c := st.client
	// A token now or never: net/http calls the hooks holding its HTTP/2
	// connection pool's lock, so a wait here would hold up every other
	// request of the client. A replay the budget cannot admit at once ends
	// the attempt, and the client's own retry, after its backoff and with
	// a token of its own, sends the request again.
	now := nowOrNever{Context: st.actx, at: c.clock.Now()}
	var err error
	switch {
	case st.replays >= maxReplays:
		err = errReplayLimit
	case c.adaptive != nil:
		err = c.adaptive.WaitFor(now, st.method, st.path)
	default:
		err = c.limiter.Wait(now)
	}
	if err == nil {
		st.replays++
		st.grantedAt = c.clock.Now()
		return
	}
	if err != errReplayLimit {
		err = fmt.Errorf("the rate budget did not admit it: %w", err)
	}
	st.refused = &replayRefusedError{Replays: st.replays, Err: err}
	st.cancel(st.refused)
}

// sharedConn reports whether conn may carry other requests at once: an
// HTTP/2 connection (h2 negotiated over TLS), or an unencrypted one when
// the client's round tripper may speak HTTP/2 on it (plainH2). Any other
// is HTTP/1's, which carries one request at a time.
func (c *Client) sharedConn(conn net.Conn) bool {
	if tc, ok := conn.(*tls.Conn); ok {
		return tc.ConnectionState().NegotiatedProtocol == "h2"
	}
	return c.plainH2
}

// plainHTTP2 reports whether rt may speak HTTP/2 without TLS: an
// *http.Transport that enables it, or a round tripper of another type,
// which may wrap one. On such a connection a refused replay is stopped by
// its context alone.
func plainHTTP2(rt http.RoundTripper) bool {
	tr, ok := rt.(*http.Transport)
	return !ok || (tr.Protocols != nil && tr.Protocols.UnencryptedHTTP2())
}

// nowOrNever is a context whose deadline is now: a rate budget's Wait
// under it takes a token if one is free and otherwise gives up at once.
type nowOrNever struct {
	context.Context
	at time.Time
}

func (n nowOrNever) Deadline() (time.Time, bool) { return n.at, true }

// replayRefusedError is an attempt that net/http would have sent again,
// which the rate budget did not admit, or beyond maxReplays. It unwraps
// to the budget's error, or errReplayLimit.
type replayRefusedError struct {
	// Replays is how many such sends the budget admitted first.
	Replays int
	Err     error
}

func (e *replayRefusedError) Error() string {
	return fmt.Sprintf("net/http would send the request again by itself (after a refused stream, a GOAWAY or a dead connection; %d times already): refused: %v",
		e.Replays, e.Err)
}

func (e *replayRefusedError) Unwrap() error { return e.Err }

// Is matches ErrUnavailable: the budget cannot take the read now; it is
// for a later attempt (a GET has no effect to duplicate).
func (e *replayRefusedError) Is(target error) bool { return target == ErrUnavailable }

// withReplayGuard prepares st for an attempt of method to path under ctx
// and returns ctx with the attempt's trace, composed with the caller's.
func (st *attemptState) withReplayGuard(ctx context.Context, c *Client, method, path string) context.Context {
	st.client, st.method, st.path = c, method, path
	st.trace.GetConn = st.getConn
	st.trace.GotConn = st.gotConn
	return httptrace.WithClientTrace(ctx, &st.trace)
}

// replayState is what the replay guard keeps of one attempt, inside its
// attemptState.
type replayState struct {
	client       *Client
	method, path string
	// actx is the attempt's context, which a replay's wait runs under.
	actx  context.Context
	trace httptrace.ClientTrace
	// tries counts net/http's tries of the attempt, pending is set
	// between a try's GetConn and its GotConn; replays counts the tries
	// after the first that the budget admitted, the last at grantedAt;
	// refused is set when it did not admit one.
	tries     int
	pending   bool
	replays   int
	grantedAt time.Time
	refused   *replayRefusedError
}
