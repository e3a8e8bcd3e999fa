package redisbudget_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tradewire/tradewire/broker/brokertest"
	"github.com/tradewire/tradewire/internal/redistest"
	"github.com/tradewire/tradewire/signing"
	"github.com/tradewire/tradewire/transport"
	"github.com/tradewire/tradewire/transport/redisbudget"
	"github.com/tradewire/tradewire/venue"
)

// A budget no benchmark can spend: it measures the round trip, not waits.
const (
	benchPerMinute = 1e9
	benchBurst     = 1 << 30
)

func benchLimiters(b *testing.B) (transport.Limiter, *redisbudget.Budget) {
	opt, err := redis.ParseURL(redistest.URL(b))
	if err != nil {
		b.Fatal(err)
	}
	rdb := redis.NewClient(opt)
	b.Cleanup(func() { rdb.Close() })
	rb, err := redisbudget.New(context.Background(), rdb, redistest.Account(b, redistest.URL(b)), redisbudget.Config{RatePerMinute: benchPerMinute, Burst: benchBurst})
	if err != nil {
		b.Fatal(err)
	}
	return transport.NewTokenBucket(nil, benchPerMinute, benchBurst), rb
}

// BenchmarkWait compares one Wait on the Redis budget (a PTTL and one GCRA
// script on loopback) with one on the in-process token bucket
// (transport.NewTokenBucket), interleaved in one run; ratio reports
// Redis/token bucket as x-baseline and the Redis Wait's own cost in µs.
func BenchmarkWait(b *testing.B) {
	tb, rb := benchLimiters(b)
	ctx := context.Background()
	b.Run("tokenbucket", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if err := tb.Wait(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("redis", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if err := rb.Wait(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ratio", func(b *testing.B) {
		var base, shared time.Duration
		for i := 0; i < b.N; i++ {
			start := time.Now()
			if err := tb.Wait(ctx); err != nil {
				b.Fatal(err)
			}
			base += time.Since(start)
			start = time.Now()
			if err := rb.Wait(ctx); err != nil {
				b.Fatal(err)
			}
			shared += time.Since(start)
		}
		b.ReportMetric(float64(shared)/float64(base), "x-baseline")
		b.ReportMetric(float64(shared.Microseconds())/float64(b.N), "µs-redis-wait")
		b.ReportMetric(float64(base.Nanoseconds())/float64(b.N), "ns-bucket-wait")
	})
}

// BenchmarkSignedGET puts the Redis budget's overhead in proportion: a
// signed GET to a loopback server through a client on the Redis budget,
// against the same client on the in-process token bucket
// (transport.NewTokenBucket), interleaved.
func BenchmarkSignedGET(b *testing.B) {
	tb, rb := benchLimiters(b)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"next":null,"previous":null,"results":[]}`))
	}))
	b.Cleanup(srv.Close)
	venue, err := brokertest.New(venue.Config{}) // only for its demo credentials
	if err != nil {
		b.Fatal(err)
	}
	pk, err := signing.ParsePrivateKey(venue.PrivateKeyBase64)
	if err != nil {
		b.Fatal(err)
	}
	signer, err := signing.New(venue.APIKey, pk)
	if err != nil {
		b.Fatal(err)
	}
	client := func(l transport.Limiter) *transport.Client {
		c, err := transport.New(srv.URL, signer, transport.Config{Limiter: l, RoundTripper: http.DefaultTransport.(*http.Transport).Clone()})
		if err != nil {
			b.Fatal(err)
		}
		return c
	}
	local, shared := client(tb), client(rb)
	ctx := context.Background()
	const target = "/api/v2/crypto/trading/accounts/"
	for _, c := range []*transport.Client{local, shared} { // warm both pools
		if _, err := c.Get(ctx, target); err != nil {
			b.Fatal(err)
		}
	}
	var base, red time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if _, err := local.Get(ctx, target); err != nil {
			b.Fatal(err)
		}
		base += time.Since(start)
		start = time.Now()
		if _, err := shared.Get(ctx, target); err != nil {
			b.Fatal(err)
		}
		red += time.Since(start)
	}
	b.ReportMetric(float64(red)/float64(base), "x-baseline")
	b.ReportMetric(float64((red-base).Microseconds())/float64(b.N), "µs-added")
}
