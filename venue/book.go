package venue

import (
	"encoding/binary"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
)

// Order states and types as the venue prints them.
const (
	stateOpen     = "open"
	statePartial  = "partially_filled"
	stateFilled   = "filled"
	stateCanceled = "canceled"
	stateFailed   = "failed"
)

var orderTypes = map[string]bool{"market": true, "limit": true, "stop_loss": true, "stop_limit": true}

type execution struct {
	price, qty, fee decimal.Decimal // fee: what this execution charged
	at              time.Time
}

type order struct {
	id, clientID, account, symbol, side, typ string
	pair                                     *pair
	qty                                      decimal.Decimal // asset quantity (converted from quote_amount if given)
	quoteAmt                                 decimal.Decimal
	hasQuote                                 bool
	limit, stop                              decimal.Decimal
	hasLimit, hasStop                        bool
	feeRatio                                 decimal.Decimal
	state                                    string
	created, updated                         time.Time
	seq                                      int64
	execs                                    []execution
	filled, notional, fee                    decimal.Decimal
	triggered                                bool
	cancelAt                                 time.Time
	tif                                      string    // time in force; "" is gtc
	expiresAt                                time.Time // zero: good till canceled
	lastEval                                 time.Time // the grid point last evaluated; the grid is lastEval + k seconds
	// Book-keeping of the engine (see due.go): while open, the order's
	// place in engine.due and the instant it comes due there; the last
	// whole second known not to act; what it holds of its account.
	dueIdx int
	dueAt  time.Time
	clear  int64
	held   decimal.Decimal
	// text caches the order's printed fields for its answers (orderJSON).
	text orderText
}

// orderText is what orderJSON printed of an order's fields that do not
// change once it is created (its creation time, its quantities and
// prices, its executions so far), and of those that change with them
// (the quantity filled, with each execution; the update time), so that
// answering for it again prints only what moved. set is false until the
// first answer.
type orderText struct {
	set                              bool
	created, qty, quote, limit, stop string
	execs                            []execJSON
	filled                           string // at len(execs) executions
	updatedAt                        time.Time
	updated                          string // updatedAt printed
}

func (o *order) less(p *order) bool {
	if !o.created.Equal(p.created) {
		return o.created.Before(p.created)
	}
	return o.seq < p.seq
}

func (o *order) final() bool {
	return o.state == stateFilled || o.state == stateCanceled || o.state == stateFailed
}

// asOf returns o as it was at t, which is not before its creation: its
// executions up to t, and the state and updated_at they gave it; o itself
// when nothing of it has changed since t. The copy is for answering only.
func (o *order) asOf(t time.Time) *order {
	if !o.updated.After(t) {
		return o
	}
	p := *o
	n := 0
	for n < len(o.execs) && !o.execs[n].at.After(t) {
		n++
	}
	p.execs = o.execs[:n:n]
	if n < len(o.execs) { // what o printed of its later executions is not p's
		k := min(n, len(o.text.execs))
		p.text.execs, p.text.filled = o.text.execs[:k:k], ""
	}
	p.filled, p.notional, p.fee = decimal.Zero, decimal.Zero, decimal.Zero
	p.updated, p.state = o.created, stateOpen
	for _, e := range p.execs {
		p.filled = p.filled.Add(e.qty)
		p.notional = p.notional.Add(e.price.Mul(e.qty))
		p.fee = p.fee.Add(e.fee)
		p.updated, p.state = e.at, statePartial
	}
	return &p
}

func (o *order) record() OrderRecord {
	return OrderRecord{ID: o.id, ClientOrderID: o.clientID, AccountNumber: o.account, Symbol: o.symbol,
		Side: o.side, Type: o.typ, State: o.state, CreatedAt: o.created}
}

// newID derives a deterministic version-4-shaped UUID from the seed and n.
func newID(seed uint64, salt, n uint64) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], mix64(seed^mix64(salt^n)))
	binary.BigEndian.PutUint64(b[8:], mix64(mix64(seed+salt)^n))
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return uuid.UUID(b).String()
}

// advance brings every open order up to now: only those due by now (see
// due.go) are looked at. Caller holds mu.
func (v *engine) advance(now time.Time) {
	for len(v.due) > 0 && !v.due[0].dueAt.After(now) {
		o := v.due[0]
		v.step(o, now)
		v.settle(o)
	}
}

