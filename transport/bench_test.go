package transport

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/tradewire/tradewire/signing"
)

const benchTarget = "/api/v2/crypto/trading/accounts/"

func benchServer(b *testing.B) *httptest.Server {
	body := []byte(`{"next":null,"previous":null,"results":[{"account_number":"AB1234567890","status":"active","buying_power":"1042.55"}]}`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	}))
	b.Cleanup(srv.Close)
	return srv
}

// baselineGET is what any signed GET must cost: plain net/http plus one
// Ed25519 signature.
func baselineGET(b *testing.B, hc *http.Client, url string, key ed25519.PrivateKey) {
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	sig := ed25519.Sign(key, []byte(testAPIKey+ts+benchTarget+"GET"))
	req, _ := http.NewRequest("GET", url+benchTarget, nil)
	req.Header.Set("x-api-key", testAPIKey)
	req.Header.Set("x-timestamp", ts)
	req.Header.Set("x-signature", base64.StdEncoding.EncodeToString(sig))
	resp, err := hc.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.ReadAll(resp.Body); err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
}

func benchSetup(b *testing.B) (*httptest.Server, *Client, *http.Client, ed25519.PrivateKey) {
	srv := benchServer(b)
	seed, _ := base64.StdEncoding.DecodeString(testSeed)
	key := ed25519.NewKeyFromSeed(seed)
	pk, _ := signing.ParsePrivateKey(testSeed)
	s, _ := signing.New(testAPIKey, pk)
	hc := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	// The throttle is off: the benchmark measures the client, not the budget.
	c, err := New(srv.URL, s, WithRateLimit(0, 0), WithRoundTripper(http.DefaultTransport.(*http.Transport).Clone()))
	if err != nil {
		b.Fatal(err)
	}
	return srv, c, hc, key
}

// BenchmarkSignedGET compares a signed GET through the Client with the
// baseline, interleaved in one run, and reports the ratio as x-baseline
// (goal: at most 1.10).
func BenchmarkSignedGET(b *testing.B) {
	srv, c, hc, key := benchSetup(b)
	ctx := context.Background()
	b.Run("baseline", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			baselineGET(b, hc, srv.URL, key)
		}
	})
	b.Run("client", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := c.Get(ctx, benchTarget); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ratio", func(b *testing.B) {
		// Warm both connection pools.
		baselineGET(b, hc, srv.URL, key)
		if _, err := c.Get(ctx, benchTarget); err != nil {
			b.Fatal(err)
		}
		var base, client time.Duration
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			start := time.Now()
			baselineGET(b, hc, srv.URL, key)
			base += time.Since(start)
			start = time.Now()
			if _, err := c.Get(ctx, benchTarget); err != nil {
				b.Fatal(err)
			}
			client += time.Since(start)
		}
		b.ReportMetric(float64(client)/float64(base), "x-baseline")
	})
}
