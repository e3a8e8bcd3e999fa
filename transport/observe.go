package transport

import "time"

// Attempt describes one attempt as it ended, for Config.Observer. It holds no header, signature, key or body.
type Attempt struct {
	Method string
	// Path is the request path without its query string.
	Path string
	// Number is the attempt's number within its request, 1 for the first.
	Number int
	// Status is the venue's answer, 0 when none was read.
	Status int
	// Proto is the protocol the answer came over ("HTTP/2.0",
	// "HTTP/1.1"), empty when none was read.
	Proto string
	// Replays is how many times net/http sent the attempt again by itself
	// on another connection (after a refused stream, a GOAWAY or a dead
	// kept-alive connection), each after a token of its own from the rate
	// budget. A GET or HEAD only: a write is never sent again.
	Replays int
	// Elapsed runs from the attempt's signature to the end of its answer's
	// body, on the client's clock.
	Elapsed time.Duration
	// Err is the failure below HTTP, nil when an answer was read.
	Err error
}
