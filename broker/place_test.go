package broker_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/tradewire/tradewire/broker"
	"github.com/tradewire/tradewire/broker/brokertest"
	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/orders"
	"github.com/tradewire/tradewire/signing"
	"github.com/tradewire/tradewire/transport"
	"github.com/tradewire/tradewire/venue"
)

func limitBuy() broker.OrderRequest {
	return broker.OrderRequest{Symbol: "BTC-USD", Side: broker.SideBuy, Type: broker.TypeLimit,
		AssetQuantity: decimal.RequireFromString("0.001"), LimitPrice: decimal.RequireFromString("30000")}
}

// placing returns a client on a simulated venue whose intents go to the
// bolt file it names. The venue and the client share the fake clock the
// test advances: nothing sleeps on the real one.
func placing(t *testing.T, extra ...broker.Config) (*broker.Client, *brokertest.Server, string, venue.Clock) {
	t.Helper()
	clk := venue.NewClock(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	srv := brokertest.NewServer(venue.Config{Clock: clk})
	t.Cleanup(srv.Close)
	key, err := signing.ParsePrivateKey(srv.PrivateKeyBase64)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "intents.db")
	cfg := config(extra)
	cfg.APIKey, cfg.PrivateKey, cfg.BaseURL, cfg.IntentStoreFile = srv.APIKey, key, srv.URL, path
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
	return c, srv, path, clk
}

// waitState reads the order until it is in state want, advancing the
// shared fake clock 50 ms between reads, for up to 10 s of its time.
func waitState(t *testing.T, c *broker.Client, clk venue.Clock, id string, want broker.OrderState) {
	t.Helper()
	for deadline := clk.Now().Add(10 * time.Second); clk.Now().Before(deadline); clk.Advance(50 * time.Millisecond) {
		if o, err := c.Order(context.Background(), id); err == nil && o.State == want {
			return
		}
	}
	t.Fatalf("order %s never %s", id, want)
}

// TestPlaceCancelLookUp: the facade places, finds by key and by
// client_order_id, cancels (the one cancel, with its typed refusals), and
// a Place on the acknowledged key returns the order read afresh.
func TestPlaceCancelLookUp(t *testing.T) {
	t.Parallel()
	c, srv, _, clk := placing(t, broker.Config{Orders: orders.Config{Namespace: "t"}})
	ctx := context.Background()
	if got := c.ClientOrderID("k"); got != "" {
		t.Errorf("ClientOrderID before the account is known = %q, want empty", got)
	}
	o, err := c.Place(ctx, "k", limitBuy())
	if err != nil || o.State != broker.StateOpen {
		t.Fatalf("Place = %+v, %v", o, err)
	}
	if want := idempotency.ClientOrderID(srv.AccountNumber, "t", "k"); o.ClientOrderID != want || c.ClientOrderID("k") != want {
		t.Errorf("client_order_id %q, ClientOrderID %q, want %q", o.ClientOrderID, c.ClientOrderID("k"), want)
	}
	for name, get := range map[string]func() (*broker.Order, error){
		"by key": func() (*broker.Order, error) { return c.OrderByKey(ctx, "k") },
		"by id":  func() (*broker.Order, error) { return c.OrderByClientOrderID(ctx, o.ClientOrderID) },
	} {
		if got, err := get(); err != nil || got.ID != o.ID {
			t.Errorf("%s: %+v, %v", name, got, err)
		}
	}
	var nf *broker.NoSuchClientOrderError
	if _, err := c.OrderByKey(ctx, "never"); !errors.As(err, &nf) || !errors.Is(err, broker.ErrNoSuchOrder) {
		t.Errorf("unknown key: %v", err)
	}

	got, err := c.CancelOrder(ctx, o.ID)
	if err != nil || got.ID != o.ID {
		t.Fatalf("CancelOrder = %+v, %v", got, err)
	}
	waitState(t, c, clk, o.ID, broker.StateCanceled)
	again, err := c.Place(ctx, "k", limitBuy())
	if err != nil || again.ID != o.ID || again.State != broker.StateCanceled {
		t.Errorf("Place on the acknowledged key = %+v, %v; want the order read afresh, canceled", again, err)
	}
	if creates := srv.Ledger().OrdersByClientID(o.ClientOrderID); len(creates) != 1 {
		t.Errorf("%d creates, want 1", len(creates))
	}

	var rej *transport.StatusError
	if _, err := c.CancelOrder(ctx, o.ID); !errors.Is(err, broker.ErrRejected) || !errors.As(err, &rej) || len(rej.Errors) == 0 {
		t.Errorf("cancel of a canceled order: %v, want rejected with the venue's answer", err)
	}
	if _, err := c.CancelOrder(ctx, "00000000-0000-4000-8000-000000000000"); !errors.Is(err, broker.ErrNoSuchOrder) {
		t.Errorf("cancel of a missing order: %v", err)
	}
	if _, err := c.CancelOrder(ctx, "../accounts"); !errors.Is(err, broker.ErrInvalidRequest) {
		t.Errorf("bad id: %v", err)
	}
	rep, err := c.Recover(ctx)
	if err != nil || len(rep.Unresolved) != 0 {
		t.Errorf("Recover = %+v, %v", rep, err)
	}
}

