package broker

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/orders"
)

// gettingStore counts the reads (Get) of the intent store it wraps, which
// vouches for newness as the memory store does.
type gettingStore struct {
	idempotency.Store
	mu   sync.Mutex
	gets int
}

func (s *gettingStore) Get(ctx context.Context, id string) (idempotency.Record, error) {
	s.mu.Lock()
	s.gets++
	s.mu.Unlock()
	return s.Store.Get(ctx, id)
}

func (s *gettingStore) VouchesNew() bool {
	w, ok := s.Store.(idempotency.Witness)
	return ok && w.VouchesNew()
}

// take returns the reads counted since the last take.
func (s *gettingStore) take() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.gets
	s.gets = 0
	return n
}

// decodingCodec counts the orders decoded through the Client's codec and
// keeps the last one.
type decodingCodec struct {
	mu      sync.Mutex
	decodes int
	last    *Order
}

func (d *decodingCodec) Facts(raw []byte) (orders.Facts, error) {
	f, err := orderCodec{}.Facts(raw)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.decodes++
	d.last, _ = f.Order.(*Order)
	return f, err
}

func (d *decodingCodec) take() (int, *Order) {
	d.mu.Lock()
	defer d.mu.Unlock()
	n, o := d.decodes, d.last
	d.decodes, d.last = 0, nil
	return n, o
}

// TestPlaceDecodesOnceAndLeavesTheStoreToTheEngine: a Place decodes the
// create's answer once, through the codec it gives the engine, and
// returns that very Order; the intent store is read by the engine alone,
// never by Place itself. Here the engine records each intent without a
// look first (the venue's clock, far from the test's, is not measured),
// so no Place reads the store: not the first, and not the second, which
// the engine answers from the copy recorded at acknowledgement and which
// then reads the order afresh from the venue.
func TestPlaceDecodesOnceAndLeavesTheStoreToTheEngine(t *testing.T) {
	t.Parallel()
	store := &gettingStore{Store: idempotency.NewMemoryStore()}
	c, v, _ := setup(t, Config{AccountNumber: "AB1234567890", IntentStore: store})
	codec := &decodingCodec{}
	c.place.codec = codec

	order := map[string]any{}
	if err := json.Unmarshal(readFixture(t, "order_open.json"), &order); err != nil {
		t.Fatal(err)
	}
	v.fixture(http.MethodGet, pathTradingPairs, "trading_pairs.json")
	v.reply(http.MethodGet, pathOrders, http.StatusOK, `{"next":null,"results":[]}`) // the look before the first send
	creates := 0
	v.handle(http.MethodPost, pathOrders, func(w http.ResponseWriter, r *http.Request) {
		creates++
		order["client_order_id"] = idempotency.ClientOrderID("AB1234567890", "", "entry")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(order)
	})
	v.handle(http.MethodGet, pathOrders+"6a8738ba-836d-4afd-abd8-483d7e4d01c9/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(order)
	})
	req := OrderRequest{Symbol: "BTC-USD", Side: SideBuy, Type: TypeLimit,
		AssetQuantity: decimal.RequireFromString("0.0001"), LimitPrice: decimal.RequireFromString("36352.78")}
	ctx := context.Background()

	o, err := c.Place(ctx, "entry", req)
	if err != nil {
		t.Fatal(err)
	}
	n, decoded := codec.take()
	if n != 1 || o != decoded {
		t.Errorf("first Place: %d decodes through the codec, returned the codec's Order: %v; want 1, true", n, o == decoded)
	}
	if got := store.take(); got != 0 {
		t.Errorf("first Place read the intent store %d times; want 0 (the engine records without a look while the venue's clock is unmeasured)", got)
	}

	again, err := c.Place(ctx, "entry", req)
	if err != nil {
		t.Fatal(err)
	}
	if again.ID != o.ID {
		t.Fatalf("second Place returned order %s, want %s", again.ID, o.ID)
	}
	if n, _ := codec.take(); n != 1 {
		t.Errorf("second Place: %d decodes of the recorded copy through the codec; want 1", n)
	}
	if got := store.take(); got != 0 {
		t.Errorf("second Place read the intent store %d times; want 0", got)
	}
	if got := v.count(pathOrders + o.ID + "/"); got != 1 {
		t.Errorf("the recorded copy was read afresh %d times; want 1", got)
	}
	if creates != 1 {
		t.Errorf("%d creates sent; want 1", creates)
	}
}
