package venue

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"
)

const (
	historyWindow = 30 * 24 * time.Hour
	bulkUpdateLag = time.Second // a bulk order's updated_at is created_at + 1s
	bulkIDPrefix  = "b0000000-0000-4000-8000-"
)

// bulkSpec describes n final orders generated on demand from their index j:
// order j was created at newest - j*step, so the list is newest first by index.
type bulkSpec struct {
	n       int
	account string
	newest  time.Time
	step    time.Duration
}

func newBulk(account string, n int, start time.Time) bulkSpec {
	step := (historyWindow / time.Duration(n)).Truncate(time.Microsecond)
	if step < time.Microsecond {
		step = time.Microsecond
	}
	return bulkSpec{n: n, account: account, newest: start.Add(-time.Minute), step: step}
}

func (b *bulkSpec) created(j int) time.Time { return b.newest.Add(-time.Duration(j) * b.step) }
func (b *bulkSpec) seq(j int) int64         { return -int64(j) - 1 }

// firstBelow is the smallest j whose key sorts before k.
func (b *bulkSpec) firstBelow(k okey) int {
	j := int(b.newest.Sub(k.created) / b.step)
	j = min(max(j, 0), b.n)
	for j > 0 && (okey{b.created(j - 1), b.seq(j - 1)}).less(k) {
		j--
	}
	for j < b.n && !(okey{b.created(j), b.seq(j)}).less(k) {
		j++
	}
	return j
}

// firstAtOrBefore is the smallest j created at or before t.
func (b *bulkSpec) firstAtOrBefore(t time.Time) int {
	j := int(b.newest.Sub(t) / b.step)
	j = min(max(j, 0), b.n)
	for j > 0 && !b.created(j-1).After(t) {
		j--
	}
	for j < b.n && b.created(j).After(t) {
		j++
	}
	return j
}

// lookup finds a bulk order by id.
func (b *bulkSpec) lookup(id, account string) (int, bool) {
	if b.n == 0 || account != b.account || !strings.HasPrefix(id, bulkIDPrefix) {
		return 0, false
	}
	j, err := strconv.ParseUint(id[len(bulkIDPrefix):], 16, 64)
	if err != nil || len(id) != 36 || j >= uint64(b.n) {
		return 0, false
	}
	return int(j), true
}

// order builds bulk order j. It is deterministic in (seed, j).
func (b *bulkSpec) order(v *engine, j int) *order {
	h := mix64(v.seed ^ mix64(0x62756c6b^uint64(j)))
	hp := v.historyPairs()
	p := hp[h%uint64(len(hp))]
	created := b.created(j)
	o := &order{
		id: fmt.Sprintf("%s%012x", bulkIDPrefix, j), clientID: newID(v.seed, 0x636c69656e74, uint64(j)),
		account: b.account, symbol: p.symbol, pair: p, seq: b.seq(j),
		created: created, updated: created.Add(bulkUpdateLag), lastEval: created,
		feeRatio: decimal.RequireFromString(defaultFeeRatio),
	}
	o.side = []string{"buy", "sell"}[(h>>8)&1]
	o.typ = []string{"market", "limit"}[(h>>9)&1]
	bid, ask := p.quoteAt(v.seed, created)
	price := ask
	if o.side == "sell" {
		price = bid
	}
	// About $10..$500 of the asset.
	usd := decimal.NewFromInt(int64(10 + (h>>16)%490))
	o.qty = floorTo(usd.Div(price), p.assetInc)
	if o.typ == "limit" {
		o.limit, o.hasLimit = price, true
	}
	switch r := (h >> 32) % 100; {
	case r < 75:
		o.state = stateFilled
		v.fillQuiet(o, price, o.qty, o.updated)
	case r < 85 && o.typ == "limit":
		o.state = stateCanceled
		v.fillQuiet(o, price, floorTo(o.qty.Div(decimal.NewFromInt(3)), p.assetInc), created.Add(bulkUpdateLag/2))
		o.state, o.updated = stateCanceled, created.Add(bulkUpdateLag)
	case r < 93:
		o.state = stateCanceled
	default:
		o.state = stateFailed
	}
	return o
}

