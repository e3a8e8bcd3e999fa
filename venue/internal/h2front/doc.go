// Package h2front is the simulated venue's HTTP/2 front (Venue.Serve with
// TLS, and so `sim serve --tls`): it serves an http.Handler over TLS and
// HTTP/2 on a listener, with the frames under its control, so that the
// venue can end a stream the way a hostile or overloaded venue would:
// after the handler has done its work.
//
// It exists because net/http's own HTTP/2 server gives no way to answer a
// request with RST_STREAM(REFUSED_STREAM), RST_STREAM(PROTOCOL_ERROR) or a
// GOAWAY that claims the stream was never processed, and those are exactly
// the answers on which Go's HTTP/2 client re-sends a request by itself.
// A handler calls Abort to choose one of them for its request; a test can
// instead set a policy for a whole server with Server.AbortMethod.
// WithMaxConcurrentStreams(0) makes a server that refuses every stream,
// as one shedding load may advertise; WithRefused tells of every stream
// refused before a handler saw it; Server.Conns and Server.Streams count
// what clients opened.
//
// Its certificate, for 127.0.0.1, ::1 and localhost, is an end entity
// (CA:FALSE, serverAuth) signed by a certificate authority minted with it,
// which Server.Certificate and Server.CACertPEM return for clients to
// trust, as strict verifiers such as rustls require.
//
// The server speaks just enough HTTP/2 for Go's client and curl: the
// connection preface and SETTINGS (with ACK), HEADERS with CONTINUATION,
// request bodies with WINDOW_UPDATE, PING, RST_STREAM and GOAWAY from the
// client, and responses sent as HEADERS plus DATA within the client's flow
// control windows and frame size. The frames written together go out in one
// write to the connection (a small answer's HEADERS and DATA are one TLS
// record). A stream's receive window (64 KiB) is given back as its handler
// reads the body, so a body the handler does not read costs at most that;
// the connection's is given back once 16 KiB are owed, so that a small
// request body costs no write of its own. A body must arrive within 10 s
// of its headers (a read after that fails with a timeout error); a stream
// answered before its body ended is then reset with NO_ERROR, asking the
// client to stop sending. Over HTTP/1.1 ReadBodyWithin does the same. Responses are buffered whole before they
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
