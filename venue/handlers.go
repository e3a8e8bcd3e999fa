package venue

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"
)

const (
	pathAccounts  = "/api/v2/crypto/trading/accounts/"
	pathHoldings  = "/api/v2/crypto/trading/holdings/"
	pathPairs     = "/api/v2/crypto/trading/trading_pairs/"
	pathBBA       = "/api/v2/crypto/marketdata/best_bid_ask/"
	pathEstimated = "/api/v2/crypto/trading/estimated_price/"
	pathOrders    = "/api/v2/crypto/trading/orders/"
)

type errorItem struct {
	Detail string  `json:"detail"`
	Attr   *string `json:"attr"`
}

type errorEnvelope struct {
	Type   string      `json:"type"`
	Errors []errorItem `json:"errors"`
}

// errReply builds the venue's error envelope; attr "" prints null.
func errReply(status int, typ, detail, attr string) *reply {
	it := errorItem{Detail: detail}
	if attr != "" {
		it.Attr = &attr
	}
	b, _ := json.Marshal(errorEnvelope{Type: typ, Errors: []errorItem{it}})
	return &reply{status: status, body: b}
}

func notFound() *reply { return errReply(http.StatusNotFound, "client_error", "Not found.", "") }

func jsonReply(status int, v any) *reply {
	b, err := json.Marshal(v)
	if err != nil {
		return errReply(http.StatusInternalServerError, "server_error", "A server error occurred.", "")
	}
	return &reply{status: status, body: b}
}

type pageJSON struct {
	Next     *string `json:"next"`
	Previous *string `json:"previous"`
	Results  any     `json:"results"`
}

// route dispatches an authenticated, unthrottled request. Caller holds mu.
func (v *engine) route(r *http.Request, a *account, body []byte, now time.Time, foreign string) (*reply, *order) {
	if strings.HasPrefix(r.URL.Path, prefixV1) {
		return v.routeV1(r, a, body, now, foreign)
	}
	v.advance(now)
	p := r.URL.Path
	q := r.URL.Query()
	get := r.Method == http.MethodGet
	if n := q.Get("account_number"); n != "" && n != a.Number && p != pathPairs && p != pathBBA && p != pathEstimated {
		return errReply(http.StatusForbidden, "client_error", "You do not have permission to perform this action.", ""), nil
	}
	switch p {
	case pathAccounts:
		if !get {
			return notAllowed(r.Method), nil
		}
		if _, bad := v.pageLimit(r); bad != nil { // one account: any valid limit holds it
			return bad, nil
		}
		return v.accountsReply(a, now), nil
	case pathHoldings:
		if !get {
			return notAllowed(r.Method), nil
		}
		return v.holdingsReply(r, a, now, foreign), nil
	case pathPairs:
		if !get {
			return notAllowed(r.Method), nil
		}
		return v.pairsReply(r, foreign), nil
	case pathBBA:
		if !get {
			return notAllowed(r.Method), nil
		}
		return v.bbaReply(r, now), nil
	case pathEstimated:
		if !get {
			return notAllowed(r.Method), nil
		}
		return v.estimatedReply(r, a, now), nil
	case pathOrders:
		switch r.Method {
		case http.MethodGet:
			return v.listOrders(r, a, now, foreign), nil
		case http.MethodPost:
			if q.Get("account_number") == "" {
				return errReply(http.StatusBadRequest, "validation_error", "This field is required.", "account_number"), nil
			}
			return v.createOrder(a, body, now)
		}
		return notAllowed(r.Method), nil
	}
	if rest, ok := strings.CutPrefix(p, pathOrders); ok {
		parts := strings.Split(strings.TrimSuffix(rest, "/"), "/")
		if !strings.HasSuffix(rest, "/") {
			return notFound(), nil
		}
		switch {
		case len(parts) == 1 && parts[0] != "":
			if !get {
				return notAllowed(r.Method), nil
			}
			if o := v.byID[parts[0]]; o != nil && o.account == a.Number {
				return jsonReply(http.StatusOK, v.orderJSON(o, now)), nil
			}
			if o, ok := v.bulk.lookup(parts[0], a.Number); ok {
				return jsonReply(http.StatusOK, v.orderJSON(v.bulk.order(v, o), now)), nil
			}
			return notFound(), nil
		case len(parts) == 2 && parts[1] == "cancel":
			if r.Method != http.MethodPost {
				return notAllowed(r.Method), nil
			}
			return v.cancelOrder(a, parts[0], now), nil
		}
	}
	return notFound(), nil
}