// fillQuiet records an execution on o without moving any balance: history
// is a record of the past, not a change to today's account.
func (v *engine) fillQuiet(o *order, price, q decimal.Decimal, t time.Time) {
	if !q.IsPositive() {
		return
	}
	t = t.Truncate(time.Microsecond)
	fee := price.Mul(q).Mul(o.feeRatio)
	o.execs = append(o.execs, execution{price: price, qty: q, fee: fee, at: t})
	o.filled = o.filled.Add(q)
	o.notional = o.notional.Add(price.Mul(q))
	o.fee = o.fee.Add(fee)
	o.updated = t
	if o.filled.Equal(o.qty) {
		o.state = stateFilled
	} else {
		o.state = statePartial
	}
}

// seedHistory stores n orders for a over the 30 days before start: filled,
// partly filled then canceled, canceled, failed and still open, across all
// symbols, deterministic in the seed. Caller need not hold mu (New only).
func (v *engine) seedHistory(a *account, n int) {
	if n <= 0 {
		return
	}
	rng := rand.New(rand.NewPCG(v.seed, 0x68697374))
	times := make([]time.Time, n)
	for i := range times {
		times[i] = v.start.Add(-time.Duration(rng.Int64N(int64(historyWindow - time.Hour)))).Add(-15 * time.Minute).Truncate(time.Microsecond)
	}
	sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
	hp := v.historyPairs()
	for i, created := range times {
		p := hp[rng.IntN(len(hp))]
		v.seq++
		o := &order{id: newID(v.seed, 0x6f72646572, uint64(v.seq)), clientID: newID(v.seed, 0x68636964, uint64(i)),
			account: a.Number, symbol: p.symbol, pair: p, seq: v.seq, created: created, updated: created,
			feeRatio: a.FeeRatio, lastEval: v.start}
		o.side = []string{"buy", "sell"}[rng.IntN(2)]
		o.typ = []string{"market", "limit", "limit", "stop_limit"}[rng.IntN(4)]
		bid, ask := p.quoteAt(v.seed, created)
		price := ask
		if o.side == "sell" {
			price = bid
		}
		o.qty = floorTo(decimal.NewFromInt(int64(20+rng.IntN(480))).Div(price), p.assetInc)
		if o.typ != "market" {
			o.limit, o.hasLimit = price, true
		}
		if o.typ == "stop_limit" {
			o.stop, o.hasStop = price, true
		}
		fillAt := created.Add(time.Duration(1+rng.IntN(600)) * time.Second)
		switch x := rng.IntN(100); {
		case x < 45 || o.typ == "market" && x < 85:
			v.fillQuiet(o, price, o.qty, fillAt)
		case x < 60:
			v.fillQuiet(o, price, floorTo(o.qty.Mul(decimal.RequireFromString("0.4")), p.assetInc), fillAt)
			o.state, o.updated = stateCanceled, fillAt.Add(time.Minute).Truncate(time.Microsecond)
		case x < 75:
			o.state, o.updated = stateCanceled, fillAt.Truncate(time.Microsecond)
		case x < 85:
			o.state = stateFailed
		default:
			// Still open: a buy far below or a sell far above the market, so
			// it keeps resting.
			o.state = stateOpen
			if o.typ == "market" || o.typ == "stop_limit" {
				o.typ, o.hasStop = "limit", false
			}
			o.hasLimit = true
			if o.side == "buy" {
				o.limit = floorTo(price.Mul(decimal.RequireFromString("0.5")), p.quoteInc)
			} else {
				o.limit = floorTo(price.Mul(decimal.NewFromInt(2)), p.quoteInc)
			}
			if o.side == "sell" {
				// Sells need holdings; keep history from blocking new trades.
				o.side = "buy"
				o.limit = floorTo(price.Mul(decimal.RequireFromString("0.5")), p.quoteInc)
			}
		}
		if o.state == "" {
			o.state = stateOpen
		}
		v.insertOrder(o)
	}
}
