package broker_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/tradewire/tradewire/broker"
	"github.com/tradewire/tradewire/broker/brokertest"
	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/idempotency/pgstore"
	"github.com/tradewire/tradewire/idempotency/redisstore"
	"github.com/tradewire/tradewire/internal/pgconn"
	"github.com/tradewire/tradewire/internal/pgtest"
	"github.com/tradewire/tradewire/internal/redistest"
	"github.com/tradewire/tradewire/signing"
	"github.com/tradewire/tradewire/transport"
	"github.com/tradewire/tradewire/venue"
)

// arrivals is a RoundTripper that notes when each create reaches the
// venue, and counts the requests.
type arrivals struct {
	next     http.RoundTripper
	mu       sync.Mutex
	last     time.Time
	requests int
}

func (a *arrivals) RoundTrip(r *http.Request) (*http.Response, error) {
	a.mu.Lock()
	a.requests++
	if r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/api/v2/crypto/trading/orders/") {
		a.last = time.Now()
	}
	a.mu.Unlock()
	return a.next.RoundTrip(r)
}

func (a *arrivals) lastCreate() time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.last
}

// BenchmarkFleetPlaceLatency times a Place of a new key through a fleet's
// intent store — PostgreSQL (a primary with a synchronous standby) and
// Redis (appendfsync always) — from the call until its create reaches the
// venue, against a floor measured in the same loop on the same server: one
// durable write (an INSERT committed to the standby; a SET fsynced), then
// one raw signed POST of a create. Reported as place/floor, with the
// requests a Place sends (req/place).
//
//	bash internal/redistest/with-redis.sh bash internal/pgtest/with-postgres.sh \
//	  go test -run '^$' -bench FleetPlaceLatency -benchtime 200x ./broker/
func BenchmarkFleetPlaceLatency(b *testing.B) {
	for _, kind := range []string{"postgres", "redis"} {
		b.Run(kind, func(b *testing.B) {
			ctx := context.Background()
			srv := brokertest.NewServer(venue.Config{AccountNumber: pgtest.Account(b), RateLimits: venue.RateLimits{Account: venue.RateLimit{PerMinute: 1e9, Burst: 1e6}}})
			defer srv.Close()
			rt := &arrivals{next: srv.Client().Transport}
			key, err := signing.ParsePrivateKey(srv.PrivateKeyBase64)
			if err != nil {
				b.Fatal(err)
			}
			signer, err := signing.New(srv.APIKey, key)
			if err != nil {
				b.Fatal(err)
			}
			tc, err := transport.New(srv.URL, signer, transport.Config{RoundTripper: rt, RatePerMinute: -1})
			if err != nil {
				b.Fatal(err)
			}
			var store idempotency.Store
			var durable func(i int) error
			switch kind {
			case "postgres":
				url := pgtest.URL(b)
				if store, err = pgstore.Open(ctx, url, srv.AccountNumber, pgstore.Config{}); err != nil {
					b.Fatal(err)
				}
				pool, err := pgconn.Connect(ctx, url, pgconn.Options{})
				if err != nil {
					b.Fatal(err)
				}
				defer pool.Close()
				table := "bench_floor_" + strings.ToLower(srv.AccountNumber)
				if _, err := pool.Exec(ctx, "CREATE TABLE "+table+" (k text PRIMARY KEY, v bytea)"); err != nil {
					b.Fatal(err)
				}
				defer pool.Exec(context.Background(), "DROP TABLE "+table)
				record := make([]byte, 700)
				durable = func(i int) error {
					_, err := pool.Exec(ctx, "INSERT INTO "+table+" (k, v) VALUES ($1, $2)", fmt.Sprint(i), record)
					return err
				}
			case "redis":
				url := redistest.URL(b)
				if store, err = redisstore.Open(ctx, url, srv.AccountNumber, redisstore.Config{}); err != nil {
					b.Fatal(err)
				}
				opt, _ := redis.ParseURL(url)
				rdb := redis.NewClient(opt)
				defer rdb.Close()
				record := make([]byte, 700)
				durable = func(i int) error {
					return rdb.Set(ctx, fmt.Sprintf("bench-floor:%s:%d", srv.AccountNumber, i), record, time.Minute).Err()
				}
			}
			defer store.Close()
			c, err := broker.NewFromTransport(tc, broker.Config{AccountNumber: srv.AccountNumber, IntentStore: store})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			if _, err := c.Place(ctx, "warm", pgBuy); err != nil { // the pair's rules, the venue's clock
				b.Fatal(err)
			}
			target := "/api/v2/crypto/trading/orders/?account_number=" + srv.AccountNumber
			var place, floor time.Duration
			var requests int
			for i := 0; b.Loop(); i++ {
				start := time.Now()
				if err := durable(i); err != nil {
					b.Fatal(err)
				}
				body := fmt.Sprintf(`{"client_order_id":%q,"side":"buy","type":"market","symbol":"BTC-USD","market_order_config":{"asset_quantity":"0.0001"}}`, uuid.NewString())
				if _, err := tc.Do(ctx, "POST", target, []byte(body)); err != nil {
					b.Fatal(err)
				}
				floor += rt.lastCreate().Sub(start)
				rt.mu.Lock()
				before := rt.requests
				rt.mu.Unlock()
				mid := time.Now()
				if _, err := c.Place(ctx, fmt.Sprint("place-", i), pgBuy); err != nil {
					b.Fatal(err)
				}
				place += rt.lastCreate().Sub(mid)
				rt.mu.Lock()
				requests += rt.requests - before
				rt.mu.Unlock()
			}
			b.ReportMetric(float64(place)/float64(floor), "place/floor")
			b.ReportMetric(float64(requests)/float64(b.N), "req/place")
			b.ReportMetric(float64(floor.Microseconds())/float64(b.N), "floor-µs/op")
		})
	}
}
