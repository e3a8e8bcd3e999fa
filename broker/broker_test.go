package broker

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/shopspring/decimal"

	"github.com/tradewire/tradewire/internal/pages"
	"github.com/tradewire/tradewire/transport"
)

const (
	openID   = "6a8738ba-836d-4afd-abd8-483d7e4d01c9"
	acctPath = pathAccounts
)

// paged serves items in pages of per, linked by a cursor query parameter
// that keeps the rest of the query. Page i's next link is made by link.
func paged(v *fakeVenue, path string, items []string, per int) {
	v.handle(http.MethodGet, path, func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		i, _ := strconv.Atoi(q.Get("cursor"))
		lo, hi := i*per, min((i+1)*per, len(items))
		next := "null"
		if hi < len(items) {
			q.Set("cursor", strconv.Itoa(i+1))
			next = strconv.Quote(v.url(r.URL.Path + "?" + q.Encode()))
		}
		fmt.Fprintf(w, `{"next":%s,"previous":null,"results":[%s]}`, next, strings.Join(items[lo:hi], ","))
	})
}

func holdingItems(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf(`{"account_number":"AB1234567890","asset_code":"C%d","total_quantity":"%d.5","quantity_available_for_trading":%d}`, i, i, i)
	}
	return out
}

func TestNewCredentials(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "key")
	if err := os.WriteFile(keyFile, []byte(testSeed+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	tests := []struct {
		name     string
		cfg      Config
		wantErr  string // substring; empty means success
		wantBase string
	}{
		{"env base64", Config{Getenv: env(envAPIKey, testAPIKey, envPrivateKey, testSeed)}, "", defaultBaseURL},
		{"env file and base URL", Config{
			Getenv: env(envAPIKey, testAPIKey, envPrivateKeyFile, keyFile, envBaseURL, "http://127.0.0.1:9"),
		}, "", "http://127.0.0.1:9"},
		{"explicit base URL wins", Config{
			BaseURL: "https://venue.example",
			Getenv:  env(envAPIKey, testAPIKey, envPrivateKey, testSeed, envBaseURL, "http://127.0.0.1:9"),
		}, "", "https://venue.example"},
		{"explicit credentials win", Config{
			APIKey:     testAPIKey,
			PrivateKey: testKey(t),
			Getenv:     env(envPrivateKey, "garbage"),
		}, "", defaultBaseURL},
		{"no source", Config{}, "Getenv (os.Getenv)", ""},
		{"env lacks API key", Config{Getenv: env(envPrivateKey, testSeed)}, envAPIKey + " is not set", ""},
		{"env lacks key", Config{Getenv: env(envAPIKey, testAPIKey)}, "neither " + envPrivateKey + " nor " + envPrivateKeyFile, ""},
		{"env lacks both", Config{Getenv: env()}, envAPIKey + " is not set; neither", ""},
		{"env has two keys", Config{Getenv: env(envAPIKey, testAPIKey, envPrivateKey, testSeed, envPrivateKeyFile, keyFile)}, "both", ""},
		{"env key garbage", Config{Getenv: env(envAPIKey, testAPIKey, envPrivateKey, "!!")}, envPrivateKey, ""},
		{"env key file missing", Config{
			Getenv: env(envAPIKey, testAPIKey, envPrivateKeyFile, filepath.Join(dir, "nope")),
		}, envPrivateKeyFile, ""},
		{"explicit empty API key", Config{PrivateKey: testKey(t)}, "Config.APIKey is empty", ""},
		{"explicit nil key", Config{APIKey: testAPIKey}, "Config.PrivateKey is nil", ""},
		{"http off loopback", Config{APIKey: testAPIKey, PrivateKey: testKey(t), BaseURL: "http://venue.example"}, "loopback", ""},
		{"page cap", Config{APIKey: testAPIKey, PrivateKey: testKey(t), PageCap: -1}, "PageCap", ""},
		{"account number", Config{APIKey: testAPIKey, PrivateKey: testKey(t), AccountNumber: "AB 1"}, "AccountNumber", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := New(tt.cfg)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("New: %v, want an error containing %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), testSeed) {
					t.Fatalf("error leaks the key: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Transport().Target(tt.wantBase + "/"); err != nil {
				t.Errorf("the transport's base URL is not %s: %v", tt.wantBase, err)
			}
		})
	}
}

func TestNewFromTransport(t *testing.T) {
	t.Parallel()
	c, v, _ := setup(t)
	v.fixture(http.MethodGet, pathAccounts, "accounts.json")
	shared, err := NewFromTransport(c.Transport(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := shared.Account(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, err = NewFromTransport(c.Transport(), Config{
		BaseURL:   "https://x.example",
		Transport: transport.Config{Retry: &transport.RetryPolicy{}, Clock: clockwork.NewFakeClock()},
	})
	for _, name := range []string{"Transport", "BaseURL"} {
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Fatalf("NewFromTransport with transport options: %v; want %s refused", err, name)
		}
	}
	if shared.clock != c.Transport().Config().Clock {
		t.Error("NewFromTransport's Client does not run on the transport's clock")
	}
	if _, err := NewFromTransport(nil, Config{}); err == nil {
		t.Fatal("NewFromTransport(nil, Config{}) succeeded")
	}
}

func TestAccountCachedAcrossCalls(t *testing.T) {
	t.Parallel()
	c, v, _ := setup(t)
	ctx := context.Background()
	v.fixture(http.MethodGet, pathAccounts, "accounts.json")
	v.fixture(http.MethodGet, pathHoldings, "holdings.json")
	v.fixture(http.MethodGet, pathOrders, "orders.json")
	v.fixture(http.MethodGet, pathOrders+openID+"/", "order_open.json")

	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := Collect(c.Holdings(ctx, nil)); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if _, err := Collect(c.Orders(ctx, OrderFilter{})); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Order(ctx, openID); err != nil {
		t.Fatal(err)
	}
	if n := v.count(pathAccounts); n != 1 {
		t.Errorf("accounts read %d times, want 1", n)
	}
	// Account itself reads afresh: buying power changes.
	a, err := c.Account(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if a.BuyingPower.String() != "1042.55" || v.count(pathAccounts) != 2 {
		t.Errorf("Account: %s, %d reads", a.BuyingPower, v.count(pathAccounts))
	}
}

func TestAccountSelection(t *testing.T) {
	t.Parallel()
	two := `{"next":null,"results":[{"account_number":"AA1","status":"active"},{"account_number":"BB2","status":"active"}]}`
	t.Run("several accounts refused", func(t *testing.T) {
		t.Parallel()
		c, v, _ := setup(t)
		v.reply(http.MethodGet, pathAccounts, 200, two)
		_, err := c.Account(context.Background())
		if !errors.Is(err, ErrAccount) || !strings.Contains(err.Error(), "Config.AccountNumber") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("chosen account", func(t *testing.T) {
		t.Parallel()
		c, v, _ := setup(t, Config{AccountNumber: "BB2"})
		v.reply(http.MethodGet, pathAccounts, 200, two)
		a, err := c.Account(context.Background())
		if err != nil || a.AccountNumber != "BB2" {
			t.Fatalf("%v %v", a, err)
		}
	})
	t.Run("chosen account absent", func(t *testing.T) {
		t.Parallel()
		c, v, _ := setup(t, Config{AccountNumber: "CC3"})
		v.reply(http.MethodGet, pathAccounts, 200, two)
		if _, err := c.Account(context.Background()); !errors.Is(err, ErrAccount) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("fixed account needs no read", func(t *testing.T) {
		t.Parallel()
		c, v, _ := setup(t, Config{AccountNumber: "BB2"})
		v.fixture(http.MethodGet, pathHoldings, "holdings.json")
		if _, err := Collect(c.Holdings(context.Background(), []string{"BTC", "ETH"})); err != nil {
			t.Fatal(err)
		}
		wantRequests(t, v, "GET "+pathHoldings+"?account_number=BB2&asset_code=BTC&asset_code=ETH")
	})
}

func TestIteratorIsLazy(t *testing.T) {
	t.Parallel()
	c, v, _ := setup(t)
	paged(v, pathHoldings, holdingItems(6), 2)
	seq := c.Holdings(context.Background(), nil, Paging{MaxPages: 50})
	if n := len(v.requests()); n != 0 {
		t.Fatalf("building the iterator sent %d requests", n)
	}
	v.fixture(http.MethodGet, pathAccounts, "accounts.json")
	for h, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		if h.AssetCode != "C0" {
			t.Fatalf("first item %+v", h)
		}
		break
	}
	wantRequests(t, v,
		"GET "+pathAccounts,
		"GET "+pathHoldings+"?account_number=AB1234567890")
}

func TestCollectFollowsPages(t *testing.T) {
	t.Parallel()
	c, v, _ := setup(t, Config{AccountNumber: "AB1234567890"})
	paged(v, pathHoldings, holdingItems(5), 2)
	var seen []Progress
	hs, err := Collect(c.Holdings(context.Background(), []string{"C1"}, Paging{OnProgress: func(p Progress) { seen = append(seen, p) }}))
	if err != nil {
		t.Fatal(err)
	}
	var codes []string
	for _, h := range hs {
		codes = append(codes, h.AssetCode+"="+exact(h.TotalQuantity))
	}
	if got := strings.Join(codes, ","); got != "C0=0.5,C1=1.5,C2=2.5,C3=3.5,C4=4.5" {
		t.Errorf("holdings %s", got)
	}
	if fmt.Sprint(seen) != "[{1 2} {2 4} {3 5}]" {
		t.Errorf("progress %v", seen)
	}
	wantRequests(t, v,
		"GET "+pathHoldings+"?account_number=AB1234567890&asset_code=C1",
		"GET "+pathHoldings+"?account_number=AB1234567890&asset_code=C1&cursor=1",
		"GET "+pathHoldings+"?account_number=AB1234567890&asset_code=C1&cursor=2")
}

func TestPageCap(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		clientCap int
		call      []Paging
		wantPages int
	}{
		{"default cap", 0, nil, defaultPageCap},
		{"client cap", 3, nil, 3},
		{"call cap wins", 3, []Paging{{MaxPages: 2}}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, v, _ := setup(t, Config{AccountNumber: "AB1", PageCap: tt.clientCap})
			paged(v, pathHoldings, holdingItems(100), 1)
			hs, err := Collect(c.Holdings(context.Background(), nil, tt.call...))
			var capErr *PageCapError
			if !errors.As(err, &capErr) || capErr.Pages != tt.wantPages || capErr.Path != pathHoldings {
				t.Fatalf("err = %v, want a *PageCapError after %d pages", err, tt.wantPages)
			}
			if hs != nil {
				t.Errorf("Collect returned a partial list of %d", len(hs))
			}
			if n := v.count(pathHoldings); n != tt.wantPages {
				t.Errorf("%d pages fetched, want %d", n, tt.wantPages)
			}
		})
	}
	t.Run("listing refuses AllowPartial and a bad cap", func(t *testing.T) {
		t.Parallel()
		c, v, _ := setup(t)
		for _, o := range []Paging{{AllowPartial: true}, {MaxPages: -1}} {
			_, err := Collect(c.Orders(context.Background(), OrderFilter{}, o))
			if !errors.Is(err, transport.ErrInvalidRequest) {
				t.Errorf("err = %v", err)
			}
		}
		wantRequests(t, v)
	})
}

func TestRepeatedCursor(t *testing.T) {
	t.Parallel()
	loop := func(v *fakeVenue, cycle []int) {
		// Page n links to page cycle[n].
		v.handle(http.MethodGet, pathTradingPairs, func(w http.ResponseWriter, r *http.Request) {
			n, _ := strconv.Atoi(r.URL.Query().Get("cursor"))
			fmt.Fprintf(w, `{"next":%q,"results":[{"symbol":"P%d-USD"}]}`, v.url(fmt.Sprintf("%s?cursor=%d", pathTradingPairs, cycle[n])), n)
		})
	}
	tests := []struct {
		name     string
		cycle    []int
		maxPages int // fetched before the loop is seen
	}{
		{"self loop", []int{1, 1}, 2},
		{"two-page loop", []int{1, 2, 1}, 4},
		{"five-page loop", []int{1, 2, 3, 4, 5, 1}, 12},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, v, _ := setup(t)
			loop(v, tt.cycle)
			_, err := Collect(c.TradingPairs(context.Background(), nil, Paging{MaxPages: 1000}))
			if !errors.Is(err, pages.ErrRepeated) {
				t.Fatalf("err = %v", err)
			}
			if n := len(v.requests()); n > tt.maxPages {
				t.Errorf("%d pages fetched before the loop was caught, want at most %d", n, tt.maxPages)
			}
		})
	}
}

func TestForeignNextRefused(t *testing.T) {
	t.Parallel()
	var other int
	var mu sync.Mutex
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		other++
		mu.Unlock()
	}))
	t.Cleanup(elsewhere.Close)
	for _, next := range []string{elsewhere.URL + pathTradingPairs + "?cursor=2", "https://evil.example" + pathTradingPairs, "//evil.example/x"} {
		c, v, _ := setup(t)
		v.reply(http.MethodGet, pathTradingPairs, 200, fmt.Sprintf(`{"next":%q,"results":[{"symbol":"BTC-USD"}]}`, next))
		var got []string
		var err error
		for p, e := range c.TradingPairs(context.Background(), nil) {
			if e != nil {
				err = e
				break
			}
			got = append(got, p.Symbol)
		}
		if !errors.Is(err, transport.ErrInvalidRequest) || len(got) != 1 {
			t.Errorf("next %s: items %v, err %v", next, got, err)
		}
		if n := len(v.requests()); n != 1 {
			t.Errorf("next %s: %d requests", next, n)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if other != 0 {
		t.Errorf("%d requests reached the other host", other)
	}
}

func TestOrderFilterQuery(t *testing.T) {
	t.Parallel()
	ny := time.FixedZone("EDT", -4*3600)
	tests := []struct {
		name string
		f    OrderFilter
		want string
	}{
		{"none", OrderFilter{}, "account_number=AB1"},
		{"every field", OrderFilter{
			Symbol: "BTC-USD", ID: openID, Side: SideBuy, State: StatePartiallyFilled, Type: TypeStopLimit,
			CreatedAtStart: time.Date(2026, 8, 20, 9, 0, 0, 0, ny),
			CreatedAtEnd:   time.Date(2026, 8, 20, 10, 0, 0, 1, time.UTC),
			UpdatedAtStart: time.Date(2026, 8, 20, 10, 0, 0, 123456789, time.UTC),
			UpdatedAtEnd:   time.Date(2026, 8, 20, 11, 0, 0, 500000000, time.UTC),
		}, "account_number=AB1" +
			"&created_at_end=2026-08-20T10%3A00%3A00.000001Z" +
			"&created_at_start=2026-08-20T13%3A00%3A00Z" +
			"&id=" + openID +
			"&side=buy&state=partially_filled&symbol=BTC-USD&type=stop_limit" +
			"&updated_at_end=2026-08-20T11%3A00%3A00.5Z" +
			"&updated_at_start=2026-08-20T10%3A00%3A00.123456Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, v, _ := setup(t, Config{AccountNumber: "AB1"})
			v.reply(http.MethodGet, pathOrders, 200, `{"next":null,"results":[]}`)
			if _, err := Collect(c.Orders(context.Background(), tt.f)); err != nil {
				t.Fatal(err)
			}
			wantRequests(t, v, "GET "+pathOrders+"?"+tt.want)
		})
	}
}

func TestOrderFilterRefused(t *testing.T) {
	t.Parallel()
	tests := []struct {
		f     OrderFilter
		field string
	}{
		{OrderFilter{Symbol: "btc-usd"}, "symbol"},
		{OrderFilter{Symbol: "BTC-USD&x=1"}, "symbol"},
		{OrderFilter{ID: "not-a-uuid"}, "id"},
		{OrderFilter{ID: "{" + openID + "}"}, "id"},
		{OrderFilter{Side: "short"}, "side"},
		{OrderFilter{State: "Open"}, "state"},
		{OrderFilter{State: "bogus"}, "state"},
		{OrderFilter{State: "expired"}, "state"},
		{OrderFilter{Type: "limit&x"}, "type"},
		{OrderFilter{Type: "twap"}, "type"},
		{OrderFilter{Side: "BUY"}, "side"},
	}
	c, v, _ := setup(t)
	for _, tt := range tests {
		_, err := Collect(c.Orders(context.Background(), tt.f))
		var ae *ArgumentError
		if !errors.As(err, &ae) || ae.Field != tt.field || !errors.Is(err, transport.ErrInvalidRequest) {
			t.Errorf("%+v: err = %v, want an *ArgumentError on %s", tt.f, err, tt.field)
		}
	}
	wantRequests(t, v)
}

func TestBestBidAsk(t *testing.T) {
	t.Parallel()
	c, v, _ := setup(t)
	v.fixture(http.MethodGet, pathBestBidAsk, "best_bid_ask.json")
	qs, err := c.BestBidAsk(context.Background(), "BTC-USD", "ETH-USD")
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) != 1 || qs[0].Bid.String() != "68329.2" || qs[0].Ask.String() != "68324.17" || !qs[0].Crossed() {
		t.Errorf("quotes %+v", qs)
	}
	if _, err := c.BestBidAsk(context.Background(), "BTC"); !errors.Is(err, transport.ErrInvalidRequest) {
		t.Errorf("bad symbol: %v", err)
	}
	wantRequests(t, v, "GET "+pathBestBidAsk+"?symbol=BTC-USD&symbol=ETH-USD")
}

