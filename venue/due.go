package venue

import (
	"container/heap"
	"math"
	"time"

	"github.com/shopspring/decimal"
)

// How the venue keeps its cost per request independent of its history.
//
// An open order is evaluated on its own grid of whole seconds from its
// creation (created, created+1s, ...), as it always was; what changed is
// which orders are looked at. Prices are a pure function of (seed,
// symbol, second), so the venue can tell ahead of time, from bounds on the
// price over a span of seconds, that an order cannot trigger or fill in
// that span: each open order waits in a min-heap (engine.due) keyed by the
// first instant it might act (dueAt), which is the earlier of its end (a
// cancel settling, its time in force expiring) and the start of the first
// span its bounds cannot rule out. A request pops only the orders due by
// its now, and evaluates them exactly, second by second, where the bounds
// are not decisive. An order resting far from the market costs nothing
// per request; one near it costs what it always did, once per second it
// rests there. Cash and assets held by open orders are running sums per
// account (account.resCash, account.resAssets), updated as orders rest,
// fill and end.

// lookahead is how far past now a resting order's next instant is sought
// at once; an order the bounds rule out for that long comes due at its
// end of it only to be looked at again.
const lookahead = 24 * time.Hour

// leafSpan is the span of seconds under which bounds are taken second by
// second rather than over the span.
const leafSpan = 16

// dueQueue is a min-heap of open orders by (dueAt, seq).
type dueQueue []*order

func (q dueQueue) Len() int { return len(q) }
func (q dueQueue) Less(i, j int) bool {
	if !q[i].dueAt.Equal(q[j].dueAt) {
		return q[i].dueAt.Before(q[j].dueAt)
	}
	return q[i].seq < q[j].seq
}
func (q dueQueue) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].dueIdx, q[j].dueIdx = i, j
}
func (q *dueQueue) Push(x any) {
	o := x.(*order)
	o.dueIdx = len(*q)
	*q = append(*q, o)
}
func (q *dueQueue) Pop() any {
	old := *q
	o := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	o.dueIdx = -1
	return o
}

// settle brings the engine's books in line with o after anything about it
// changed: the cash or assets it holds of its account, and its place in the
// due queue (out of it when final, else at its next instant). Caller holds mu.
func (v *engine) settle(o *order) {
	v.hold(o)
	if o.final() {
		if o.dueIdx >= 0 {
			heap.Remove(&v.due, o.dueIdx)
		}
		return
	}
	o.dueAt = v.nextDue(o)
	if o.dueIdx >= 0 {
		heap.Fix(&v.due, o.dueIdx)
	} else {
		heap.Push(&v.due, o)
	}
}

// hold updates o's account's reserved sums to what o holds now: for an
// open buy its remainder at its reference price plus fee, for an open sell
// its remainder of the asset, nothing once final. A market order never
// rests (it fills or fails on create), so it holds nothing.
func (v *engine) hold(o *order) {
	want := decimal.Zero
	if !o.final() && (o.hasLimit || o.hasStop) {
		want = o.qty.Sub(o.filled)
		if o.side == "buy" {
			want = want.Mul(v.refPrice(o, o.created)).Mul(decimal.NewFromInt(1).Add(o.feeRatio))
		}
	}
	if want.Equal(o.held) {
		return
	}
	a := v.byNumber[o.account]
	if a == nil {
		o.held = want
		return
	}
	if o.side == "buy" {
		a.resCash = a.resCash.Add(want.Sub(o.held))
	} else {
		asset := o.pair.asset
		if r := a.resAssets[asset].Add(want.Sub(o.held)); r.IsZero() {
			delete(a.resAssets, asset)
		} else {
			a.resAssets[asset] = r
		}
	}
	o.held = want
}

