package brokertest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/shopspring/decimal"

	"github.com/tradewire/tradewire/broker"
	"github.com/tradewire/tradewire/broker/brokertest"
	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/signing"
	"github.com/tradewire/tradewire/transport"
	"github.com/tradewire/tradewire/venue"
)

// sent is one request as tradewire's client put it on the wire.
type sent struct {
	method string
	url    string
	header http.Header
	body   []byte
}

// recorder is a RoundTripper that notes every request before passing it on.
type recorder struct {
	next http.RoundTripper
	mu   sync.Mutex
	reqs []sent
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		body = b
	}
	r.mu.Lock()
	r.reqs = append(r.reqs, sent{req.Method, req.URL.String(), req.Header.Clone(), body})
	r.mu.Unlock()
	out := req.Clone(req.Context())
	out.Body = io.NopCloser(bytes.NewReader(body))
	return r.next.RoundTrip(out)
}

func (r *recorder) sent() []sent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]sent(nil), r.reqs...)
}

// validate checks one request against the contract and returns the
// operation it routed to and the spec's verdict.
func (c *contract) validate(s sent) (op string, err error) {
	req, err := http.NewRequest(s.method, s.url, bytes.NewReader(s.body))
	if err != nil {
		return "", err
	}
	req.Header = s.header.Clone()
	route, params, err := c.router.FindRoute(req)
	if err != nil {
		return "", err
	}
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: c.opts}
	return route.Operation.OperationID, openapi3filter.ValidateRequest(context.Background(), in)
}

// TestContractClientRequests drives tradewire's own client, broker.Client
// (reads, fees, preview, place, get, cancel, recover), against the
// in-memory venue, records every request it sent, and validates each one
// (method, path, query parameters, headers, body schema) against the
// corrected vendor spec. Every request conforms, and every operation the
// client uses is among them. Malformed copies of those requests are
// flagged, so the check is not vacuous.
func TestContractClientRequests(t *testing.T) {
	c := loadContract(t, nil)
	var reqs []sent
	synctest.Test(t, func(t *testing.T) {
		reqs = driveClient(t)
	})
	if len(reqs) == 0 {
		t.Fatal("the client sent nothing")
	}
	byOp := map[string]int{}
	for _, s := range reqs {
		op, err := c.validate(s)
		if err != nil {
			t.Errorf("%s %s (%s) does not conform: %v\nbody %s", s.method, s.url, op, err, s.body)
			continue
		}
		byOp[op]++
	}
	for _, op := range []string{opAccounts, opHoldings, opPairs, opBBA, opEstimated, opList, opCreate, opGetOrder, opCancel} {
		if byOp[op] == 0 {
			t.Errorf("the client sent no %s request", op)
		}
	}
	ops := make([]string, 0, len(byOp))
	for op, n := range byOp {
		ops = append(ops, op+" ×"+strconv.Itoa(n))
	}
	sort.Strings(ops)
	t.Logf("%d requests, every one conforming: %s", len(reqs), strings.Join(ops, ", "))

	// Negative controls: each is a request the client sent, broken in one
	// way the spec forbids; the validator must flag every one.
	first := func(op string) sent {
		for _, s := range reqs {
			if o, _ := c.validate(s); o == op {
				return s
			}
		}
		t.Fatalf("no %s request recorded", op)
		return sent{}
	}
	withQuery := func(s sent, f func(url.Values)) sent {
		u, _ := url.Parse(s.url)
		q := u.Query()
		f(q)
		u.RawQuery = q.Encode()
		s.url = u.String()
		return s
	}
	withBody := func(s sent, f func(map[string]any)) sent {
		var m map[string]any
		if err := json.Unmarshal(s.body, &m); err != nil {
			t.Fatalf("create body %s: %v", s.body, err)
		}
		f(m)
		s.body, _ = json.Marshal(m)
		return s
	}
	create := first(opCreate)
	config := func(m map[string]any) map[string]any {
		for k, v := range m {
			if strings.HasSuffix(k, "_order_config") {
				return v.(map[string]any)
			}
		}
		t.Fatalf("create body without a config: %v", m)
		return nil
	}
	for name, bad := range map[string]sent{
		"create without side":            withBody(create, func(m map[string]any) { delete(m, "side") }),
		"create with a side not in enum": withBody(create, func(m map[string]any) { m["side"] = "hold" }),
		"create with an exponent quantity": withBody(create, func(m map[string]any) {
			config(m)["asset_quantity"] = "1e-4"
		}),
		"create with client_order_id not a uuid": withBody(create, func(m map[string]any) { m["client_order_id"] = "order-1" }),
		"create without account_number":          withQuery(create, func(q url.Values) { q.Del("account_number") }),
		"list with a state not in enum":          withQuery(first(opList), func(q url.Values) { q.Set("state", "asleep") }),
		"list with a created_at_start not a date-time": withQuery(first(opList), func(q url.Values) {
			q.Set("created_at_start", "yesterday")
		}),
		"holdings without account_number": withQuery(first(opHoldings), func(q url.Values) { q.Del("account_number") }),
		"estimate without side":           withQuery(first(opEstimated), func(q url.Values) { q.Del("side") }),
		"accounts without x-signature": func() sent {
			s := first(opAccounts)
			s.header = s.header.Clone()
			s.header.Del("x-signature")
			return s
		}(),
	} {
		if _, err := c.validate(bad); err == nil {
			t.Errorf("negative control %q: the spec accepts %s %s %s", name, bad.method, bad.url, bad.body)
		}
	}
	if _, err := c.validate(sent{method: "GET", url: brokertest.InMemoryURL + "/api/v2/crypto/trading/nothing/", header: create.header}); err == nil {
		t.Error("negative control: a path the spec does not have routes")
	}
}

