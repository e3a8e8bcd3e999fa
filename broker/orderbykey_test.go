package broker_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tradewire/tradewire/broker"
	"github.com/tradewire/tradewire/broker/brokertest"
	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/signing"
	"github.com/tradewire/tradewire/venue"
)

// keyed returns a client on a simulated venue holding history orders
// (final, over the last 30 days), with opts.
func keyed(t *testing.T, history int, extra ...broker.Config) (*broker.Client, *brokertest.Server) {
	t.Helper()
	clk := venue.NewClock(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	srv := brokertest.NewServer(venue.Config{Clock: clk, BulkOrders: history})
	t.Cleanup(srv.Close)
	key, err := signing.ParsePrivateKey(srv.PrivateKeyBase64)
	if err != nil {
		t.Fatal(err)
	}
	cfg := config(extra)
	cfg.APIKey, cfg.PrivateKey, cfg.BaseURL = srv.APIKey, key, srv.URL
	if cfg.Transport.RoundTripper == nil {
		cfg.Transport.RoundTripper = srv.Client().Transport
	}
	if cfg.Transport.Clock == nil {
		cfg.Transport.Clock = clk
	}
	c, err := broker.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, srv
}

// lists counts the orders list requests the venue received.
func lists(srv *brokertest.Server) int {
	n := 0
	for _, r := range srv.Ledger().Requests() {
		if r.Method == "GET" && len(r.Target) > len("/api/v2/crypto/trading/orders/?") && r.Target[:len("/api/v2/crypto/trading/orders/?")] == "/api/v2/crypto/trading/orders/?" {
			n++
		}
	}
	return n
}

// TestOrderByKeyNeverUsed: on an account with 3,000 orders, a key the
// Client's bolt store never saw is no order, answered by the store: at
// most the account read, no listing. A store that does not vouch, or a
// file another process holds, leaves the answer to the venue's list.
func TestOrderByKeyNeverUsed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	noSuch := func(t *testing.T, err error) {
		t.Helper()
		var nf *broker.NoSuchClientOrderError
		if !errors.As(err, &nf) || !errors.Is(err, broker.ErrNoSuchOrder) {
			t.Fatalf("OrderByKey = %v, want a *NoSuchClientOrderError", err)
		}
	}
	t.Run("bolt store, account resolved", func(t *testing.T) {
		t.Parallel()
		c, srv := keyed(t, 3000, broker.Config{IntentStoreFile: filepath.Join(t.TempDir(), "intents.db")})
		_, err := c.OrderByKey(ctx, "never")
		noSuch(t, err)
		if n := len(srv.Ledger().Requests()); n > 1 {
			t.Fatalf("%d requests, want at most the account read", n)
		}
	})
	t.Run("bolt store, account given", func(t *testing.T) {
		t.Parallel()
		c, srv := keyed(t, 3000, broker.Config{IntentStoreFile: filepath.Join(t.TempDir(), "intents.db")})
		acct, err := c.Account(ctx)
		if err != nil {
			t.Fatal(err)
		}
		c2, err := broker.NewFromTransport(c.Transport(), broker.Config{
			AccountNumber:   acct.AccountNumber,
			IntentStoreFile: filepath.Join(t.TempDir(), "intents.db"),
		})
		if err != nil {
			t.Fatal(err)
		}
		defer c2.Close()
		before := len(srv.Ledger().Requests())
		_, err = c2.OrderByKey(ctx, "never")
		noSuch(t, err)
		if n := len(srv.Ledger().Requests()) - before; n != 0 {
			t.Fatalf("%d requests, want none", n)
		}
	})
	t.Run("a store that does not vouch lists", func(t *testing.T) {
		t.Parallel()
		c, srv := keyed(t, 30, broker.Config{IntentStore: idempotency.NewMemoryStore()})
		_, err := c.OrderByKey(ctx, "never")
		noSuch(t, err)
		if lists(srv) == 0 {
			t.Fatal("OrderByKey on a store that cannot vouch did not read the venue")
		}
	})
	t.Run("a file another process holds lists", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "intents.db")
		held, err := idempotency.Open(path, idempotency.Config{})
		if err != nil {
			t.Fatal(err)
		}
		defer held.Close()
		c, srv := keyed(t, 30, broker.Config{IntentStoreFile: path})
		_, err = c.OrderByKey(ctx, "never")
		noSuch(t, err)
		if lists(srv) == 0 {
			t.Fatal("OrderByKey without the store did not read the venue")
		}
	})
}

// TestOrderByKeyRecordedIDNotFound: the store recorded an order id the
// venue does not hold (a 2xx that named another id): OrderByKey and
// OrderByClientOrderID find the order by its client_order_id in the list.
func TestOrderByKeyRecordedIDNotFound(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := &wrongOrderID{Store: idempotency.NewMemoryStore()}
	c, _ := keyed(t, 30, broker.Config{IntentStore: store})
	o, err := c.Place(ctx, "k", limitBuy())
	if err != nil {
		t.Fatal(err)
	}
	store.wrong.Store(true)
	for name, get := range map[string]func() (*broker.Order, error){
		"by key": func() (*broker.Order, error) { return c.OrderByKey(ctx, "k") },
		"by id":  func() (*broker.Order, error) { return c.OrderByClientOrderID(ctx, o.ClientOrderID) },
	} {
		if got, err := get(); err != nil || got.ID != o.ID {
			t.Errorf("%s: %+v, %v; want order %s", name, got, err, o.ID)
		}
	}
}

// wrongOrderID, once wrong is set, reads every record back with an order
// id the venue does not hold.
type wrongOrderID struct {
	idempotency.Store
	wrong atomic.Bool
}

func (w *wrongOrderID) Get(ctx context.Context, id string) (idempotency.Record, error) {
	rec, err := w.Store.Get(ctx, id)
	if err == nil && w.wrong.Load() {
		rec.OrderID = "00000000-0000-4000-8000-000000000000"
	}
	return rec, err
}