// step evaluates o at each second of its grid from its last evaluation up
// to now, where it acts (the seconds between, where it cannot act, are
// passed over without evaluating them), settling a pending cancel or an
// expiry at its time: from that instant on the order neither fills nor
// stays open. Caller settles o after.
func (v *engine) step(o *order, now time.Time) {
	end := o.endAt()
	last := lastGridBefore(o.lastEval, now.Add(1)) // the last grid point at or before now
	if !end.IsZero() {
		if e := lastGridBefore(o.lastEval, end); e.Before(last) {
			last = e
		}
	}
	for !o.final() && last.After(o.lastEval) {
		s, ok := v.firstHit(o, max(o.lastEval.Unix(), o.clear)+1, last.Unix(), true)
		if !ok {
			o.lastEval = last
			break
		}
		t := gridAt(o.lastEval, s)
		v.evalAt(o, t)
		o.lastEval = t
	}
	if !o.final() && !end.IsZero() && !now.Before(end) {
		o.state = stateCanceled
		o.updated = end
	}
}

// endAt is when o stops being open unless it fills first: the earlier of
// a requested cancel's settlement and its time in force's expiry; zero
// when neither applies.
func (o *order) endAt() time.Time {
	switch {
	case o.cancelAt.IsZero():
		return o.expiresAt
	case o.expiresAt.IsZero() || o.cancelAt.Before(o.expiresAt):
		return o.cancelAt
	}
	return o.expiresAt
}

// evalAt fills o as far as the market at t allows.
func (v *engine) evalAt(o *order, t time.Time) {
	if o.final() {
		return
	}
	bid, ask := o.pair.quoteAt(v.seed, t)
	if (o.typ == "stop_loss" || o.typ == "stop_limit") && !o.triggered {
		if (o.side == "buy" && ask.GreaterThanOrEqual(o.stop)) || (o.side == "sell" && bid.LessThanOrEqual(o.stop)) {
			o.triggered = true
		} else {
			return
		}
	}
	rem := o.qty.Sub(o.filled)
	switch o.typ {
	case "market", "stop_loss":
		v.fill(o, v.fillPrice(o.pair, o.side, rem, t), rem, t)
	case "limit", "stop_limit":
		if (o.side == "buy" && ask.GreaterThan(o.limit)) || (o.side == "sell" && bid.LessThan(o.limit)) {
			return
		}
		chunk := rem
		if v.partial {
			fr := []string{"0.25", "0.5", "1"}[mix64(v.seed^mix64(uint64(o.seq)^uint64(t.Unix())))%3]
			chunk = floorTo(o.qty.Mul(decimal.RequireFromString(fr)), o.pair.assetInc)
			if chunk.LessThan(o.pair.assetInc) {
				chunk = o.pair.assetInc
			}
			if chunk.GreaterThan(rem) {
				chunk = rem
			}
		}
		// Only the book's levels within the limit fill.
		q, price := v.fillWithin(o.pair, o.side, chunk, o.limit, t)
		v.fill(o, price, q, t)
	}
}

// fill executes q of o at price, charging the fee and moving balances.
func (v *engine) fill(o *order, price, q decimal.Decimal, t time.Time) {
	if !q.IsPositive() {
		return
	}
	t = t.Truncate(time.Microsecond)
	notional := price.Mul(q)
	o.feeRatio = v.fillFeeRatio(o, t) // the fee tier in force at the fill
	fee := notional.Mul(o.feeRatio)
	o.execs = append(o.execs, execution{price: price, qty: q, fee: fee, at: t})
	o.filled = o.filled.Add(q)
	o.notional = o.notional.Add(notional)
	o.fee = o.fee.Add(fee)
	o.updated = t
	if o.filled.Equal(o.qty) {
		o.state = stateFilled
	} else {
		o.state = statePartial
	}
	a := v.byNumber[o.account]
	if a == nil {
		return
	}
	asset := o.pair.asset
	if o.side == "buy" {
		a.cash = a.cash.Sub(notional).Sub(fee)
		a.holdings[asset] = a.holdings[asset].Add(q)
	} else {
		a.cash = a.cash.Add(notional).Sub(fee)
		a.holdings[asset] = a.holdings[asset].Sub(q)
	}
	a.volume.add(t, notional)
}

