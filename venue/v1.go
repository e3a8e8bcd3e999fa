package venue

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/shopspring/decimal"
)

// The vendor's v1 API: the same venue without fees. Each v1 operation is
// the v2 operation beside it, answered by the same engine (one book, one
// set of accounts, one token bucket, one signature check over the path as
// received), then written in v1's shapes: a single-object accounts, no
// fees, quotes with their spreads, order values as numbers, and the v1
// cancel answer in text/plain.

const prefixV1 = "/api/v1/"

const (
	pathV1Accounts  = "/api/v1/crypto/trading/accounts/"
	pathV1Holdings  = "/api/v1/crypto/trading/holdings/"
	pathV1Pairs     = "/api/v1/crypto/trading/trading_pairs/"
	pathV1BBA       = "/api/v1/crypto/marketdata/best_bid_ask/"
	pathV1Estimated = "/api/v1/crypto/marketdata/estimated_price/" // marketdata, unlike v2
	pathV1Orders    = "/api/v1/crypto/trading/orders/"
)

// v1Route is how one v1 request is served: the v2 path that answers it,
// whether the v2 operation needs the account_number v1 does not send, and
// how a 2xx answer is rewritten into v1's shape.
type v1Route struct {
	v2Path     string
	addAccount bool
	shape      func(body []byte) ([]byte, error)
}

// routeV1 serves a request under prefixV1 through route, on the same engine
// state as v2. Caller holds mu.
func (v *engine) routeV1(r *http.Request, a *account, body []byte, now time.Time, foreign string) (*reply, *order) {
	p := r.URL.Path
	q := r.URL.Query()
	var rt v1Route
	switch {
	case p == pathV1Accounts:
		rt = v1Route{v2Path: pathAccounts, shape: v1Account}
	case p == pathV1Holdings:
		rt = v1Route{v2Path: pathHoldings, addAccount: true, shape: v1Page(v1Keep(v1HoldingKeys))}
	case p == pathV1Pairs:
		rt = v1Route{v2Path: pathPairs, shape: v1Page(v.v1Pair(now))}
	case p == pathV1BBA:
		rt = v1Route{v2Path: pathBBA, shape: v1Quotes}
	case p == pathV1Estimated:
		side := q.Get("side")
		rt = v1Route{v2Path: pathEstimated, shape: func(b []byte) ([]byte, error) { return v1Estimates(b, side) }}
		if side == "bid" || side == "ask" {
			// Both sides are needed for the midpoint v1 reports.
			q.Set("side", "both")
		}
	case p == pathV1Orders && r.Method == http.MethodGet:
		rt = v1Route{v2Path: pathOrders, addAccount: true, shape: v1Page(v1Order)}
	case p == pathV1Orders:
		rt = v1Route{v2Path: pathOrders, addAccount: true, shape: v1Order}
	case strings.HasPrefix(p, pathV1Orders):
		rest := strings.TrimPrefix(p, pathV1Orders)
		rt = v1Route{v2Path: pathOrders + rest, shape: v1Order}
		if id, ok := strings.CutSuffix(rest, "/cancel/"); ok && !strings.Contains(id, "/") {
			rt.shape = nil // text/plain, below
		}
	default:
		return notFound(), nil
	}
	added := false
	if rt.addAccount && q.Get("account_number") == "" {
		q.Set("account_number", a.Number)
		added = true
	}
	u := *r.URL
	u.Path, u.RawPath, u.RawQuery = rt.v2Path, "", q.Encode()
	r2 := r.WithContext(r.Context())
	r2.URL = &u
	rep, created := v.route(r2, a, body, now, foreign)
	if rep.status/100 != 2 {
		return rep, created // the error envelope is v1's too
	}
	if rt.shape == nil {
		id := strings.TrimSuffix(strings.TrimPrefix(p, pathV1Orders), "/cancel/")
		return &reply{status: rep.status, header: rep.header, text: true, v1: true,
			body: []byte("Cancel request was submitted for order " + id)}, created
	}
	b, err := rt.shape(rep.body)
	if err == nil {
		b, err = v1Links(b, rt.v2Path, p, added)
	}
	if err != nil {
		return errReply(http.StatusInternalServerError, "server_error", "A server error occurred.", ""), created
	}
	return &reply{status: rep.status, header: rep.header, body: b, v1: true}, created
}