func notAllowed(m string) *reply {
	return errReply(http.StatusMethodNotAllowed, "client_error", `Method "`+m+`" not allowed.`, "")
}

type feeTierJSON struct {
	FeeRatio             num  `json:"fee_ratio"`
	ThirtyDayVolume      num  `json:"thirty_day_volume"`
	NextFeeTierRatio     *num `json:"next_fee_tier_ratio"`
	NextFeeTierThreshold *num `json:"next_fee_tier_threshold"`
}

type accountJSON struct {
	AccountNumber       string      `json:"account_number"`
	Status              string      `json:"status"`
	BuyingPower         string      `json:"buying_power"`
	BuyingPowerCurrency string      `json:"buying_power_currency"`
	AccountType         string      `json:"account_type"`
	IsAPITradable       bool        `json:"is_api_tradable"`
	FeeTierStatus       feeTierJSON `json:"fee_tier_status"`
}

func (v *engine) accountsReply(a *account, now time.Time) *reply {
	res, _ := v.reserved(a, now)
	vol := a.volume.at(now)
	i := tierAt(vol)
	ft := feeTierJSON{FeeRatio: num(feeTiers[i].ratio), ThirtyDayVolume: num(vol.Round(2))}
	if i+1 < len(feeTiers) {
		r, th := num(feeTiers[i+1].ratio), num(feeTiers[i+1].threshold)
		ft.NextFeeTierRatio, ft.NextFeeTierThreshold = &r, &th
	}
	acct := accountJSON{AccountNumber: a.Number, Status: a.Status,
		BuyingPower: a.cash.Sub(res).RoundFloor(2).StringFixed(2), BuyingPowerCurrency: "USD",
		AccountType: "individual", IsAPITradable: true, FeeTierStatus: ft}
	return jsonReply(http.StatusOK, pageJSON{Results: []accountJSON{acct}})
}

type holdingJSON struct {
	AccountNumber               string `json:"account_number"`
	AssetCode                   string `json:"asset_code"`
	TotalQuantity               num    `json:"total_quantity"`
	QuantityAvailableForTrading num    `json:"quantity_available_for_trading"`
}

func (v *engine) holdingsReply(r *http.Request, a *account, now time.Time, foreign string) *reply {
	q := r.URL.Query()
	if q.Get("account_number") == "" {
		return errReply(http.StatusBadRequest, "validation_error", "This field is required.", "account_number")
	}
	want := map[string]bool{}
	for _, c := range q["asset_code"] {
		want[c] = true
	}
	_, res := v.reserved(a, now)
	codes := make([]string, 0, len(a.holdings))
	for c, h := range a.holdings {
		if h.IsPositive() && (len(want) == 0 || want[c]) {
			codes = append(codes, c)
		}
	}
	sort.Strings(codes)
	items := make([]any, len(codes))
	for i, c := range codes {
		items[i] = holdingJSON{a.Number, c, num(a.holdings[c]), num(a.holdings[c].Sub(res[c]))}
	}
	return v.offsetPage(r, items, foreign)
}

type pairJSON struct {
	Symbol         string `json:"symbol"`
	AssetCode      string `json:"asset_code"`
	QuoteCode      string `json:"quote_code"`
	AssetIncrement string `json:"asset_increment"`
	QuoteIncrement string `json:"quote_increment"`
	MaxOrderSize   string `json:"max_order_size"`
	MinOrderAmount string `json:"min_order_amount,omitempty"`
	Status         string `json:"status"`
	IsAPITradable  bool   `json:"is_api_tradable"`
}

