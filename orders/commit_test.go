package orders_test

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

	bolt "go.etcd.io/bbolt"

	"github.com/tradewire/tradewire/broker/brokertest"
	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/orders"
	"github.com/tradewire/tradewire/signing"
	"github.com/tradewire/tradewire/transport"
	"github.com/tradewire/tradewire/venue"
)

// writeLog is a store that notes each durable write, and the transport's
// round tripper that notes each create, in one sequence.
type writeLog struct {
	idempotency.Store
	mu  sync.Mutex
	log []string
}

func (w *writeLog) note(s string) {
	w.mu.Lock()
	w.log = append(w.log, s)
	w.mu.Unlock()
}

func (w *writeLog) VouchesNew() bool { return true }

func (w *writeLog) Create(ctx context.Context, rec idempotency.Record) (idempotency.Record, bool, error) {
	got, created, err := w.Store.Create(ctx, rec)
	if created {
		w.note(fmt.Sprintf("create sends=%d", rec.Sends))
	}
	return got, created, err
}

func (w *writeLog) Update(ctx context.Context, rec idempotency.Record) error {
	w.note("update " + string(rec.State))
	return w.Store.Update(ctx, rec)
}

// placement is a Placer on a bbolt store and an in-memory venue with no
// rate limits, the venue's clock already read.
func placement(tb testing.TB, store func(idempotency.Store) idempotency.Store, wrap func(http.RoundTripper) http.RoundTripper) (*orders.Placer, *transport.Client, *brokertest.Server) {
	tb.Helper()
	srv, err := brokertest.New(venue.Config{RateLimits: venue.RateLimits{Account: venue.RateLimit{PerMinute: math.Inf(1)}}, Faults: venue.FaultPlan{Duplicate: venue.CreateSecond}})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(srv.Close)
	key, _ := signing.ParsePrivateKey(srv.PrivateKeyBase64)
	signer, _ := signing.New(srv.APIKey, key)
	rt := srv.Client().Transport
	if wrap != nil {
		rt = wrap(rt)
	}
	tc, err := transport.New(srv.URL, signer, transport.Config{RoundTripper: rt, RatePerMinute: -1})
	if err != nil {
		tb.Fatal(err)
	}
	bs, err := idempotency.Open(filepath.Join(tb.TempDir(), "intents.db"), idempotency.Config{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { bs.Close() })
	var s idempotency.Store = bs
	if store != nil {
		s = store(bs)
	}
	p, err := orders.New(tc, s, srv.AccountNumber, codec{}, orders.Config{})
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := tc.Get(context.Background(), "/api/v2/crypto/trading/accounts/"); err != nil {
		tb.Fatal(err)
	}
	return p, tc, srv
}

// TestOneWriteBeforeTheCreate: on a store that vouches for newness, with
// the venue's clock known, a new key costs one durable write before its
// create leaves — the record, its claim and its signature's time in one —
// and one after, the outcome.
func TestOneWriteBeforeTheCreate(t *testing.T) {
	w := &writeLog{}
	p, _, _ := placement(t, func(s idempotency.Store) idempotency.Store { w.Store = s; return w },
		func(next http.RoundTripper) http.RoundTripper {
			return rtFunc(func(r *http.Request) (*http.Response, error) {
				if isCreate(r) {
					w.note("POST")
				}
				return next.RoundTrip(r)
			})
		})
	if _, err := p.Place(context.Background(), "k", handBuy); err != nil {
		t.Fatal(err)
	}
	want := []string{"create sends=1", "POST", "update acknowledged"}
	if fmt.Sprint(w.log) != fmt.Sprint(want) {
		t.Fatalf("writes and sends: %q; want %q", w.log, want)
	}
}

// BenchmarkPlaceLatency times a Place of a new key on a bbolt store, from
// the call until its create reaches the venue, against its floor measured
// in the same loop: one bbolt commit of a record of about the same size,
// then one raw signed POST of the same create, until it reaches the venue.
// Reported as place/floor; the whole Place (with its second commit, the
// outcome) as whole/floor.
//
//	go test -run '^$' -bench PlaceLatency -benchtime 200x -count 3 ./orders/
func BenchmarkPlaceLatency(b *testing.B) {
	var arrived time.Time // when the last create reached the venue
	p, tc, srv := placement(b, nil, func(next http.RoundTripper) http.RoundTripper {
		return rtFunc(func(r *http.Request) (*http.Response, error) {
			if isCreate(r) {
				arrived = time.Now()
			}
			return next.RoundTrip(r)
		})
	})
	db, err := bolt.Open(filepath.Join(b.TempDir(), "floor.db"), 0o600, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	target := "/api/v2/crypto/trading/orders/?account_number=" + srv.AccountNumber
	record := make([]byte, 700) // about an intent's JSON before its order is known
	var place, whole, floor time.Duration
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		cid := p.ClientOrderID(fmt.Sprint("floor-", i))
		if err := db.Update(func(tx *bolt.Tx) error {
			bk, err := tx.CreateBucketIfNotExists([]byte("intents"))
			if err != nil {
				return err
			}
			return bk.Put([]byte(cid), record)
		}); err != nil {
			b.Fatal(err)
		}
		body, _ := handBuy.Body(cid)
		if _, err := tc.Do(ctx, "POST", target, body); err != nil {
			b.Fatal(err)
		}
		floor += arrived.Sub(start)
		mid := time.Now()
		if _, err := p.Place(ctx, fmt.Sprint("place-", i), handBuy); err != nil {
			b.Fatal(err)
		}
		place += arrived.Sub(mid)
		whole += time.Since(mid)
	}
	b.ReportMetric(float64(place)/float64(floor), "place/floor")
	b.ReportMetric(float64(whole)/float64(floor), "whole/floor")
	b.ReportMetric(float64(floor.Microseconds())/float64(b.N), "floor-µs/op")
}

// TestPlaceRefusesKeysNotMeant: the engine refuses a key CheckKey refuses
// before it records or sends anything.
func TestPlaceRefusesKeysNotMeant(t *testing.T) {
	w := &writeLog{}
	p, _, srv := placement(t, func(s idempotency.Store) idempotency.Store { w.Store = s; return w }, nil)
	before := len(srv.Ledger().Requests())
	_, err := p.Place(context.Background(), "k\t", handBuy)
	var ke *idempotency.KeyError
	if !errors.Is(err, transport.ErrInvalidRequest) || !errors.As(err, &ke) {
		t.Fatalf("Place = %v; want a refused key", err)
	}
	if n := len(srv.Ledger().Requests()) - before; n != 0 || len(w.log) != 0 {
		t.Fatalf("%d requests sent, writes %q; want none", n, w.log)
	}
}
