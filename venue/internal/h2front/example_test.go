package h2front_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/tradewire/tradewire/venue/internal/h2front"
)

// A venue that commits a create, then resets the stream as if it had never
// seen it. A client that cannot rewind the body gets the reset; one that
// can (http.NewRequest with a bytes.Reader sets GetBody) is replayed by
// net/http itself.
func ExampleAbort() {
	var creates atomic.Int32
	srv := h2front.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if creates.Add(1) == 1 { // the side effect happens...
			h2front.Abort(r, h2front.RefusedStream) // ...then the stream is refused
		}
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()
	c := srv.Client()

	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/orders/", io.NopCloser(strings.NewReader("{}")))
	req.ContentLength = 2
	_, err := c.Do(req)
	fmt.Println("not rewindable:", strings.Contains(err.Error(), "REFUSED_STREAM"), "creates:", creates.Load())

	creates.Store(0)
	req, _ = http.NewRequest(http.MethodPost, srv.URL+"/orders/", bytes.NewReader([]byte("{}")))
	resp, err := c.Do(req)
	if err == nil {
		resp.Body.Close()
		fmt.Println("rewindable:", resp.StatusCode, "creates:", creates.Load())
	}
	// Output:
	// not rewindable: true creates: 1
	// rewindable: 201 creates: 2
}