func (v *engine) pairsReply(r *http.Request, foreign string) *reply {
	want := map[string]bool{}
	for _, s := range r.URL.Query()["symbol"] {
		// A symbol the venue does not list is a 400, as the live v1
		// venue answers (correction C10 of the reference spec).
		if v.bySymbol[s] == nil {
			return errReply(http.StatusBadRequest, "validation_error", "Select a valid choice.", "symbol")
		}
		want[s] = true
	}
	var items []any
	for _, p := range v.pairs {
		if len(want) == 0 || want[p.symbol] {
			items = append(items, pairJSON{p.symbol, p.asset, p.quote, p.assetIncStr, p.quoteIncStr,
				p.maxSizeStr, p.minAmountStr, p.status, true})
		}
	}
	return v.offsetPage(r, items, foreign)
}

// pairsPageSize is the most trading pairs one page holds, so that the
// catalogue spans several pages, as a client following next links must
// expect.
const pairsPageSize = 20

// offsetPageSize is the page size of an offset-paged list: the venue's
// page size, and at most pairsPageSize for trading pairs.
func (v *engine) offsetPageSize(r *http.Request) int {
	if strings.HasSuffix(r.URL.Path, "/trading_pairs/") {
		return min(v.pageSize, pairsPageSize)
	}
	return v.pageSize
}

type bbaJSON struct {
	Symbol    string `json:"symbol"`
	Timestamp string `json:"timestamp"`
	Bid       string `json:"bid"`
	Ask       string `json:"ask"`
}

func (v *engine) bbaReply(r *http.Request, now time.Time) *reply {
	syms := r.URL.Query()["symbol"]
	if len(syms) == 0 {
		syms = v.symbols()
	}
	out := []bbaJSON{}
	for _, s := range syms {
		p := v.bySymbol[s]
		if p == nil {
			return errReply(http.StatusBadRequest, "validation_error", "Invalid symbol: "+s, "symbol")
		}
		// As sent: a crossed book stays crossed; a stale one keeps its time.
		bid, ask := p.quoteAt(v.seed, now)
		out = append(out, bbaJSON{s, marketStamp(p.bookTime(v.seed, now)), bid.String(), ask.String()})
	}
	return jsonReply(http.StatusOK, struct {
		Results []bbaJSON `json:"results"`
	}{out})
}

type estJSON struct {
	Symbol       string `json:"symbol"`
	Side         string `json:"side"`
	Quantity     num    `json:"quantity"`
	Timestamp    string `json:"timestamp"`
	FeeRatio     num    `json:"fee_ratio"`
	EstFee       num    `json:"est_fee"`
	Bid          *num   `json:"bid,omitempty"`
	Ask          *num   `json:"ask,omitempty"`
	EstTotalCost *num   `json:"est_total_cost,omitempty"`
}

