package broker_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/shopspring/decimal"

	"github.com/tradewire/tradewire/broker"
	"github.com/tradewire/tradewire/broker/brokertest"
	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/idempotency/redisstore"
	"github.com/tradewire/tradewire/internal/redistest"
	"github.com/tradewire/tradewire/orders"
	"github.com/tradewire/tradewire/signing"
	"github.com/tradewire/tradewire/transport"
	"github.com/tradewire/tradewire/venue"
)

// TestTwoHoldersOneStore: two Clients in one process share one intent
// store, as a bot with several clients must (a bbolt file opens once per
// process), and a job re-delivered to a second worker places the same key
// from both at once, on a venue that creates a second order for a reused
// client_order_id. The store's claim lets one of them send; the other is
// told the key is in progress, or gets the order once it is placed. No
// key gets two orders, with the bbolt, memory and Redis stores alike, and
// with two processes each holding a Redis store of its own; in memory, over
// TLS + HTTP/2 and over HTTP/1.1 on loopback.
func TestTwoHoldersOneStore(t *testing.T) {
	openers := map[string]func(t *testing.T, account string) idempotency.Store{
		"bolt": func(t *testing.T, _ string) idempotency.Store {
			s, err := idempotency.Open(filepath.Join(t.TempDir(), "intents.db"), idempotency.Config{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		},
		"memory": func(*testing.T, string) idempotency.Store { return idempotency.NewMemoryStore() },
		"redis": func(t *testing.T, account string) idempotency.Store {
			url := redistest.URL(t)
			s, err := redisstore.Open(context.Background(), url, account, redisstore.Config{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		},
	}
	for _, tc := range []struct {
		name, store string
		keys        int
		wire        string // "" in memory; "tls": TLS + HTTP/2 on loopback, as the real venue is served; "http": HTTP/1.1 on loopback
		processes   bool   // each Client with a store of its own on one database (Redis)
	}{
		{"bolt", "bolt", 1000, "", false},
		{"memory", "memory", 1000, "", false},
		{"redis", "redis", 1000, "", false},
		{"redis, two processes", "redis", 1000, "", true},
		{"bolt over TLS and HTTP/2", "bolt", 200, "tls", false},
		{"redis, two processes, over TLS and HTTP/2", "redis", 200, "tls", true},
		{"memory over HTTP/1.1", "memory", 200, "http", false},
		{"redis, two processes, over HTTP/1.1", "redis", 200, "http", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			const batch = 50
			keys := tc.keys
			clk := clockwork.NewFakeClockAt(time.Date(2026, 8, 20, 18, 0, 0, 0, time.UTC))
			opts := venue.Config{Clock: clk, RateLimits: venue.RateLimits{Account: venue.RateLimit{PerMinute: math.Inf(1)}}, Faults: venue.FaultPlan{Duplicate: venue.CreateSecond}}
			var srv *brokertest.Server
			switch tc.wire {
			case "tls":
				srv = brokertest.NewTLSServer(opts)
			case "http":
				srv = brokertest.NewServer(opts)
			default:
				var err error
				if srv, err = brokertest.New(opts); err != nil {
					t.Fatal(err)
				}
			}
			t.Cleanup(srv.Close)
			rt := srv.Client().Transport // in memory, or HTTP/2 to the TLS server
			if tc.wire == "http" {
				rt = http.DefaultTransport.(*http.Transport).Clone() // HTTP/1.1 on loopback
			}
			open := openers[tc.store]
			store := open(t, srv.AccountNumber)
			key, err := signing.ParsePrivateKey(srv.PrivateKeyBase64)
			if err != nil {
				t.Fatal(err)
			}
			ns := fmt.Sprintf("holders-%d", time.Now().UnixNano())
			var clients [2]*broker.Client
			for i := range clients {
				if tc.processes && i > 0 {
					store = open(t, srv.AccountNumber)
				}
				c, err := broker.New(broker.Config{
					APIKey:        srv.APIKey,
					PrivateKey:    key,
					BaseURL:       srv.URL,
					AccountNumber: srv.AccountNumber,
					IntentStore:   store,
					Transport:     transport.Config{RoundTripper: rt, Clock: clk, RatePerMinute: -1},
					Orders:        orders.Config{Namespace: ns},
				})
				if err != nil {
					t.Fatal(err)
				}
				clients[i] = c
			}
			ctx := context.Background()
			req := broker.OrderRequest{Symbol: "BTC-USD", Side: broker.SideBuy, Type: broker.TypeLimit,
				AssetQuantity: decimal.RequireFromString("0.0001"), LimitPrice: decimal.RequireFromString("1000")}
			inProgress := 0
			var mu sync.Mutex
			for start := 0; start < keys; start += batch {
				var wg sync.WaitGroup
				for k := start; k < start+batch; k++ {
					for _, c := range clients {
						wg.Go(func() {
							key := fmt.Sprintf("job-%d", k)
							o, err := c.Place(ctx, key, req)
							switch {
							case err == nil:
								if got := srv.Ledger().OrdersByClientID(c.ClientOrderID(key)); len(got) != 1 || got[0].ID != o.ID {
									t.Errorf("Place(%s) returned order %s; the venue holds %+v", key, o.ID, got)
								}
							case errors.Is(err, broker.ErrInProgress):
								mu.Lock()
								inProgress++
								mu.Unlock()
							default:
								t.Errorf("Place(%s): %v", key, err)
							}
						})
					}
				}
				wg.Wait()
				// The next batch's lookups reach back past this one.
				clk.Advance(5 * time.Minute)
			}
			if dup := srv.Ledger().DuplicateClientIDs(); len(dup) != 0 {
				t.Fatalf("%d of %d keys got two orders, such as client_order_id %s", len(dup), keys, dup[0])
			}
			if n := len(srv.Ledger().Orders()); n != keys {
				t.Fatalf("%d orders for %d keys", n, keys)
			}
			t.Logf("%s: %d keys placed from two clients: one order each; %d Places answered in progress", tc.name, keys, inProgress)
		})
	}
}
