package venue

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// zeros is a lazy body of n zero bytes that counts what is read of it:
// a 1 GiB body costs nothing until it is read.
type zeros struct{ n, read int64 }

func (z *zeros) Read(p []byte) (int, error) {
	if z.read >= z.n {
		return 0, io.EOF
	}
	k := int(min(int64(len(p)), z.n-z.read))
	clear(p[:k])
	z.read += int64(k)
	return k, nil
}

// timeoutErr is a read deadline passing, as net/http reports it.
type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

type failing struct{ err error }

func (f failing) Read([]byte) (int, error) { return 0, f.err }

// TestBodyReadAfterHeadersAndBounded: the venue judges a request's headers
// before it reads a byte of its body, reads no more than maxBody of one,
// and answers a body not received in time 408.
func TestBodyReadAfterHeadersAndBounded(t *testing.T) {
	const gib = 1 << 30
	h := setup(t, engineConfig{RatePerMinute: -1})
	serve := func(hdr http.Header, body io.Reader, length int64) (int, []byte) {
		t.Helper()
		r := httptest.NewRequest("POST", "https://venue.test"+ordersTarget, body)
		r.RequestURI = ordersTarget
		r.ContentLength = length
		for k, vs := range hdr {
			r.Header[k] = vs
		}
		w := httptest.NewRecorder()
		h.v.ServeHTTP(w, r)
		return w.Code, w.Body.Bytes()
	}
	envelope := func(b []byte) string {
		var e errorEnvelope
		if err := json.Unmarshal(b, &e); err != nil || len(e.Errors) != 1 {
			return ""
		}
		return e.Type
	}
	signed := h.sign("POST", ordersTarget, []byte("{}"), h.clock.Now())
	unknownKey := h.sign("POST", ordersTarget, []byte("{}"), h.clock.Now())
	unknownKey.Set("x-api-key", "rh-api-unknown")
	stale := h.sign("POST", ordersTarget, []byte("{}"), h.clock.Now().Add(-2*signatureWindow))

	for _, tc := range []struct {
		name   string
		hdr    http.Header
		length int64 // -1: not declared (chunked)
		status int
		most   int64 // the most of the body the venue may read
	}{
		{"unsigned, declared", http.Header{}, gib, http.StatusBadRequest, 0},
		{"unsigned, chunked", http.Header{}, -1, http.StatusBadRequest, 0},
		{"unknown key", unknownKey, gib, http.StatusUnauthorized, 0},
		{"stale timestamp", stale, -1, http.StatusUnauthorized, 0},
		{"signed, declared too large", signed, gib, http.StatusRequestEntityTooLarge, 0},
		{"signed, chunked too large", signed, -1, http.StatusRequestEntityTooLarge, maxBody + 1},
	} {
		z := &zeros{n: gib}
		status, body := serve(tc.hdr, z, tc.length)
		if status != tc.status {
			t.Errorf("%s: status %d, want %d; body %s", tc.name, status, tc.status, body)
		}
		if z.read > tc.most {
			t.Errorf("%s: the venue read %d bytes of the body, want at most %d", tc.name, z.read, tc.most)
		}
		if tc.status == http.StatusRequestEntityTooLarge && envelope(body) != "client_error" {
			t.Errorf("%s: body %s, want the venue's error envelope", tc.name, body)
		}
	}
	// A body of exactly maxBody is read (and judged on its signature).
	if status, body := serve(signed, &zeros{n: maxBody}, maxBody); status != http.StatusUnauthorized {
		t.Errorf("a body of maxBody bytes: status %d, want 401 (read, signature checked); body %s", status, body)
	}
	status, body := serve(signed, failing{timeoutErr{}}, 100)
	if status != http.StatusRequestTimeout || envelope(body) != "client_error" {
		t.Errorf("a body that times out: %d %s, want 408 in the error envelope", status, body)
	}
	if status, _ := serve(signed, failing{io.ErrUnexpectedEOF}, 100); status != http.StatusBadRequest {
		t.Errorf("a body cut short: %d, want 400", status)
	}
	if n := len(h.v.ledger.Orders()); n != 0 {
		t.Errorf("%d orders created", n)
	}
}
