package transport

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/jonboulle/clockwork"

	"github.com/tradewire/tradewire/signing"
)

// secretVenue answers every request, and keeps the signatures each API
// key sent: a POST is answered 503, the first GET of a key 429
// (Retry-After 0, so the retry needs no clock), the rest 200.
type secretVenue struct {
	srv  *httptest.Server
	mu   sync.Mutex
	sigs map[string][]string
}

func newSecretVenue(t testing.TB) *secretVenue {
	v := &secretVenue{sigs: make(map[string][]string)}
	v.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("x-api-key")
		v.mu.Lock()
		first := len(v.sigs[key]) == 0
		v.sigs[key] = append(v.sigs[key], r.Header.Get("x-signature"))
		v.mu.Unlock()
		switch {
		case r.Method == http.MethodPost:
			w.WriteHeader(http.StatusServiceUnavailable)
		case first:
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
		}
		w.Write([]byte(`{}`))
	}))
	t.Cleanup(v.srv.Close)
	return v
}

func (v *secretVenue) signatures(key string) []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]string(nil), v.sigs[key]...)
}

// FuzzAttributes: for generated API keys and private keys, and targets
// whose path segments and query strings carry them and arbitrary ids, no
// value recorded in a metric or a span holds the API key, the private
// key's base64, a signature sent, or a query string.
func FuzzAttributes(f *testing.F) {
	f.Add([]byte("key seed"), []byte("api key"), "0b5a7d9e-1c3f-4a2b-8d6e-9f0a1b2c3d4e", "AB1234567890")
	f.Add([]byte{}, []byte{}, "", "")
	f.Add([]byte{0xff}, []byte("rh-api-6148effc"), "orders", "a b&c=d")
	f.Add([]byte("x"), []byte("y"), "a/b?c=d", "%2F?#")
	f.Add([]byte("z"), []byte("w"), "cancel", "api")
	v := newSecretVenue(f)
	f.Fuzz(func(t *testing.T, seed, keyBytes []byte, id, account string) {
		sum := sha256.Sum256(seed)
		privateKey := base64.StdEncoding.EncodeToString(sum[:])
		pk, err := signing.ParsePrivateKey(privateKey)
		if err != nil {
			t.Fatal(err)
		}
		ks := sha256.Sum256(keyBytes)
		apiKey := "rh-api-" + hex.EncodeToString(ks[:16])
		s, err := signing.New(apiKey, pk)
		if err != nil {
			t.Fatal(err)
		}
		rec := newRecorder(t)
		c, err := New(v.srv.URL, s, rec.with(Config{Clock: clockwork.NewFakeClockAt(t0), RatePerMinute: -1}))
		if err != nil {
			t.Fatal(err)
		}
		query := "account_number=" + url.QueryEscape(account) + "&key=" + url.QueryEscape(apiKey) + "&pk=" + url.QueryEscape(privateKey)
		orders := "/api/v2/crypto/trading/orders/"
		requests := []struct{ method, target string }{
			{http.MethodGet, orders + url.PathEscape(id) + "/?" + query},
			{http.MethodGet, orders + url.PathEscape(apiKey) + "/" + url.PathEscape(privateKey) + "/?" + query},
			{http.MethodPost, orders + url.PathEscape(id) + "/cancel/"},
			{http.MethodPost, orders + url.PathEscape(apiKey) + "/cancel/"},
			{http.MethodGet, "/" + url.PathEscape(privateKey) + "?" + query},
		}
		// Inside a trace, so that every request is a span too.
		ctx, caller := rec.tp.Tracer("fuzz").Start(context.Background(), "caller")
		for _, r := range requests {
			var body []byte
			if r.method == http.MethodPost {
				body = []byte(`{"key":"` + apiKey + `"}`)
			}
			c.Do(ctx, r.method, r.target, body) // refused targets record nothing
		}
		caller.End()
		if n := len(rec.spans.Ended()); n < 2 {
			t.Fatalf("%d spans, want the requests' and the caller's", n)
		}
		secrets := append([]string{apiKey, privateKey, query}, v.signatures(apiKey)...)
		if len(secrets) == 3 {
			t.Fatal("the venue saw no request")
		}
		for _, val := range rec.values(t) {
			for _, sec := range secrets {
				if sec != "" && strings.Contains(val, sec) {
					t.Errorf("recorded value %q holds a secret %q", val, sec)
				}
			}
			if strings.Contains(val, "?") {
				t.Errorf("recorded value %q holds a query string", val)
			}
		}
	})
}