// nextDue is the first instant after o.lastEval at which o must be looked
// at: its end, or the first grid second within lookahead that its bounds
// cannot rule out, or the end of the lookahead. It records in o.clear the
// grid seconds it ruled out.
func (v *engine) nextDue(o *order) time.Time {
	end := o.endAt()
	from := max(o.lastEval.Unix(), o.clear) + 1
	to := o.lastEval.Add(lookahead).Unix() - 1
	if !end.IsZero() {
		to = min(to, lastGridBefore(o.lastEval, end).Unix())
	}
	if from <= to {
		if s, ok := v.firstHit(o, from, to, false); ok {
			o.clear = s - 1
			return gridAt(o.lastEval, s)
		}
		o.clear = to
	}
	due := gridAt(o.lastEval, to+1)
	if !end.IsZero() && end.Before(due) {
		return end
	}
	return due
}

// gridAt is the point of the grid through g whose whole second is s.
func gridAt(g time.Time, s int64) time.Time { return g.Add(time.Duration(s-g.Unix()) * time.Second) }

// lastGridBefore is the last point of the grid through g strictly before t
// (g itself if none is later).
func lastGridBefore(g, t time.Time) time.Time {
	if !t.After(g) {
		return g
	}
	k := (t.Sub(g) - 1) / time.Second
	return g.Add(k * time.Second)
}

// firstHit returns the first whole second in [s0, s1] at which o would act
// (trigger or fill) on the market of that second. With exact, it is the
// first second where it does act; without, the first second the price
// bounds cannot rule out, found without any exact evaluation.
func (v *engine) firstHit(o *order, s0, s1 int64, exact bool) (int64, bool) {
	if s0 > s1 || !v.mayHit(o, s0, s1) {
		return 0, false
	}
	if s1-s0 < leafSpan {
		for s := s0; s <= s1; s++ {
			if s0 != s1 && !v.mayHit(o, s, s) {
				continue
			}
			if !exact || v.actsAt(o, s) {
				return s, true
			}
		}
		return 0, false
	}
	mid := s0 + (s1-s0)/2
	if s, ok := v.firstHit(o, s0, mid, exact); ok {
		return s, true
	}
	return v.firstHit(o, mid+1, s1, exact)
}

// acting is what o waits for: a price crossing thr on the ask (else the
// bid), from below (up) or from above.
func acting(o *order) (thr decimal.Decimal, onAsk, up bool) {
	buy := o.side == "buy"
	if (o.typ == "stop_loss" || o.typ == "stop_limit") && !o.triggered {
		// Triggered when a buy's ask rises to the stop, a sell's bid falls to it.
		return o.stop, buy, buy
	}
	// A limit fills when a buy's ask falls to the limit, a sell's bid rises to it.
	return o.limit, buy, !buy
}

// actsAt reports whether evalAt would trigger or fill o at second s.
func (v *engine) actsAt(o *order, s int64) bool {
	if o.typ == "market" {
		return true
	}
	bid, ask := o.pair.quoteAt(v.seed, time.Unix(s, 0))
	thr, onAsk, up := acting(o)
	px := bid
	if onAsk {
		px = ask
	}
	if up {
		return px.GreaterThanOrEqual(thr)
	}
	return px.LessThanOrEqual(thr)
}

// mayHit reports whether o might act at some second in [s0, s1], judged
// from bounds on the pair's quotes there: false only when it cannot.
func (v *engine) mayHit(o *order, s0, s1 int64) bool {
	if o.typ == "market" {
		return true
	}
	thr, onAsk, up := acting(o)
	lo, hi, ok := o.pair.quoteBounds(v.seed, s0, s1, onAsk)
	if !ok {
		return true
	}
	t := thr.InexactFloat64()
	if up {
		return hi >= t
	}
	return lo <= t
}