func (v *engine) estimatedReply(r *http.Request, a *account, now time.Time) *reply {
	q := r.URL.Query()
	p := v.bySymbol[q.Get("symbol")]
	if p == nil {
		return errReply(http.StatusBadRequest, "validation_error", "Invalid symbol: "+q.Get("symbol"), "symbol")
	}
	side := q.Get("side")
	if side != "bid" && side != "ask" && side != "both" {
		return errReply(http.StatusBadRequest, "validation_error", `"`+side+`" is not a valid choice.`, "side")
	}
	raw := q.Get("quantity")
	if raw == "" {
		return errReply(http.StatusBadRequest, "validation_error", "This field is required.", "quantity")
	}
	parts := strings.Split(raw, ",")
	if len(parts) > 10 {
		return errReply(http.StatusBadRequest, "validation_error", "Ensure there are no more than 10 quantities.", "quantity")
	}
	ts := marketStamp(p.bookTime(v.seed, now))
	ratio := a.feeRatioAt(now)
	out := []estJSON{}
	for _, s := range parts {
		if !plainDecimal.MatchString(s) {
			return errReply(http.StatusBadRequest, "validation_error", "A valid number is required.", "quantity")
		}
		qty := decimal.RequireFromString(s)
		if !qty.IsPositive() {
			return errReply(http.StatusBadRequest, "validation_error", "Ensure this value is greater than 0.", "quantity")
		}
		// The spec: "Quantity must be smaller than max_order_size". An order of
		// exactly max_order_size is accepted, so its estimate is too.
		if qty.GreaterThan(p.maxSize) {
			return errReply(http.StatusBadRequest, "validation_error", "Ensure the quantity is less than or equal to "+p.maxSizeStr+".", "quantity")
		}
		// The price a market order of qty would fill at now: its average
		// over the book's depth.
		if side == "bid" || side == "both" {
			bid := v.fillPrice(p, "sell", qty, now)
			b := num(bid)
			out = append(out, estJSON{Symbol: p.symbol, Side: "bid", Quantity: num(qty), Timestamp: ts,
				FeeRatio: num(ratio), EstFee: num(bid.Mul(qty).Mul(ratio)), Bid: &b})
		}
		if side == "ask" || side == "both" {
			ask := v.fillPrice(p, "buy", qty, now)
			k := num(ask)
			fee := ask.Mul(qty).Mul(ratio)
			total := num(ask.Mul(qty).Add(fee))
			out = append(out, estJSON{Symbol: p.symbol, Side: "ask", Quantity: num(qty), Timestamp: ts,
				FeeRatio: num(ratio), EstFee: num(fee), Ask: &k, EstTotalCost: &total})
		}
	}
	return jsonReply(http.StatusOK, pageJSON{Results: out})
}

// maxPageLimit is the largest limit a list accepts (or the venue's page
// size, if that is larger). The vendor's spec leaves the maximum to "system
// configuration" and no capture shows one; 1000 is ten default pages, and
// bounds what one request may make the venue render.
const maxPageLimit = 1000

// pageLimit is the page size a list request asks for: its limit parameter,
// validated, or the venue's page size when it has none. A limit that is not
// an integer from 1 to the maximum is a 400 naming limit.
func (v *engine) pageLimit(r *http.Request) (int, *reply) {
	s, ok := r.URL.Query()["limit"]
	if !ok {
		return v.offsetPageSize(r), nil
	}
	if !plainInteger(s[0]) {
		return 0, errReply(http.StatusBadRequest, "validation_error", "A valid integer is required.", "limit")
	}
	n, _ := strconv.Atoi(s[0]) // out of range: clamped to the nearest int, and refused below
	if hi := max(maxPageLimit, v.pageSize); n > hi {
		return 0, errReply(http.StatusBadRequest, "validation_error", "Ensure this value is less than or equal to "+strconv.Itoa(hi)+".", "limit")
	}
	if n < 1 {
		return 0, errReply(http.StatusBadRequest, "validation_error", "Ensure this value is greater than or equal to 1.", "limit")
	}
	return n, nil
}