// The members of v1's schemas (the vendor spec's Account, Holdings,
// TradingPair and OrderResponse); v2's others (fees among them) are dropped.
var (
	v1AccountKeys = []string{"account_number", "status", "buying_power", "buying_power_currency"}
	v1HoldingKeys = []string{"account_number", "asset_code", "total_quantity", "quantity_available_for_trading"}
	// min_order_size is added by v1Pair.
	v1PairKeys  = []string{"symbol", "asset_code", "quote_code", "asset_increment", "quote_increment", "max_order_size", "status"}
	v1OrderKeys = []string{"id", "account_number", "symbol", "client_order_id", "side", "executions", "type", "state",
		"average_price", "filled_asset_quantity", "created_at", "updated_at"}
	// v1's OrderResponse types these as numbers where v2 sends decimal strings.
	v1NumberKeys = []string{"asset_quantity", "quote_amount", "limit_price", "stop_price"}
)

// v1Keep returns a shape keeping only keys of a JSON object.
func v1Keep(keys []string) func([]byte) ([]byte, error) {
	return func(b []byte) ([]byte, error) {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, err
		}
		out := make(map[string]json.RawMessage, len(keys))
		for _, k := range keys {
			if x, ok := m[k]; ok {
				out[k] = x
			}
		}
		return json.Marshal(out)
	}
}

// v1Pair returns the shape of a v1 TradingPair at now: v2's row without
// its v2 members, with min_order_size, the least multiple of
// asset_increment worth the pair's min_order_amount at its bid of now (an
// order that size, bought or sold at the market then, meets the venue's
// minimum), or asset_increment for a pair without a minimum amount.
// Caller holds mu.
func (v *engine) v1Pair(now time.Time) func([]byte) ([]byte, error) {
	keep := v1Keep(v1PairKeys)
	return func(b []byte) ([]byte, error) {
		var row struct {
			Symbol string `json:"symbol"`
		}
		if err := json.Unmarshal(b, &row); err != nil {
			return nil, err
		}
		p := v.bySymbol[row.Symbol]
		if p == nil {
			return nil, errUnexpected
		}
		least := p.assetInc
		if p.minAmount.IsPositive() {
			bid, _ := p.quoteAt(v.seed, now)
			least = decimal.Max(ceilTo(p.minAmount.Div(bid), p.assetInc), p.assetInc)
		}
		kept, err := keep(b)
		if err != nil {
			return nil, err
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(kept, &m); err != nil {
			return nil, err
		}
		m["min_order_size"], _ = json.Marshal(least.String())
		return json.Marshal(m)
	}
}

// v1Page applies item to every result of a page, keeping next and previous.
func v1Page(item func([]byte) ([]byte, error)) func([]byte) ([]byte, error) {
	return func(b []byte) ([]byte, error) {
		var pg map[string]json.RawMessage
		if err := json.Unmarshal(b, &pg); err != nil {
			return nil, err
		}
		var rows []json.RawMessage
		if err := json.Unmarshal(pg["results"], &rows); err != nil {
			return nil, err
		}
		for i, row := range rows {
			x, err := item(row)
			if err != nil {
				return nil, err
			}
			rows[i] = x
		}
		res, err := json.Marshal(rows)
		if err != nil {
			return nil, err
		}
		pg["results"] = res
		return json.Marshal(pg)
	}
}

// v1Account is v2's list of one account as v1's single object.
func v1Account(b []byte) ([]byte, error) {
	var pg struct {
		Results []json.RawMessage `json:"results"`
	}
	if err := json.Unmarshal(b, &pg); err != nil {
		return nil, err
	}
	if len(pg.Results) != 1 {
		return nil, errUnexpected
	}
	return v1Keep(v1AccountKeys)(pg.Results[0])
}

// errUnexpected marks a v2 answer v1 cannot be written from.
var errUnexpected = errors.New("venue: unexpected v2 answer")

// asNumber rewrites a decimal string as a bare JSON number; anything else
// is kept.
func asNumber(raw json.RawMessage) json.RawMessage {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return raw
	}
	d, err := decimal.NewFromString(s)
	if err != nil {
		return raw
	}
	out, _ := num(d).MarshalJSON()
	return out
}

