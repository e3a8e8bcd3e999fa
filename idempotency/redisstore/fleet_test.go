package redisstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
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

const helperEnv = "TRADEWIRE_REDISSTORE_HELPER"

var buy = broker.OrderRequest{Symbol: "BTC-USD", Side: broker.SideBuy, Type: broker.TypeMarket, AssetQuantity: decimal.RequireFromString("0.0001")}

// placeResult is what one process's Place for one key returned.
type placeResult struct {
	Key        string
	OrderID    string
	InProgress bool
	// Answer is what the Place said (see answerOf).
	Answer string
	Err    string
}

// TestHelperProcess is not a test: it is one bot process, started by
// TestFleetPlaceSameKey.
func TestHelperProcess(t *testing.T) {
	redistest.ServeHelper(t, helperEnv, "place", func() (any, error) { return placeBot() })
}

// newPlacer is one process's Placer: a transport client to the venue and
// a Store on the Redis at url, with client_order_ids in namespace ns.
func newPlacer(ctx context.Context, venueURL, apiKey, keyB64, account, url, ns string, storeCfg redisstore.Config) (*broker.Client, idempotency.Store, error) {
	pk, err := signing.ParsePrivateKey(keyB64)
	if err != nil {
		return nil, nil, err
	}
	signer, err := signing.New(apiKey, pk)
	if err != nil {
		return nil, nil, err
	}
	tc, err := transport.New(venueURL, signer, transport.Config{})
	if err != nil {
		return nil, nil, err
	}
	store, err := redisstore.Open(ctx, url, account, storeCfg)
	if err != nil {
		return nil, nil, err
	}
	p, err := broker.NewFromTransport(tc, broker.Config{AccountNumber: account, IntentStore: store, Orders: orders.Config{Namespace: ns}})
	if err != nil {
		store.Close()
		return nil, nil, err
	}
	return p, store, nil
}

func placeBot() ([]placeResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var storeCfg redisstore.Config
	if ms := os.Getenv("STORE_LEASE_MS"); ms != "" {
		n, err := strconv.Atoi(ms)
		if err != nil {
			return nil, err
		}
		storeCfg = redisstore.ShortLeaseForTest(storeCfg, time.Duration(n)*time.Millisecond)
	}
	p, store, err := newPlacer(ctx, os.Getenv("VENUE_URL"), os.Getenv("VENUE_API_KEY"), os.Getenv("VENUE_KEY"),
		os.Getenv("VENUE_ACCOUNT"), os.Getenv("REDIS_URL"), os.Getenv("ORDER_NS"), storeCfg)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	keys := strings.Split(os.Getenv("ORDER_KEYS"), ",")
	if err := redistest.AwaitRelease(); err != nil {
		return nil, err
	}
	out := make([]placeResult, len(keys))
	var wg sync.WaitGroup
	for i, key := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o, err := p.Place(ctx, key, buy)
			out[i] = result(key, o, err)
		}()
	}
	wg.Wait()
	return out, nil
}

func result(key string, o *broker.Order, err error) placeResult {
	r := placeResult{Key: key, Answer: answerOf(o, err)}
	switch {
	case err == nil:
		r.OrderID = o.ID
	case errors.Is(err, idempotency.ErrInProgress):
		var ip *redisstore.InProgressError
		r.InProgress = errors.As(err, &ip) && ip.Owner != ""
		r.Err = err.Error()
	default:
		r.Err = err.Error()
	}
	return r
}

func runID(t *testing.T) string {
	var b [6]byte
	rand.Read(b[:])
	return t.Name() + "-" + hex.EncodeToString(b[:])
}

// forgetIntents deletes the test's intents under the venue's (fixed) demo
// account when the test ends.
func forgetIntents(t *testing.T, url, account string, cids []string) {
	t.Cleanup(func() {
		opt, _ := redis.ParseURL(url)
		c := redis.NewClient(opt)
		defer c.Close()
		ctx := context.Background()
		for _, cid := range cids {
			c.Del(ctx, "tradewire:{"+account+"}:intent:"+cid)
			c.ZRem(ctx, "tradewire:{"+account+"}:intents", cid)
		}
	})
}