// plainInteger reports whether s is an optionally signed run of decimal
// digits, however long.
func plainInteger(s string) bool {
	if s != "" && (s[0] == '-' || s[0] == '+') {
		s = s[1:]
	}
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// nextURL is the absolute link to this listing at cursor: every other
// parameter of the request, limit included, is kept. An empty cursor is
// the link to the first page (no cursor parameter).
func (v *engine) nextURL(r *http.Request, cursor, foreign string) string {
	base := foreign
	if base == "" {
		base = v.baseURL
	}
	if base == "" {
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		host := r.Host
		if host == "" {
			host = r.URL.Host
		}
		base = scheme + "://" + host
	}
	q := r.URL.Query()
	if cursor == "" {
		q.Del("cursor")
	} else {
		q.Set("cursor", cursor)
	}
	if len(q) == 0 {
		return base + r.URL.Path
	}
	return base + r.URL.Path + "?" + q.Encode()
}

func encodeCursor(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

func decodeCursor(c string) (string, bool) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	return string(b), err == nil
}

// offsetPage paginates a small static list with an offset cursor: limit
// rows a page (pageLimit), a next link after every page but the last and a
// previous link before every page but the first (to the offset limit rows
// back, or to the first page, which has no cursor).
func (v *engine) offsetPage(r *http.Request, items []any, foreign string) *reply {
	limit, bad := v.pageLimit(r)
	if bad != nil {
		return bad
	}
	off := 0
	if c := r.URL.Query().Get("cursor"); c != "" {
		s, ok := decodeCursor(c)
		n, err := strconv.Atoi(strings.TrimPrefix(s, "o:"))
		if !ok || !strings.HasPrefix(s, "o:") || err != nil || n < 0 || n > len(items) {
			return notFound()
		}
		off = n
	}
	end := min(off+limit, len(items))
	pg := pageJSON{Results: append([]any{}, items[off:end]...)}
	if end < len(items) {
		next := v.nextURL(r, encodeCursor("o:"+strconv.Itoa(end)), foreign)
		pg.Next = &next
	}
	if off > 0 {
		cursor := ""
		if back := off - limit; back > 0 {
			cursor = encodeCursor("o:" + strconv.Itoa(back))
		}
		prev := v.nextURL(r, cursor, "") // a foreign_next fault moves next alone
		pg.Previous = &prev
	}
	return jsonReply(http.StatusOK, pg)
}

// orderFilter holds the documented list filters.
type orderFilter struct {
	cStart, cEnd, uStart, uEnd             time.Time // zero: unset
	symbol, id, side, state, typ, accountN string
	// visible, if set, is the instant the list shows (Hostile.ListLag):
	// it hides orders created after it, and shows and filters the others
	// as they were then (order.asOf).
	visible time.Time
}

// match returns o as the list shows it (as it was at visible, if set) if
// that passes the filter, else nil.
func (f *orderFilter) match(o *order) *order {
	if o.account != f.accountN || (f.symbol != "" && o.symbol != f.symbol) || (f.id != "" && o.id != f.id) ||
		(f.side != "" && o.side != f.side) || (f.typ != "" && o.typ != f.typ) ||
		(!f.cStart.IsZero() && o.created.Before(f.cStart)) || (!f.cEnd.IsZero() && o.created.After(f.cEnd)) ||
		(!f.visible.IsZero() && o.created.After(f.visible)) {
		return nil
	}
	if !f.visible.IsZero() {
		o = o.asOf(f.visible)
	}
	if (f.state != "" && o.state != f.state) ||
		(!f.uStart.IsZero() && o.updated.Before(f.uStart)) || (!f.uEnd.IsZero() && o.updated.After(f.uEnd)) {
		return nil
	}
	return o
}

var validStates = map[string]bool{"open": true, "pending": true, "partially_filled": true, "filled": true, "canceled": true, "failed": true}

func (v *engine) listOrders(r *http.Request, a *account, now time.Time, foreign string) *reply {
	q := r.URL.Query()
	// The spec marks account_number required on the v2 list (as on holdings).
	if q.Get("account_number") == "" {
		return errReply(http.StatusBadRequest, "validation_error", "This field is required.", "account_number")
	}
	f := orderFilter{symbol: q.Get("symbol"), id: q.Get("id"), side: q.Get("side"), state: q.Get("state"),
		typ: q.Get("type"), accountN: a.Number}
	if lag := v.hostile.ListLag; lag > 0 {
		f.visible = now.Add(-lag)
	}
	for _, tf := range []struct {
		name string
		dst  *time.Time
	}{{"created_at_start", &f.cStart}, {"created_at_end", &f.cEnd}, {"updated_at_start", &f.uStart}, {"updated_at_end", &f.uEnd}} {
		if s := q.Get(tf.name); s != "" {
			t, err := time.Parse(time.RFC3339Nano, s)
			if err != nil {
				return errReply(http.StatusBadRequest, "validation_error", "Enter a valid date/time.", tf.name)
			}
			*tf.dst = t
		}
	}
	if f.side != "" && f.side != "buy" && f.side != "sell" {
		return errReply(http.StatusBadRequest, "validation_error", "Select a valid choice.", "side")
	}
	if f.state != "" && !validStates[f.state] {
		return errReply(http.StatusBadRequest, "validation_error", "Select a valid choice.", "state")
	}
	if f.typ != "" && !orderTypes[f.typ] {
		return errReply(http.StatusBadRequest, "validation_error", "Select a valid choice.", "type")
	}
	if f.symbol != "" && v.bySymbol[f.symbol] == nil {
		return errReply(http.StatusBadRequest, "validation_error", "Invalid symbol: "+f.symbol, "symbol")
	}
	limit, bad := v.pageLimit(r)
	if bad != nil {
		return bad
	}
	// A cursor is an order's sort key and a direction: "k" (next) lists
	// the orders after the key, the last one shown; "p" (previous) the
	// limit orders just before it, the first one shown. Pages are stable
	// while new orders arrive, newest first, whichever way they are read.
	var (
		at       *okey
		backward bool
	)
	if c := q.Get("cursor"); c != "" {
		k, back, ok := parseKeyCursor(c)
		if !ok {
			return notFound()
		}
		at, backward = &k, back
	}
	var (
		out              []*order
		hasNext, hasPrev bool
	)
	if backward {
		// As a Django REST framework cursor paginator does: a page read
		// backwards has a next link (the page it was reached from), and
		// a previous one if newer orders remain.
		out, hasPrev = v.collectNewer(&f, *at, limit)
		hasNext = true
	} else {
		// A page read forwards from a cursor has a previous link.
		out, hasNext = v.collect(&f, at, limit)
		hasPrev = at != nil
	}
	pg := pageJSON{}
	res := make([]any, len(out))
	for i, o := range out {
		if j := v.orderJSON(o, now); v.omitted(o.id) {
			res[i] = withoutClientOrderID(j)
		} else {
			res[i] = j
		}
	}
	pg.Results = res
	if len(out) == 0 {
		return jsonReply(http.StatusOK, pg)
	}
	if hasNext && !v.dropNext() {
		next := v.nextURL(r, keyCursor("k", out[len(out)-1]), foreign)
		pg.Next = &next
	}
	if hasPrev {
		prev := v.nextURL(r, keyCursor("p", out[0]), "") // a foreign_next fault moves next alone
		pg.Previous = &prev
	}
	return jsonReply(http.StatusOK, pg)
}

// keyCursor is the cursor of o's position with direction dir ("k" or "p").
func keyCursor(dir string, o *order) string {
	return encodeCursor(dir + ":" + strconv.FormatInt(o.created.UnixNano(), 10) + ":" + strconv.FormatInt(o.seq, 10))
}

// okey is an order's position in the list: (created, seq).
type okey struct {
	created time.Time
	seq     int64
}

func (k okey) less(o okey) bool {
	if !k.created.Equal(o.created) {
		return k.created.Before(o.created)
	}
	return k.seq < o.seq
}

// parseKeyCursor reads a list cursor: the key, and whether it reads
// backwards ("p") rather than forwards ("k").
func parseKeyCursor(c string) (k okey, backward, ok bool) {
	s, ok := decodeCursor(c)
	if !ok {
		return okey{}, false, false
	}
	parts := strings.Split(s, ":")
	if len(parts) != 3 || (parts[0] != "k" && parts[0] != "p") {
		return okey{}, false, false
	}
	ns, err1 := strconv.ParseInt(parts[1], 10, 64)
	seq, err2 := strconv.ParseInt(parts[2], 10, 64)
	if err1 != nil || err2 != nil {
		return okey{}, false, false
	}
	return okey{time.Unix(0, ns), seq}, parts[0] == "p", true
}

// collect merges stored and bulk orders newest first, after the key if
// given, returning up to n matches, as the list shows them (orderFilter.match),
// and whether more exist.
func (v *engine) collect(f *orderFilter, after *okey, n int) ([]*order, bool) {
	i := len(v.orders) - 1
	if after != nil {
		i = sort.Search(len(v.orders), func(i int) bool {
			return !okey{v.orders[i].created, v.orders[i].seq}.less(*after)
		}) - 1
	}
	j := 0
	b := &v.bulk
	if b.n > 0 {
		if after != nil {
			j = b.firstBelow(*after)
		}
		if !f.cEnd.IsZero() {
			j = max(j, b.firstAtOrBefore(f.cEnd))
		}
		if !f.uEnd.IsZero() && f.visible.IsZero() { // a lagged view may be older
			j = max(j, b.firstAtOrBefore(f.uEnd.Add(-bulkUpdateLag)))
		}
	}
	bulkLive := func() bool {
		if f.accountN != b.account || j >= b.n {
			return false
		}
		c := b.created(j)
		return (f.cStart.IsZero() || !c.Before(f.cStart)) && (f.uStart.IsZero() || !c.Add(bulkUpdateLag).Before(f.uStart))
	}
	var out []*order
	for {
		storedLive := i >= 0 && (f.cStart.IsZero() || !v.orders[i].created.Before(f.cStart))
		bl := bulkLive()
		var o *order
		switch {
		case storedLive && bl:
			if (okey{b.created(j), b.seq(j)}).less(okey{v.orders[i].created, v.orders[i].seq}) {
				o = v.orders[i]
				i--
			} else {
				o = b.order(v, j)
				j++
			}
		case storedLive:
			o = v.orders[i]
			i--
		case bl:
			o = b.order(v, j)
			j++
		default:
			return out, false
		}
		if o = f.match(o); o == nil {
			continue
		}
		if len(out) == n {
			return out, true
		}
		out = append(out, o)
	}
}

// collectNewer is collect read backwards: up to n matches sorting after
// the key (the n nearest it), newest first, and whether more exist beyond
// them.
func (v *engine) collectNewer(f *orderFilter, before okey, n int) ([]*order, bool) {
	i := sort.Search(len(v.orders), func(i int) bool {
		return before.less(okey{v.orders[i].created, v.orders[i].seq})
	})
	b := &v.bulk
	j := -1 // bulk orders j, j-1, … 0 sort after the key
	if b.n > 0 && f.accountN == b.account {
		j = b.firstBelow(before) - 1
		for j >= 0 && !before.less(okey{b.created(j), b.seq(j)}) {
			j--
		}
	}
	// beyond: created too late for the filter, and so is every order after.
	beyond := func(c time.Time) bool {
		return (!f.cEnd.IsZero() && c.After(f.cEnd)) || (!f.visible.IsZero() && c.After(f.visible))
	}
	var out []*order
	for {
		var o *order
		switch {
		case i < len(v.orders) && j >= 0:
			if (okey{v.orders[i].created, v.orders[i].seq}).less(okey{b.created(j), b.seq(j)}) {
				o = v.orders[i]
				i++
			} else {
				o = b.order(v, j)
				j--
			}
		case i < len(v.orders):
			o = v.orders[i]
			i++
		case j >= 0:
			o = b.order(v, j)
			j--
		}
		if o == nil || beyond(o.created) {
			slices.Reverse(out)
			return out, false
		}
		if o = f.match(o); o == nil {
			continue
		}
		if len(out) == n {
			slices.Reverse(out)
			return out, true
		}
		out = append(out, o)
	}
}