// driveClient runs broker.Client through every call it makes of the venue
// and returns the requests it sent. It runs in a synctest bubble: the
// client's waits (backoffs, the wait before a resend) pass at once.
func driveClient(t *testing.T) []sent {
	t.Helper()
	ctx := context.Background()
	srv, err := brokertest.New(venue.Config{Seed: 3, History: 12, PageSize: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	key, err := signing.ParsePrivateKey(srv.PrivateKeyBase64)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{next: srv.Client().Transport}
	// A bolt store vouches that an intent is new, so the first create
	// goes out without a lookup before it (a memory store does not).
	store, err := idempotency.Open(filepath.Join(t.TempDir(), "intents.db"), idempotency.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	newClient := func() *broker.Client {
		b, err := broker.New(broker.Config{
			APIKey:      srv.APIKey,
			PrivateKey:  key,
			BaseURL:     srv.URL,
			IntentStore: store,
			Transport:   transport.Config{RoundTripper: rec},
		})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	b := newClient()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	// Reads.
	_, err = b.Account(ctx)
	must(err)
	_, err = broker.Collect(b.Holdings(ctx, nil))
	must(err)
	_, err = broker.Collect(b.Holdings(ctx, []string{"BTC", "ETH"}))
	must(err)
	_, err = broker.Collect(b.TradingPairs(ctx, nil))
	must(err)
	_, err = broker.Collect(b.TradingPairs(ctx, []string{"BTC-USD", "ETH-USD"}))
	must(err)
	quotes, err := b.BestBidAsk(ctx, "BTC-USD", "ETH-USD")
	must(err)
	_, err = b.EstimatedPrice(ctx, "BTC-USD", broker.PriceBoth, decimal.RequireFromString("0.001"), decimal.RequireFromString("0.5"))
	must(err)
	_, err = b.EstimatedPrice(ctx, "ETH-USD", broker.PriceBid, decimal.RequireFromString("1"))
	must(err)
	since := time.Now().Add(-7 * 24 * time.Hour)
	_, err = broker.Collect(b.Orders(ctx, broker.OrderFilter{}))
	must(err)
	_, err = broker.Collect(b.Orders(ctx, broker.OrderFilter{Symbol: "BTC-USD", Side: broker.SideBuy, State: broker.OrderState("filled"),
		Type: broker.TypeLimit, CreatedAtStart: since, CreatedAtEnd: time.Now(), UpdatedAtStart: since, UpdatedAtEnd: time.Now()}))
	must(err)
	// Fees and a preview.
	_, err = b.FeeSummary(ctx, 30*24*time.Hour)
	must(err)
	_, err = b.Preview(ctx, broker.OrderRequest{Symbol: "BTC-USD", Side: broker.SideBuy, Type: broker.TypeMarket,
		AssetQuantity: decimal.RequireFromString("0.0001")})
	must(err)
	// Places of every type, a read by id, a cancel.
	half := quotes[0].Bid.Div(decimal.NewFromInt(2)).Round(2)
	resting := broker.OrderRequest{Symbol: "BTC-USD", Side: broker.SideBuy, Type: broker.TypeLimit,
		AssetQuantity: decimal.RequireFromString("0.0001"), LimitPrice: half, TimeInForce: broker.TimeInForceGFD}
	o, err := b.Place(ctx, "contract-limit", resting)
	must(err)
	for i, req := range []broker.OrderRequest{
		{Symbol: "BTC-USD", Side: broker.SideBuy, Type: broker.TypeMarket, AssetQuantity: decimal.RequireFromString("0.0001")},
		{Symbol: "ETH-USD", Side: broker.SideSell, Type: broker.TypeMarket, AssetQuantity: decimal.RequireFromString("0.01")},
		{Symbol: "BTC-USD", Side: broker.SideSell, Type: broker.TypeStopLoss, AssetQuantity: decimal.RequireFromString("0.0001"),
			StopPrice: half},
		{Symbol: "BTC-USD", Side: broker.SideSell, Type: broker.TypeStopLimit, AssetQuantity: decimal.RequireFromString("0.0001"),
			StopPrice: half, LimitPrice: half.Sub(decimal.NewFromInt(1)), TimeInForce: broker.TimeInForceGTC},
	} {
		_, err := b.Place(ctx, "contract-"+strconv.Itoa(i), req)
		must(err)
	}
	_, err = b.Order(ctx, o.ID)
	must(err)
	_, err = b.OrderByKey(ctx, "contract-limit")
	must(err)
	_, err = b.CancelOrder(ctx, o.ID)
	must(err)
	// A create whose answer is lost while the orders list fails: Place
	// cannot know, and Recover on a new client settles it by lookup.
	must(srv.Inject(venue.Fault{Kind: "lose_response", Method: http.MethodPost, Path: "/api/v2/crypto/trading/orders/", Status: 503},
		venue.Fault{Kind: "respond", Method: http.MethodGet, Path: "/api/v2/crypto/trading/orders/", Times: 4, Status: 503}))
	if _, err := b.Place(ctx, "contract-lost", resting); !errors.Is(err, broker.ErrUnknownOutcome) {
		t.Fatalf("Place with its answer and lookup lost: %v, want ErrUnknownOutcome", err)
	}
	r, err := newClient().Recover(ctx)
	must(err)
	if len(r.Acknowledged) != 1 {
		t.Fatalf("Recover: %+v, want one acknowledged", r)
	}
	return rec.sent()
}
