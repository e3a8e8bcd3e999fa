package cli

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/tradewire/tradewire/broker"
	"github.com/tradewire/tradewire/broker/brokertest"
	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/signing"
	"github.com/tradewire/tradewire/transport"
	"github.com/tradewire/tradewire/venue"
)

// lineWriter collects what is written, safe for concurrent use, and
// signals each write.
type lineWriter struct {
	mu    sync.Mutex
	buf   strings.Builder
	wrote chan struct{}
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.buf.Write(p)
	w.mu.Unlock()
	select {
	case w.wrote <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (w *lineWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

func (w *lineWriter) lines() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Split(strings.TrimSuffix(w.buf.String(), "\n"), "\n")
}

// TestWatch_JSONLinesUntilStopped prints one JSON object a line for an
// order placed through the store and one placed elsewhere (external),
// and ends with exit 0 when its context is canceled, as SIGINT does.
func TestWatch_JSONLinesUntilStopped(t *testing.T) {
	t.Parallel()
	clk := venue.NewClock(time.Date(2026, 8, 20, 18, 0, 0, 0, time.UTC))
	srv := brokertest.NewServer(venue.Config{Seed: simSeed, Clock: clk})
	t.Cleanup(srv.Close)
	env := map[string]string{envBaseURL: srv.URL, envAPIKey: srv.APIKey, envPrivateKey: srv.PrivateKeyBase64,
		envStore: filepath.Join(t.TempDir(), "intents.db")}
	opts := Options{Getenv: func(k string) string { return env[k] }, Clock: clk}

	ours := runWith(t, opts, append(append([]string{}, placeArgs...), "--idempotency-key", "ours")...)
	if ours.code != 0 {
		t.Fatalf("order place: %+v", ours)
	}
	key, err := signing.ParsePrivateKey(srv.PrivateKeyBase64)
	if err != nil {
		t.Fatal(err)
	}
	other, err := broker.New(broker.Config{APIKey: srv.APIKey, PrivateKey: key, BaseURL: srv.URL,
		IntentStore: idempotency.NewMemoryStore(), Transport: transport.Config{Clock: clk}})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	ext, err := other.Place(context.Background(), "elsewhere", broker.OrderRequest{Symbol: "ETH-USD", Side: broker.SideBuy,
		Type: broker.TypeMarket, AssetQuantity: decimal.RequireFromString("0.01")})
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &lineWriter{wrote: make(chan struct{}, 1)}
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, []string{"watch", "--since", "10m"}, Options{Getenv: opts.Getenv, Clock: clk, Stdout: out})
	}()
	for len(out.lines()) < 2 {
		select {
		case <-out.wrote:
		case code := <-done:
			t.Fatalf("watch ended with %d before printing two events: %q", code, out.lines())
		}
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("watch stopped with exit %d, want 0", code)
	}
	byID := map[string]map[string]any{}
	for _, l := range out.lines() {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		for _, k := range []string{"event_id", "event", "id", "client_order_id", "symbol", "state", "filled_asset_quantity", "updated_at"} {
			if s, _ := m[k].(string); s == "" {
				t.Errorf("line %q: no %s", l, k)
			}
		}
		byID[m["id"].(string)] = m
	}
	if m := byID[ext.ID]; m == nil || m["external"] != true || m["event"] != "filled" || m["filled_asset_quantity"] != "0.01" {
		t.Errorf("the external market order: %v; want filled 0.01, external", m)
	}
	var placed struct{ ID string }
	if err := json.Unmarshal([]byte(ours.stdout), &placed); err != nil {
		t.Fatal(err)
	}
	if m := byID[placed.ID]; m == nil || m["external"] != false || m["event"] != "created" || m["intent"] != "acknowledged" {
		t.Errorf("the order placed through the store: %v; want created, acknowledged, not external", m)
	}
}

func TestWatch_UsageErrors(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"watch", "--since", "yesterday"},
		{"watch", "-o", "csv"},
		{"watch", "--interval", "-1s"},
	} {
		rt := &countingRoundTripper{}
		r := runWith(t, Options{Getenv: func(k string) string {
			return map[string]string{envAPIKey: testAPIKey, envPrivateKey: testSeedB64}[k]
		}, TransportConfig: transport.Config{RoundTripper: rt}}, args...)
		if r.code != 2 || rt.count() != 0 {
			t.Errorf("%v: exit %d after %d requests (%s); want 2 and nothing sent", args, r.code, rt.count(), r.stderr)
		}
	}
}

func TestWatch_LineForAPerson(t *testing.T) {
	t.Parallel()
	ev := broker.Event{ID: "x", Kind: broker.EventPartiallyFilled, External: true,
		FillQuantity: decimal.RequireFromString("0.25"), FillPrice: decimal.NewNullDecimal(decimal.RequireFromString("65000.5")),
		FillFee: decimal.RequireFromString("0.1"),
		Order: broker.Order{ID: "6a8738ba-836d-4afd-abd8-483d7e4d01c9", Symbol: "BTC-USD", Side: broker.SideBuy,
			State: broker.StatePartiallyFilled, FilledAssetQuantity: decimal.RequireFromString("0.5"),
			UpdatedAt: time.Date(2026, 8, 20, 18, 0, 1, 0, time.UTC)}}
	want := "2026-08-20T18:00:01Z  partially_filled  BTC-USD buy 6a8738ba-836d-4afd-abd8-483d7e4d01c9  filled 0.5 (+0.25 @ 65000.5, fee 0.1)  external\n"
	if got := watchLine(ev); got != want {
		t.Errorf("watchLine:\n got %q\nwant %q", got, want)
	}
}

// TestWatch_SettledIntentLine: an intent the watch settled is a line of
// its own, naming the client_order_id, its new state and, when there is
// one, the order.
func TestWatch_SettledIntentLine(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 8, 20, 18, 0, 1, 0, time.UTC)
	for _, tc := range []struct {
		ev   broker.Event
		want string
	}{
		{broker.Event{ID: "s1", Kind: broker.EventSettled, Intent: idempotency.Acknowledged,
			Order: broker.Order{ID: "6a8738ba-836d-4afd-abd8-483d7e4d01c9", ClientOrderID: "c1", Symbol: "BTC-USD", UpdatedAt: at}},
			"2026-08-20T18:00:01Z  settled           BTC-USD intent c1 now acknowledged, order 6a8738ba-836d-4afd-abd8-483d7e4d01c9\n"},
		{broker.Event{ID: "s2", Kind: broker.EventSettled, Intent: idempotency.NotPlaced,
			Order: broker.Order{ClientOrderID: "c2", Symbol: "ETH-USD", UpdatedAt: at}},
			"2026-08-20T18:00:01Z  settled           ETH-USD intent c2 now not_placed\n"},
	} {
		if got := watchLine(tc.ev); got != tc.want {
			t.Errorf("watchLine:\n got %q\nwant %q", got, tc.want)
		}
		if j := watchJSON(tc.ev); j.Event != "settled" || j.Intent != string(tc.ev.Intent) || j.ClientOrderID != tc.ev.Order.ClientOrderID {
			t.Errorf("watchJSON: %+v", j)
		}
	}
}