func TestEstimatedPrice(t *testing.T) {
	t.Parallel()
	c, v, _ := setup(t)
	v.fixture(http.MethodGet, pathEstimatedPrice, "estimated_price.json")
	ctx := context.Background()
	d := decimal.RequireFromString
	rows, err := c.EstimatedPrice(ctx, "BTC-USD", PriceAsk, d("0.001"), d("1"), d("2.50"), d("0.00000001"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].EstTotalCost.Decimal.String() != "65.59304991" {
		t.Errorf("rows %+v", rows)
	}
	wantRequests(t, v, "GET "+pathEstimatedPrice+"?symbol=BTC-USD&side=ask&quantity=0.001,1,2.5,0.00000001")

	eleven := make([]decimal.Decimal, 11)
	for i := range eleven {
		eleven[i] = decimal.NewFromInt(int64(i + 1))
	}
	refused := []struct {
		name   string
		symbol string
		side   PriceSide
		qs     []decimal.Decimal
		field  string
	}{
		{"eleven quantities", "BTC-USD", PriceBoth, eleven, "quantity"},
		{"no quantity", "BTC-USD", PriceBid, nil, "quantity"},
		{"zero quantity", "BTC-USD", PriceBid, []decimal.Decimal{d("1"), decimal.Zero}, "quantity"},
		{"negative quantity", "BTC-USD", PriceBid, []decimal.Decimal{d("-1")}, "quantity"},
		{"quantity 1e400", "BTC-USD", PriceBid, []decimal.Decimal{decimal.New(1, 400)}, "quantity"},
		{"quantity 1e-400", "BTC-USD", PriceBid, []decimal.Decimal{d("1"), decimal.New(1, -400)}, "quantity"},
		{"bad side", "BTC-USD", "buy", []decimal.Decimal{d("1")}, "side"},
		{"bad symbol", "", PriceAsk, []decimal.Decimal{d("1")}, "symbol"},
	}
	for _, tt := range refused {
		_, err := c.EstimatedPrice(ctx, tt.symbol, tt.side, tt.qs...)
		var ae *ArgumentError
		if !errors.As(err, &ae) || ae.Field != tt.field {
			t.Errorf("%s: err = %v, want an *ArgumentError on %s", tt.name, err, tt.field)
		}
	}
	if n := len(v.requests()); n != 1 {
		t.Errorf("refused calls sent %d requests", n-1)
	}
}

func TestOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("found", func(t *testing.T) {
		t.Parallel()
		c, v, _ := setup(t, Config{AccountNumber: "AB1234567890"})
		v.fixture(http.MethodGet, pathOrders+openID+"/", "order_open.json")
		o, err := c.Order(ctx, openID)
		if err != nil || o.State != StateOpen || o.ID != openID {
			t.Fatalf("%+v, %v", o, err)
		}
		wantRequests(t, v, "GET "+pathOrders+openID+"/?account_number=AB1234567890")
	})
	t.Run("404 is no such order", func(t *testing.T) {
		t.Parallel()
		c, v, _ := setup(t, Config{AccountNumber: "AB1"})
		v.reply(http.MethodGet, pathOrders+openID+"/", 404, `{"type":"client_error","errors":[{"detail":"Not found.","attr":null}]}`)
		_, err := c.Order(ctx, openID)
		var se *transport.StatusError
		if !errors.Is(err, ErrNoSuchOrder) || !errors.As(err, &se) || se.StatusCode != 404 {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("500 is not no such order", func(t *testing.T) {
		t.Parallel()
		c, v, _ := setup(t, Config{AccountNumber: "AB1"})
		v.reply(http.MethodGet, pathOrders+openID+"/", 500, `oops`)
		_, err := c.Order(ctx, openID)
		if err == nil || errors.Is(err, ErrNoSuchOrder) || !errors.Is(err, transport.ErrUnavailable) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("bad id refused", func(t *testing.T) {
		t.Parallel()
		c, v, _ := setup(t, Config{AccountNumber: "AB1"})
		for _, id := range []string{"", "x", "../accounts", strings.ReplaceAll(openID, "-", ""), "urn:uuid:" + openID} {
			if _, err := c.Order(ctx, id); !errors.Is(err, transport.ErrInvalidRequest) {
				t.Errorf("Order(%q): %v", id, err)
			}
			if _, err := c.CancelOrder(ctx, id); !errors.Is(err, transport.ErrInvalidRequest) {
				t.Errorf("CancelOrder(%q): %v", id, err)
			}
		}
		wantRequests(t, v)
	})
}

func TestCancelOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cancelPath := pathOrders + openID + "/cancel/"
	t.Run("returns the order, still open", func(t *testing.T) {
		t.Parallel()
		c, v, _ := setup(t)
		v.handle(http.MethodPost, cancelPath, func(w http.ResponseWriter, r *http.Request) {
			if r.ContentLength > 0 || r.Header.Get("Content-Type") != "" {
				t.Errorf("cancel sent a body: %d bytes, %q", r.ContentLength, r.Header.Get("Content-Type"))
			}
			_, _ = w.Write(readFixture(t, "order_open.json"))
		})
		o, err := c.CancelOrder(ctx, openID)
		if err != nil || o.State != StateOpen {
			t.Fatalf("%+v, %v", o, err)
		}
		wantRequests(t, v, "POST "+cancelPath)
	})
	t.Run("400 is a rejection with the venue's answer", func(t *testing.T) {
		t.Parallel()
		c, v, _ := setup(t)
		v.reply(http.MethodPost, cancelPath, 400, `{"type":"validation_error","errors":[{"detail":"This order cannot be canceled.","attr":"non_field_errors"}]}`)
		_, err := c.CancelOrder(ctx, openID)
		var se *transport.StatusError
		if !errors.Is(err, ErrRejected) || !strings.Contains(err.Error(), "This order cannot be canceled.") || !strings.Contains(err.Error(), openID) {
			t.Fatalf("err = %v", err)
		}
		if !errors.As(err, &se) || se.StatusCode != 400 || se.Errors[0].Detail != "This order cannot be canceled." || se.Errors[0].Attr != "non_field_errors" ||
			errors.Is(err, ErrNoSuchOrder) || errors.Is(err, ErrUnknownOutcome) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("400 plain text kept", func(t *testing.T) {
		t.Parallel()
		c, v, _ := setup(t)
		v.reply(http.MethodPost, cancelPath, 400, "Request missing required headers")
		_, err := c.CancelOrder(ctx, openID)
		var se *transport.StatusError
		if !errors.Is(err, ErrRejected) || !errors.As(err, &se) || se.Body != "Request missing required headers" ||
			!strings.Contains(err.Error(), "Request missing required headers") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("404 is no such order", func(t *testing.T) {
		t.Parallel()
		c, v, _ := setup(t)
		v.reply(http.MethodPost, cancelPath, 404, `{"type":"client_error","errors":[{"detail":"Not found.","attr":null}]}`)
		_, err := c.CancelOrder(ctx, openID)
		if !errors.Is(err, ErrNoSuchOrder) || errors.Is(err, ErrRejected) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("503 is an unknown outcome, sent once", func(t *testing.T) {
		t.Parallel()
		c, v, _ := setup(t, Config{Transport: transport.Config{}})
		v.reply(http.MethodPost, cancelPath, 503, `{"type":"server_error","errors":[]}`)
		_, err := c.CancelOrder(ctx, openID)
		var se *transport.StatusError
		if !errors.Is(err, transport.ErrUnknownOutcome) || errors.Is(err, ErrRejected) || errors.As(err, &se) || errors.Is(err, ErrNoSuchOrder) {
			t.Fatalf("err = %v", err)
		}
		wantRequests(t, v, "POST "+cancelPath)
	})
	t.Run("acknowledged without an order", func(t *testing.T) {
		t.Parallel()
		c, v, _ := setup(t)
		v.reply(http.MethodPost, cancelPath, 200, `Cancel request has been submitted`)
		o, err := c.CancelOrder(ctx, openID)
		if o != nil || err != nil {
			t.Fatalf("%+v, %v", o, err)
		}
	})
}

func TestErrorsFromTheVenue(t *testing.T) {
	t.Parallel()
	c, v, _ := setup(t)
	v.reply(http.MethodGet, pathTradingPairs, 400, `{"type":"validation_error","errors":[{"detail":"Invalid symbol: ETH-US","attr":"symbol"}]}`)
	_, err := Collect(c.TradingPairs(context.Background(), []string{"ETH-US"}))
	var se *transport.StatusError
	if !errors.As(err, &se) || !errors.Is(err, transport.ErrRejected) || se.Errors[0].Attr != "symbol" || se.Errors[0].Detail != "Invalid symbol: ETH-US" {
		t.Fatalf("err = %v", err)
	}
	v.reply(http.MethodGet, pathBestBidAsk, 200, `{"results":[{"symbol":"BTC-USD","bid":"1.2.3"}]}`)
	_, err = c.BestBidAsk(context.Background())
	var de *decodeError
	if !errors.As(err, &de) || de.Path != pathBestBidAsk {
		t.Fatalf("err = %v", err)
	}
}

func TestContextCanceledWhileWaitingForTheAccount(t *testing.T) {
	t.Parallel()
	c, v, _ := setup(t)
	release := make(chan struct{})
	v.handle(http.MethodGet, pathAccounts, func(w http.ResponseWriter, r *http.Request) {
		<-release
		_, _ = w.Write(readFixture(t, "accounts.json"))
	})
	done := make(chan error, 1)
	go func() { _, err := c.Account(context.Background()); done <- err }()
	for v.count(pathAccounts) == 0 {
		// The first caller is inside the request; it holds the account lock.
		runtime.Gosched()
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Order(ctx, openID); !errors.Is(err, context.Canceled) {
		t.Errorf("waiter: %v", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