// reserved returns the cash held by a's open buys and the assets held by
// its open sells: running sums kept as orders rest, fill and end (see
// engine.settle). The map is the account's own: read it, do not keep it.
func (v *engine) reserved(a *account, now time.Time) (decimal.Decimal, map[string]decimal.Decimal) {
	return a.resCash, a.resAssets
}

// refPrice is the price an order's remainder is expected to trade at.
func (v *engine) refPrice(o *order, now time.Time) decimal.Decimal {
	switch {
	case o.hasLimit:
		return o.limit
	case o.hasStop:
		return o.stop
	}
	return v.fillPrice(o.pair, o.side, o.qty.Sub(o.filled), now)
}

var plainDecimal = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?$`)

type fieldErr struct{ detail, attr string }

// decimalField parses a config value: a JSON string holding a plain
// positive decimal (no sign, no exponent), as the vendor's samples send, or
// a positive JSON number, as the vendor's spec types it (correction C9 of
// the reference spec: a venue accepts both). A number is read from its
// text, never through float64.
func decimalField(raw json.RawMessage, attr string) (decimal.Decimal, *fieldErr) {
	s, ok := plainString(raw)
	if !ok && json.Unmarshal(raw, &s) != nil {
		var n json.Number
		if json.Unmarshal(raw, &n) != nil {
			return decimal.Zero, &fieldErr{"A valid number is required.", attr}
		}
		d, err := decimal.NewFromString(n.String())
		if err != nil {
			return decimal.Zero, &fieldErr{"A valid number is required.", attr}
		}
		if !d.IsPositive() {
			return decimal.Zero, &fieldErr{"Ensure this value is greater than 0.", attr}
		}
		return d, nil
	}
	if !plainDecimal.MatchString(s) {
		return decimal.Zero, &fieldErr{"A valid number is required.", attr}
	}
	d, err := decimal.NewFromString(s)
	if err != nil {
		return decimal.Zero, &fieldErr{"A valid number is required.", attr}
	}
	if !d.IsPositive() {
		return decimal.Zero, &fieldErr{"Ensure this value is greater than 0.", attr}
	}
	return d, nil
}

func stringField(m map[string]json.RawMessage, key string) (string, *fieldErr) {
	raw, ok := m[key]
	if !ok {
		return "", &fieldErr{"This field is required.", key}
	}
	s, ok := plainString(raw)
	if !ok && json.Unmarshal(raw, &s) != nil {
		return "", &fieldErr{"Not a valid string.", key}
	}
	return s, nil
}

// plainString reads a JSON string of printable ASCII without escapes (as
// a client_order_id, a side or a decimal is) without json.Unmarshal,
// which would read it the same; ok is false for any other value.
func plainString(raw json.RawMessage) (s string, ok bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	in := raw[1 : len(raw)-1]
	for _, c := range in {
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return "", false
		}
	}
	return string(in), true
}

// configFields are the fields each order type's config may hold.
var configFields = map[string]map[string]bool{
	"market":     {"asset_quantity": true},
	"limit":      {"asset_quantity": true, "quote_amount": true, "limit_price": true, "time_in_force": true},
	"stop_loss":  {"asset_quantity": true, "quote_amount": true, "stop_price": true, "time_in_force": true},
	"stop_limit": {"asset_quantity": true, "quote_amount": true, "limit_price": true, "stop_price": true, "time_in_force": true},
}

// parseOrder validates a create body strictly and returns the unsaved order.
func (v *engine) parseOrder(a *account, body []byte, now time.Time) (*order, *fieldErr) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil || m == nil {
		return nil, &fieldErr{"Invalid JSON body.", "non_field_errors"}
	}
	for k := range m {
		switch k {
		case "client_order_id", "side", "type", "symbol":
		default:
			if !strings.HasSuffix(k, "_order_config") {
				return nil, &fieldErr{"Unknown field.", k}
			}
		}
	}
	cid, fe := stringField(m, "client_order_id")
	if fe != nil {
		return nil, fe
	}
	if _, err := uuid.Parse(cid); err != nil {
		return nil, &fieldErr{"Must be a valid UUID.", "client_order_id"}
	}
	side, fe := stringField(m, "side")
	if fe != nil {
		return nil, fe
	}
	if side != "buy" && side != "sell" {
		return nil, &fieldErr{`"` + side + `" is not a valid choice.`, "side"}
	}
	if fe := a.refuseSide(side); fe != nil {
		return nil, fe
	}
	typ, fe := stringField(m, "type")
	if fe != nil {
		return nil, fe
	}
	if !orderTypes[typ] {
		return nil, &fieldErr{`"` + typ + `" is not a valid choice.`, "type"}
	}
	sym, fe := stringField(m, "symbol")
	if fe != nil {
		return nil, fe
	}
	p := v.bySymbol[sym]
	if p == nil {
		return nil, &fieldErr{"Invalid symbol: " + sym, "symbol"}
	}
	if fe := p.refuse(side); fe != nil {
		return nil, fe
	}
	cfgKey := typ + "_order_config"
	for k := range m {
		if strings.HasSuffix(k, "_order_config") && k != cfgKey {
			return nil, &fieldErr{"Exactly one order config matching type " + typ + " is required.", k}
		}
	}
	raw, ok := m[cfgKey]
	if !ok {
		return nil, &fieldErr{"This field is required.", cfgKey}
	}
	var cfg map[string]json.RawMessage
	if err := json.Unmarshal(raw, &cfg); err != nil || cfg == nil {
		return nil, &fieldErr{"Expected an object.", cfgKey}
	}
	allowed := configFields[typ]
	for k := range cfg {
		if !allowed[k] {
			return nil, &fieldErr{"Unknown field for " + typ + " orders.", cfgKey + "." + k}
		}
	}
	o := &order{clientID: cid, account: a.Number, symbol: sym, side: side, typ: typ, pair: p,
		feeRatio: a.feeRatioAt(now), state: stateOpen}
	if r, ok := cfg["time_in_force"]; ok {
		var plain bool
		if o.tif, plain = plainString(r); !plain && json.Unmarshal(r, &o.tif) != nil {
			return nil, &fieldErr{"Not a valid string.", cfgKey + ".time_in_force"}
		}
		if !timesInForce[o.tif] {
			return nil, &fieldErr{`"` + o.tif + `" is not a valid choice.`, cfgKey + ".time_in_force"}
		}
	}
	needLimit, needStop := typ == "limit" || typ == "stop_limit", typ == "stop_loss" || typ == "stop_limit"
	if needLimit {
		r, ok := cfg["limit_price"]
		if !ok {
			return nil, &fieldErr{"This field is required.", cfgKey + ".limit_price"}
		}
		if o.limit, fe = decimalField(r, cfgKey+".limit_price"); fe != nil {
			return nil, fe
		}
		if !isMultiple(o.limit, p.quoteInc) {
			return nil, &fieldErr{"Ensure limit_price is a multiple of " + p.quoteIncStr + ".", cfgKey + ".limit_price"}
		}
		o.hasLimit = true
	}
	if needStop {
		r, ok := cfg["stop_price"]
		if !ok {
			return nil, &fieldErr{"This field is required.", cfgKey + ".stop_price"}
		}
		if o.stop, fe = decimalField(r, cfgKey+".stop_price"); fe != nil {
			return nil, fe
		}
		if !isMultiple(o.stop, p.quoteInc) {
			return nil, &fieldErr{"Ensure stop_price is a multiple of " + p.quoteIncStr + ".", cfgKey + ".stop_price"}
		}
		o.hasStop = true
	}
	qr, hasQty := cfg["asset_quantity"]
	ar, hasAmt := cfg["quote_amount"]
	switch {
	case hasQty && hasAmt:
		return nil, &fieldErr{"Specify asset_quantity or quote_amount, not both.", cfgKey}
	case !hasQty && !hasAmt:
		return nil, &fieldErr{"This field is required.", cfgKey + ".asset_quantity"}
	}
	ref := v.refPrice(o, now)
	if hasQty {
		if o.qty, fe = decimalField(qr, cfgKey+".asset_quantity"); fe != nil {
			return nil, fe
		}
		if !isMultiple(o.qty, p.assetInc) {
			return nil, &fieldErr{"Ensure asset_quantity is a multiple of " + p.assetIncStr + ".", cfgKey + ".asset_quantity"}
		}
	} else {
		if o.quoteAmt, fe = decimalField(ar, cfgKey+".quote_amount"); fe != nil {
			return nil, fe
		}
		if !isMultiple(o.quoteAmt, decimal.New(1, -2)) {
			return nil, &fieldErr{"Ensure quote_amount is a multiple of 0.01.", cfgKey + ".quote_amount"}
		}
		o.hasQuote = true
		o.qty = floorTo(o.quoteAmt.Div(ref), p.assetInc)
		if !o.qty.IsPositive() {
			return nil, &fieldErr{"Order amount is too small.", cfgKey + ".quote_amount"}
		}
	}
	attr := cfgKey + ".asset_quantity"
	if hasAmt {
		attr = cfgKey + ".quote_amount"
	}
	if o.qty.GreaterThan(p.maxSize) {
		return nil, &fieldErr{"Ensure the order size is less than or equal to " + p.maxSizeStr + ".", attr}
	}
	if o.qty.Mul(ref).LessThan(p.minAmount) {
		return nil, &fieldErr{"Order amount must be at least " + p.minAmountStr + " " + p.quote + ".", attr}
	}
	return o, nil
}

// createOrder handles POST .../orders/. Caller holds mu.
func (v *engine) createOrder(a *account, body []byte, now time.Time) (*reply, *order) {
	if rep := a.refuseWrite(true); rep != nil {
		return rep, nil
	}
	return v.placeOrder(a, body, now)
}

// placeOrder creates the order body asks for in a, as a create by a key
// allowed to does: the answer, and the order if one was created. Caller
// holds mu.
func (v *engine) placeOrder(a *account, body []byte, now time.Time) (*reply, *order) {
	o, fe := v.parseOrder(a, body, now)
	if fe != nil {
		return errReply(http.StatusBadRequest, "validation_error", fe.detail, fe.attr), nil
	}
	if prev := v.byClient[a.Number+"|"+o.clientID]; len(prev) > 0 {
		switch v.duplicate {
		case Reject400:
			return errReply(http.StatusBadRequest, "validation_error",
				"An order with this client_order_id already exists.", "client_order_id"), nil
		case CreateSecond:
			// fall through and create another: the dangerous venue.
		default:
			return jsonReply(http.StatusOK, v.orderJSON(prev[0], now)), nil
		}
	}
	v.seq++
	o.seq = v.seq
	o.id = newID(v.seed, 0x6f72646572, uint64(o.seq))
	o.created = now.Truncate(time.Microsecond)
	o.updated = o.created
	o.expiresAt = expiry(o.tif, o.created)
	o.lastEval = now
	// Funds: a create the account cannot cover is accepted and fails.
	resCash, resAssets := v.reserved(a, now)
	if o.side == "buy" {
		need := o.qty.Mul(v.refPrice(o, now)).Mul(decimal.NewFromInt(1).Add(o.feeRatio))
		if need.GreaterThan(a.cash.Sub(resCash)) {
			o.state = stateFailed
		}
	} else if o.qty.GreaterThan(a.holdings[o.pair.asset].Sub(resAssets[o.pair.asset])) {
		o.state = stateFailed
	}
	if o.state != stateFailed {
		v.evalAt(o, now)
		if o.typ == "market" && o.state != stateFilled {
			o.state = stateFailed
		}
	}
	v.insertOrder(o)
	return jsonReply(http.StatusCreated, v.orderJSON(o, now)), o
}

// cancelOrder handles POST .../orders/{id}/cancel/. Caller holds mu.
func (v *engine) cancelOrder(a *account, id string, now time.Time) *reply {
	if rep := a.refuseWrite(false); rep != nil {
		return rep
	}
	o := v.byID[id]
	if o == nil || o.account != a.Number {
		if _, ok := v.bulk.lookup(id, a.Number); ok {
			return errReply(http.StatusBadRequest, "validation_error", "This order cannot be canceled.", "non_field_errors")
		}
		return notFound()
	}
	if o.final() {
		return errReply(http.StatusBadRequest, "validation_error", "This order cannot be canceled.", "non_field_errors")
	}
	if o.cancelAt.IsZero() {
		o.cancelAt = now.Add(v.cancelD).Truncate(time.Microsecond)
		v.settle(o)
	}
	return jsonReply(http.StatusOK, v.orderJSON(o, now))
}

// num prints a decimal as a bare JSON number, always with a fraction.
type num decimal.Decimal

// MarshalJSON writes the number bare, as the venue does.
func (n num) MarshalJSON() ([]byte, error) {
	s := decimal.Decimal(n).String()
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return []byte(s), nil
}

type execJSON struct {
	EffectivePrice string `json:"effective_price"`
	Quantity       string `json:"quantity"`
	Timestamp      string `json:"timestamp"`
}

type configJSON struct {
	AssetQuantity string `json:"asset_quantity,omitempty"`
	QuoteAmount   string `json:"quote_amount,omitempty"`
	LimitPrice    string `json:"limit_price,omitempty"`
	StopPrice     string `json:"stop_price,omitempty"`
	TimeInForce   string `json:"time_in_force,omitempty"`
}

type orderJSON struct {
	Symbol                string      `json:"symbol"`
	ClientOrderID         string      `json:"client_order_id"`
	Side                  string      `json:"side"`
	Type                  string      `json:"type"`
	ID                    string      `json:"id"`
	AccountNumber         string      `json:"account_number"`
	State                 string      `json:"state"`
	FilledAssetQuantity   string      `json:"filled_asset_quantity"`
	Executions            []execJSON  `json:"executions"`
	AveragePrice          *num        `json:"average_price"`
	CreatedAt             string      `json:"created_at"`
	UpdatedAt             string      `json:"updated_at"`
	FeeCharged            num         `json:"fee_charged"`
	EstimatedFeeRemaining num         `json:"estimated_fee_remaining"`
	Market                *configJSON `json:"market_order_config,omitempty"`
	Limit                 *configJSON `json:"limit_order_config,omitempty"`
	StopLoss              *configJSON `json:"stop_loss_order_config,omitempty"`
	StopLimit             *configJSON `json:"stop_limit_order_config,omitempty"`
}

func fix18(d decimal.Decimal) string { return d.StringFixed(18) }

func (v *engine) orderJSON(o *order, now time.Time) orderJSON {
	t := &o.text
	if !t.set {
		*t = orderText{set: true, created: orderStamp(o.created)}
		if o.hasQuote {
			t.quote = fix18(o.quoteAmt)
		} else {
			t.qty = fix18(o.qty)
		}
		if o.hasLimit {
			t.limit = fix18(o.limit)
		}
		if o.hasStop {
			t.stop = fix18(o.stop)
		}
	}
	if len(t.execs) < len(o.execs) || t.filled == "" {
		for _, e := range o.execs[len(t.execs):] {
			t.execs = append(t.execs, execJSON{fix18(e.price), fix18(e.qty), orderStamp(e.at)})
		}
		t.filled = fix18(o.filled) // the quantity filled moves with the executions alone
	}
	if t.updated == "" || !t.updatedAt.Equal(o.updated) {
		t.updatedAt, t.updated = o.updated, orderStamp(o.updated)
	}
	execs := t.execs[:len(t.execs):len(t.execs)] // shared: an append copies
	if execs == nil {
		execs = []execJSON{}
	}
	j := orderJSON{Symbol: o.symbol, ClientOrderID: o.clientID, Side: o.side, Type: o.typ, ID: o.id,
		AccountNumber: o.account, State: o.state, FilledAssetQuantity: t.filled,
		Executions: execs, CreatedAt: t.created,
		UpdatedAt: t.updated, FeeCharged: num(o.fee)}
	if o.filled.IsPositive() {
		avg := num(o.notional.DivRound(o.filled, 8))
		j.AveragePrice = &avg
	}
	if !o.final() {
		rem := o.qty.Sub(o.filled)
		j.EstimatedFeeRemaining = num(rem.Mul(v.refPrice(o, now)).Mul(o.feeRatio))
	}
	c := &configJSON{AssetQuantity: t.qty, QuoteAmount: t.quote, LimitPrice: t.limit, StopPrice: t.stop}
	switch o.typ {
	case "market":
		j.Market = c
	case "limit":
		j.Limit = c
	case "stop_loss":
		c.TimeInForce = o.timeInForce()
		j.StopLoss = c
	case "stop_limit":
		c.TimeInForce = o.timeInForce()
		j.StopLimit = c
	}
	return j
}
