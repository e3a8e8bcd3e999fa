// Package h2front serves an http.Handler over TLS and HTTP/2 on a loopback
// listener, with the frames under its control, so that a test (or the
// simulated venue's `sim serve --tls`) can end a stream the way a hostile or
// overloaded venue would: after the handler has done its work.
//
// It exists because net/http's own HTTP/2 server gives no way to answer a
// request with RST_STREAM(REFUSED_STREAM), RST_STREAM(PROTOCOL_ERROR) or a
// GOAWAY that claims the stream was never processed, and those are exactly
// the answers on which Go's HTTP/2 client re-sends a request by itself.
// A handler calls Abort to choose one of them for its request; a test can
// instead set a policy for a whole server with Server.AbortMethod.
//
// The server speaks just enough HTTP/2 for Go's client and curl: the
// connection preface and SETTINGS (with ACK), HEADERS with CONTINUATION,
// request bodies with WINDOW_UPDATE, PING, RST_STREAM and GOAWAY from the
// client, and responses sent as HEADERS plus DATA within the client's flow
// control windows and frame size. The frames written together go out in one
// write to the connection (a small answer's HEADERS and DATA are one TLS
// record), and the connection's receive window is given back with a
// stream's own WINDOW_UPDATE or once 16 KiB are owed, so that a small
// request body costs no write of its own. Responses are buffered whole before they
// are sent (the handler has returned by then, which is what lets Abort act
// after the handler's side effects), so it suits small bodies; streaming
// responses and server push are not supported. Only h2 is offered in ALPN
// unless WithHTTP1 adds http/1.1 (served by net/http's own server): without
// it, a client that cannot speak HTTP/2 fails the TLS handshake. Like net/http,
// it adds a Date header to an answer whose handler set none, read from the
// clock given with WithClock (default: the real clock).
//
// A Server is safe for concurrent use. Close ends every connection and
// waits for every goroutine the server started, handlers included.
package h2front