// quoteBounds returns bounds on p's ask (onAsk) or bid over the whole
// seconds [s0, s1], as quoteAt shows them, wide by a margin that covers
// rounding to the quote increment and float error; ok is false where they
// cannot be trusted.
//
// The book shown in a second is that of its book second (bookTime): the
// second itself, or in a stale stretch the earlier second the book froze
// at. Book seconds never decrease and lag by at most staleMax, so those of
// [s0, s1] lie in [bookTime(s0), s1], and the mid is bounded over that.
// In a crossed book second the two sides swap: the ask shown is the bid
// the book would show uncrossed and the other way round. Over one second
// the bounds are those of the side shown; over a span that may hold a
// crossed book second, each side is bounded by the hull of both (the
// uncrossed bid's low to the uncrossed ask's high). Deeper levels do not
// matter here: a limit order fills only when the best price passes its
// limit (evalAt), and a stop triggers on the best price too.
func (p *pair) quoteBounds(seed uint64, s0, s1 int64, onAsk bool) (lo, hi float64, ok bool) {
	b0 := p.bookTime(seed, time.Unix(s0, 0)).Unix()
	hsLo, hsHi := p.halfSpread*(spreadMid-spreadAmp), p.halfSpread*(spreadMid+spreadAmp)
	var midLo, midHi float64
	var crossed bool // some book second of the span may be crossed
	if s0 == s1 {
		// One second: the very floats quoteAt rounds, of its book second.
		hsLo = p.halfSpreadAt(seed, b0)
		hsHi = hsLo
		midLo = p.midAt(seed, time.Unix(b0, 0))
		midHi = midLo
		crossed = p.crossedAt(seed, b0)
	} else {
		llo, lhi := p.logBounds(seed, b0, s1)
		midLo, midHi = p.base*math.Exp(llo), p.base*math.Exp(lhi)
		crossed = p.mayCross(seed, b0, s1)
	}
	inc := p.quoteInc.InexactFloat64()
	const slack = 1e-9
	if midLo*(1-hsHi) <= 4*inc {
		return 0, 0, false // near the floor the venue clamps its quotes
	}
	// Uncrossed, ask = ceil(mid(1+hs)), or bid+inc when that is not above
	// the bid; bid = floor(mid(1-hs)).
	askLo, askHi := midLo*(1+hsLo), midHi*(1+hsHi)+inc
	bidLo, bidHi := midLo*(1-hsHi)-inc, midHi*(1-hsLo)
	switch {
	case s0 == s1 && crossed:
		onAsk = !onAsk // the side shown is the other one's
	case crossed:
		askLo, askHi = min(askLo, bidLo), max(askHi, bidHi)
		bidLo, bidHi = askLo, askHi
	}
	lo, hi = bidLo, bidHi
	if onAsk {
		lo, hi = askLo, askHi
	}
	return lo*(1-slack) - inc, hi*(1+slack) + inc, true
}

// crossScan is the longest span of book seconds mayCross looks through
// second by second; over a longer one it assumes a crossed second, as one
// in about crossedEvery seconds is.
const crossScan = 4 * leafSpan

// mayCross reports whether some whole second in [s0, s1] may show p's book
// crossed: false only when none does.
func (p *pair) mayCross(seed uint64, s0, s1 int64) bool {
	if s1-s0 >= crossScan {
		return true
	}
	for s := s0; s <= s1; s++ {
		if p.crossedAt(seed, s) {
			return true
		}
	}
	return false
}

// logBounds returns bounds on log(midAt/base) over the whole seconds
// [s0, s1]. Each noise layer is a smoothstep between hashed knots, which is
// monotonic from one knot to the next: over the span its extremes are
// among its values at s0 and s1 and at the knots inside, taken exactly
// (where the span holds few knots of it; else the layer's amplitude). The
// per-second jitter adds its amplitude either way.
func (p *pair) logBounds(seed uint64, s0, s1 int64) (lo, hi float64) {
	for i, l := range noiseLayers {
		k0, k1 := floorDiv(s0, l.period), floorDiv(s1, l.period)
		if k1-k0 > 6 {
			lo, hi = lo-l.amp, hi+l.amp
			continue
		}
		key := layerKey(seed, p.symHash, i)
		mn, mx := layerAt(key, l.period, l.amp, s0), layerAt(key, l.period, l.amp, s1)
		mn, mx = min(mn, mx), max(mn, mx)
		for k := k0 + 1; k <= k1; k++ {
			u := l.amp * knotAt(key, k)
			mn, mx = min(mn, u), max(mx, u)
		}
		lo, hi = lo+mn, hi+mx
	}
	return lo - jitterAmp, hi + jitterAmp
}