// TestFleetPlaceSameKey starts four OS processes that Place the same keys
// at the same moment, through one Redis intent store, against a venue
// that loses the answer to every create (a dropped connection, 500, 503,
// 429: each committed). Each key must leave exactly one order, and every
// process must return that order or a typed "in progress" error.
func TestFleetPlaceSameKey(t *testing.T) {
	if testing.Short() {
		t.Skip("runs OS processes")
	}
	url := redistest.URL(t)
	srv := brokertest.NewServer(venue.Config{Seed: 7})
	defer srv.Close()
	keys := []string{"alpha", "bravo", "charlie", "delta"}
	ns := runID(t)
	cids := map[string]string{}
	var all []string
	for _, k := range keys {
		cids[k] = idempotency.ClientOrderID(srv.AccountNumber, ns, k)
		all = append(all, cids[k])
	}
	forgetIntents(t, url, srv.AccountNumber, all)
	for _, status := range []int{0, 500, 503, 429} {
		if err := srv.Inject(venue.Fault{Kind: "lose_response", Method: "POST", Status: status}); err != nil {
			t.Fatal(err)
		}
	}

	const procs = 4
	ps := redistest.StartProcesses(t, procs, helperEnv+"=place",
		"VENUE_URL="+srv.URL, "VENUE_API_KEY="+srv.APIKey, "VENUE_KEY="+srv.PrivateKeyBase64,
		"VENUE_ACCOUNT="+srv.AccountNumber, "REDIS_URL="+url, "ORDER_NS="+ns, "ORDER_KEYS="+strings.Join(keys, ","))
	perProc := make([][]placeResult, procs)
	ps.Release(t, func(i int) any { return &perProc[i] })
	var results []placeResult
	for i, rs := range perProc {
		if len(rs) != len(keys) {
			t.Fatalf("process %d: %d results, want %d", i, len(rs), len(keys))
		}
		results = append(results, rs...)
	}

	if dups := srv.Ledger().DuplicateClientIDs(); len(dups) > 0 {
		t.Fatalf("orders placed twice: %v", dups)
	}
	placed, busy := 0, 0
	for _, k := range keys {
		os := srv.Ledger().OrdersByClientID(cids[k])
		if len(os) != 1 {
			t.Fatalf("key %s: %d orders at the venue, want 1", k, len(os))
		}
		for _, r := range results {
			if r.Key != k {
				continue
			}
			switch {
			case r.OrderID == os[0].ID:
				placed++
			case r.InProgress:
				busy++
			default:
				t.Errorf("key %s: a process returned %+v, want order %s or in progress", k, r, os[0].ID)
			}
		}
	}
	if pending := srv.PendingFaults(); pending != 0 {
		t.Errorf("%d lost-response faults were not used", pending)
	}
	t.Logf("%d processes × %d keys with every create's answer lost: %d orders at the venue (one per key), %d Places returned the order, %d were told in progress",
		procs, len(keys), len(srv.Ledger().Orders()), placed, busy)

	// Afterwards any process gets the settled order, without a create
	// (broker.Client.Place reads a settled order afresh: GETs only).
	ctx := context.Background()
	p, store, err := newPlacer(ctx, srv.URL, srv.APIKey, srv.PrivateKeyBase64, srv.AccountNumber, url, ns, redisstore.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	before := len(srv.Ledger().Requests())
	for _, k := range keys {
		o, err := p.Place(ctx, k, buy)
		if err != nil || o.ID != srv.Ledger().OrdersByClientID(cids[k])[0].ID {
			t.Fatalf("Place(%s) afterwards = %v, %v", k, o, err)
		}
	}
	for _, r := range srv.Ledger().Requests()[before:] {
		if r.Method != http.MethodGet {
			t.Fatalf("%s %s sent for a settled key", r.Method, r.Target)
		}
	}
}