// TestReadOnlyClientOpensNoStore: reading the venue never opens or locks
// the intent store; OrderByKey, which asks the store about a key, opens
// it as Place does; Close releases it.
func TestReadOnlyClientOpensNoStore(t *testing.T) {
	t.Parallel()
	c, _, path, _ := placing(t)
	ctx := context.Background()
	if _, err := c.Account(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := broker.Collect(c.Orders(ctx, broker.OrderFilter{})); err != nil {
		t.Fatal(err)
	}
	if _, err := c.OrderByClientOrderID(ctx, "9c8ecd0f-6842-5d7c-a156-fb5db925cc6d"); !errors.Is(err, broker.ErrNoSuchOrder) {
		t.Errorf("OrderByClientOrderID: %v", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a reading client touched the store: %v", err)
	}
	if _, err := c.OrderByKey(ctx, "k"); !errors.Is(err, broker.ErrNoSuchOrder) {
		t.Errorf("OrderByKey: %v", err)
	}
	if _, err := c.Place(ctx, "k", limitBuy()); err != nil {
		t.Fatal(err)
	}
	if _, err := idempotency.Open(path, idempotency.Config{}); !errors.Is(err, idempotency.ErrLocked) {
		t.Errorf("the store is not held while placing: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := idempotency.Open(path, idempotency.Config{})
	if err != nil {
		t.Fatalf("after Close: %v", err)
	}
	s.Close()
}

// TestPlaceRefusesWhatPreviewRefuses: one check for both.
func TestPlaceRefusesWhatPreviewRefuses(t *testing.T) {
	t.Parallel()
	c, srv, path, _ := placing(t)
	bad := limitBuy()
	bad.LimitPrice = decimal.Zero
	_, perr := c.Preview(context.Background(), bad)
	_, err := c.Place(context.Background(), "k", bad)
	var a, b *broker.ArgumentError
	if !errors.As(perr, &a) || !errors.As(err, &b) || a.Field != b.Field || !errors.Is(err, broker.ErrInvalidRequest) {
		t.Errorf("Preview: %v; Place: %v", perr, err)
	}
	if len(srv.Ledger().Requests()) != 0 {
		t.Error("something was sent")
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Error("a refused request opened the store")
	}
}

// TestPlaceRefusesKeysNotMeant: a key is compared byte for byte, so one
// that cannot be what its caller meant (surrounding whitespace, a control
// character, text not in NFC) is refused, naming the key, before anything
// is sent or the store is opened; OrderByKey refuses it too.
func TestPlaceRefusesKeysNotMeant(t *testing.T) {
	t.Parallel()
	c, srv, path, _ := placing(t)
	for _, key := range []string{"k ", " k", "k\x00", "k\n", "cafe\u0301", "\xff"} {
		_, err := c.Place(context.Background(), key, limitBuy())
		var a *broker.ArgumentError
		if !errors.As(err, &a) || a.Field != "key" || !errors.Is(err, broker.ErrInvalidRequest) {
			t.Errorf("Place(%q) = %v; want an *ArgumentError on key", key, err)
		}
		if _, err := c.OrderByKey(context.Background(), key); !errors.As(err, &a) || a.Field != "key" {
			t.Errorf("OrderByKey(%q) = %v; want an *ArgumentError on key", key, err)
		}
	}
	if len(srv.Ledger().Requests()) != 0 {
		t.Error("something was sent")
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Error("a refused key opened the store")
	}
	if _, err := c.Place(context.Background(), "caf\u00e9 #1", limitBuy()); err != nil {
		t.Fatalf("Place of a key in NFC: %v", err)
	}
}

// TestIntentReadsTheStoreAlone: Intent answers what the store holds for a
// key without a request: nothing for a key never placed, the acknowledged
// intent and its order's id for one placed.
func TestIntentReadsTheStoreAlone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, srv, _, _ := placing(t, broker.Config{AccountNumber: "TW0000000001"})
	if _, err := c.Intent(ctx, "never"); !errors.Is(err, idempotency.ErrNotFound) {
		t.Fatalf("Intent(never) = %v; want ErrNotFound", err)
	}
	if n := len(srv.Ledger().Requests()); n != 0 {
		t.Fatalf("Intent sent %d requests", n)
	}
	o, err := c.Place(ctx, "k", limitBuy())
	if err != nil {
		t.Fatal(err)
	}
	n := len(srv.Ledger().Requests())
	rec, err := c.Intent(ctx, "k")
	if err != nil || rec.State != idempotency.Acknowledged || rec.OrderID != o.ID || rec.Key != "k" {
		t.Fatalf("Intent(k) = %+v, %v; want it acknowledged with order %s", rec, err, o.ID)
	}
	if len(srv.Ledger().Requests()) != n {
		t.Fatal("Intent sent a request")
	}
}