// v1Order is a v2 order in v1's OrderResponse: no fee_charged or
// estimated_fee_remaining, filled_asset_quantity and config values as
// numbers.
func v1Order(b []byte) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	out := map[string]json.RawMessage{}
	for _, k := range v1OrderKeys {
		if x, ok := m[k]; ok {
			out[k] = x
		}
	}
	if x, ok := out["filled_asset_quantity"]; ok {
		out["filled_asset_quantity"] = asNumber(x)
	}
	for k, x := range m {
		if !strings.HasSuffix(k, "_order_config") {
			continue
		}
		var cfg map[string]json.RawMessage
		if err := json.Unmarshal(x, &cfg); err != nil {
			return nil, err
		}
		for _, n := range v1NumberKeys {
			if y, ok := cfg[n]; ok {
				cfg[n] = asNumber(y)
			}
		}
		c, err := json.Marshal(cfg)
		if err != nil {
			return nil, err
		}
		out[k] = c
	}
	return json.Marshal(out)
}

// v1OrderBody is the answer body for an order: v2's orderJSON, or v1's
// shape of it when inV1 (the bad-body faults write orders too).
func v1OrderBody(o any, inV1 bool) []byte {
	b, _ := json.Marshal(o)
	if !inV1 {
		return b
	}
	if x, err := v1Order(b); err == nil {
		return x
	}
	return b
}

// spreadDigits is the precision of the spreads v1 reports.
const spreadDigits = 10

// v1Quote is one side of a v1 quote: the midpoint and the spread of a
// price from it, as the spec defines them ("the percent difference between
// the bid [ask] and the mid price", written as a ratio like fee_ratio). A
// crossed book gives a negative spread: the venue reports it as it is.
type v1Quote struct {
	Symbol    string `json:"symbol"`
	Side      string `json:"side,omitempty"`
	Price     num    `json:"price"`
	Quantity  *num   `json:"quantity,omitempty"`
	Bid       *num   `json:"bid_inclusive_of_sell_spread,omitempty"`
	SellSprd  *num   `json:"sell_spread,omitempty"`
	Ask       *num   `json:"ask_inclusive_of_buy_spread,omitempty"`
	BuySprd   *num   `json:"buy_spread,omitempty"`
	Timestamp string `json:"timestamp"`
}

func midOf(bid, ask decimal.Decimal) decimal.Decimal { return bid.Add(ask).Div(decimal.NewFromInt(2)) }

// ratio is diff/mid at spreadDigits, zero when mid is.
func ratio(diff, mid decimal.Decimal) *num {
	r := num(decimal.Zero)
	if !mid.IsZero() {
		r = num(diff.DivRound(mid, spreadDigits))
	}
	return &r
}

func (q *v1Quote) setBid(bid, mid decimal.Decimal) {
	b := num(bid)
	q.Bid, q.SellSprd = &b, ratio(mid.Sub(bid), mid)
}

func (q *v1Quote) setAsk(ask, mid decimal.Decimal) {
	k := num(ask)
	q.Ask, q.BuySprd = &k, ratio(ask.Sub(mid), mid)
}

// v1Quotes is v2's best bid and ask as v1's BidAskPrice rows.
func v1Quotes(b []byte) ([]byte, error) {
	var in struct {
		Results []struct {
			Symbol    string          `json:"symbol"`
			Timestamp string          `json:"timestamp"`
			Bid       decimal.Decimal `json:"bid"`
			Ask       decimal.Decimal `json:"ask"`
		} `json:"results"`
	}
	if err := json.Unmarshal(b, &in); err != nil {
		return nil, err
	}
	out := make([]v1Quote, len(in.Results))
	for i, x := range in.Results {
		mid := midOf(x.Bid, x.Ask)
		out[i] = v1Quote{Symbol: x.Symbol, Price: num(mid), Timestamp: x.Timestamp}
		out[i].setBid(x.Bid, mid)
		out[i].setAsk(x.Ask, mid)
	}
	return json.Marshal(struct {
		Results []v1Quote `json:"results"`
	}{out})
}

// v1Estimates is v2's estimate for both sides as v1's EstimatedPrice rows
// for side: price is the midpoint of the bid and ask estimated for that
// quantity, and each row carries its own side's price and spread.
func v1Estimates(b []byte, side string) ([]byte, error) {
	var in struct {
		Results []struct {
			Symbol    string           `json:"symbol"`
			Side      string           `json:"side"`
			Quantity  decimal.Decimal  `json:"quantity"`
			Timestamp string           `json:"timestamp"`
			Bid       *decimal.Decimal `json:"bid"`
			Ask       *decimal.Decimal `json:"ask"`
		} `json:"results"`
	}
	if err := json.Unmarshal(b, &in); err != nil {
		return nil, err
	}
	// v2 answers, per quantity, its bid row then its ask row.
	if len(in.Results)%2 != 0 {
		return nil, errUnexpected
	}
	out := []v1Quote{}
	for i := 0; i < len(in.Results); i += 2 {
		br, ar := in.Results[i], in.Results[i+1]
		if br.Bid == nil || ar.Ask == nil || !br.Quantity.Equal(ar.Quantity) {
			return nil, errUnexpected
		}
		mid := midOf(*br.Bid, *ar.Ask)
		qty := num(br.Quantity)
		if side == "bid" || side == "both" {
			q := v1Quote{Symbol: br.Symbol, Side: "bid", Price: num(mid), Quantity: &qty, Timestamp: br.Timestamp}
			q.setBid(*br.Bid, mid)
			out = append(out, q)
		}
		if side == "ask" || side == "both" {
			q := v1Quote{Symbol: ar.Symbol, Side: "ask", Price: num(mid), Quantity: &qty, Timestamp: ar.Timestamp}
			q.setAsk(*ar.Ask, mid)
			out = append(out, q)
		}
	}
	return json.Marshal(struct {
		Results []v1Quote `json:"results"`
	}{out})
}

// v1Links points a page's next and previous links, built for the v2 path,
// at the v1 path, without the account_number the venue added.
func v1Links(b []byte, v2Path, v1Path string, dropAccount bool) ([]byte, error) {
	var pg map[string]json.RawMessage
	if json.Unmarshal(b, &pg) != nil {
		return b, nil // not an object with links
	}
	changed := false
	for _, k := range []string{"next", "previous"} {
		var link *string
		if raw, ok := pg[k]; !ok || json.Unmarshal(raw, &link) != nil || link == nil {
			continue
		}
		u, err := url.Parse(*link)
		if err != nil {
			return nil, err
		}
		if u.Path == v2Path {
			u.Path, u.RawPath = v1Path, ""
		}
		if dropAccount {
			q := u.Query()
			q.Del("account_number")
			u.RawQuery = q.Encode()
		}
		s, _ := json.Marshal(u.String())
		pg[k] = s
		changed = true
	}
	if !changed {
		return b, nil
	}
	return json.Marshal(pg)
}
