package venue

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"
)

// TestQuoteBounds holds quoteBounds to quoteAt: over spans of one second
// to a month, on every pair and several seeds, every quote sampled lies
// within the bounds of its span, and the bounds are not vacuous: they rule
// out a buy at half the market for a day. Besides spans at random, it
// takes spans around every crossed book second and into every stale
// stretch of a few hours, checking each of their seconds, so the seconds
// where the book misbehaves are covered, and it counts them.
func TestQuoteBounds(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	base := epoch.Unix()
	var crossed, stale, staleStart int // quotes checked in crossed or stale seconds; spans starting in a stale stretch
	check := func(seed uint64, p *pair, s0, s1 int64, at []int64) {
		t.Helper()
		askLo, askHi, ok1 := p.quoteBounds(seed, s0, s1, true)
		bidLo, bidHi, ok2 := p.quoteBounds(seed, s0, s1, false)
		if !ok1 || !ok2 {
			t.Fatalf("%s: bounds over [%d, %d] not usable", p.symbol, s0, s1)
		}
		if p.bookTime(seed, time.Unix(s0, 0)).Unix() < s0 {
			staleStart++
		}
		for _, s := range at {
			bid, ask := p.quoteAt(seed, time.Unix(s, 0))
			b, a := bid.InexactFloat64(), ask.InexactFloat64()
			if b < bidLo || b > bidHi || a < askLo || a > askHi {
				t.Fatalf("seed %d %s at %d in [%d, %d]: bid %v ask %v outside bid [%v, %v] ask [%v, %v]",
					seed, p.symbol, s, s0, s1, bid, ask, bidLo, bidHi, askLo, askHi)
			}
			bt := p.bookTime(seed, time.Unix(s, 0)).Unix()
			if bt < s {
				stale++
			}
			if p.crossedAt(seed, bt) {
				crossed++
			}
		}
	}
	every := func(s0, s1 int64) []int64 {
		var at []int64
		for s := s0; s <= s1; s++ {
			at = append(at, s)
		}
		return at
	}
	for seed := uint64(0); seed < 4; seed++ {
		for _, p := range defaultPairs() {
			for range 150 {
				span := int64(1) << rng.IntN(22) // 1 s .. ~48 days
				s0 := base + rng.Int64N(90*86400) - 45*86400
				s1 := s0 + rng.Int64N(span)
				check(seed, p, s0, s1, []int64{s0, s1, s0 + rng.Int64N(s1-s0+1), s0 + rng.Int64N(s1-s0+1)})
			}
			// The misbehaving seconds of three hours: each crossed book
			// second alone and in spans about it, short (mayCross looks
			// through them) and long; each stale stretch in spans that
			// start before it, inside it and at its last second.
			from := base + int64(seed)*86400
			for s := from; s < from+3*3600; s++ {
				bt := p.bookTime(seed, time.Unix(s, 0)).Unix()
				if p.crossedAt(seed, s) {
					for _, w := range []int64{0, 1, 5, crossScan / 2, crossScan, 600} {
						s0, s1 := s-rng.Int64N(w+1), s+rng.Int64N(w+1)
						at := every(s0, s1)
						if w > crossScan {
							at = []int64{s0, s, s1}
						}
						check(seed, p, s0, s1, at)
					}
				}
				if bt < s {
					check(seed, p, s, s, []int64{s})
					if s != bt+1 && p.bookTime(seed, time.Unix(s+1, 0)).Unix() == bt {
						continue // spans from the stretch's first and last seconds only
					}
					s1 := s + rng.Int64N(2*staleMax)
					check(seed, p, s, s1, every(s, s1))
					s0 := bt - rng.Int64N(staleMax)
					check(seed, p, s0, s, every(s0, s))
					check(seed, p, s, s+3600, []int64{s, s + 1, s + staleMax})
				}
			}
			// Not vacuous: a resting buy at half the market cannot fill in a day.
			v := &engine{seed: seed}
			bid, _ := p.quoteAt(seed, time.Unix(base, 0))
			o := &order{side: "buy", typ: "limit", pair: p, limit: bid.Div(decimal.NewFromInt(2)), hasLimit: true}
			if v.mayHit(o, base, base+86400) {
				t.Errorf("%s: a buy at half the market is not ruled out for a day", p.symbol)
			}
			o.limit = bid.Mul(decimal.NewFromInt(2))
			if !v.mayHit(o, base, base) {
				t.Errorf("%s: a buy at twice the market is ruled out", p.symbol)
			}
		}
	}
	// Rarer still, a book frozen crossed: short spans from inside the
	// stretch show it though none of their own seconds is crossed.
	p, frozen := defaultPairs()[0], 0
	for s := base; s < base+200*86400 && frozen < 3; s++ {
		if !p.crossedAt(0, s) || p.bookTime(0, time.Unix(s+1, 0)).Unix() != s {
			continue
		}
		frozen++
		for w := int64(0); w < 4; w++ {
			check(0, p, s+1+w, s+1+w+w*w, every(s+1+w, s+1+w+w*w))
		}
	}
	// Not vacuous: the misbehaving seconds were there to check.
	if crossed < 100 || stale < 100 || staleStart < 100 || frozen < 3 {
		t.Errorf("checked %d quotes in crossed seconds, %d in stale ones, %d spans from inside a stale stretch, %d frozen crossed; want 100 or more of each, 3 frozen",
			crossed, stale, staleStart, frozen)
	}
	t.Logf("checked %d quotes in crossed seconds, %d in stale ones, %d spans from inside a stale stretch, %d frozen crossed", crossed, stale, staleStart, frozen)
}

// TestMayCross holds mayCross to crossedAt: over a short span it is true
// just when a second of it is crossed, and over a long one always.
func TestMayCross(t *testing.T) {
	t.Parallel()
	p := defaultPairs()[0]
	var yes, no int
	for s0 := epoch.Unix(); s0 < epoch.Unix()+20000; s0 += 7 {
		s1 := s0 + int64(s0%crossScan)
		want := false
		for s := s0; s <= s1; s++ {
			want = want || p.crossedAt(1, s)
		}
		if got := p.mayCross(1, s0, s1); got != want {
			t.Fatalf("mayCross(%d, %d) = %v, want %v", s0, s1, got, want)
		}
		if want {
			yes++
		} else {
			no++
		}
		if !p.mayCross(1, s0, s0+crossScan) {
			t.Fatalf("mayCross(%d, %d) = false over a long span", s0, s0+crossScan)
		}
	}
	if yes == 0 || no == 0 {
		t.Errorf("%d spans with a crossed second, %d without: want some of each", yes, no)
	}
}

// bruteAdvance is the venue's fill rule written the plain way: every open
// order evaluated at every second of its grid up to now, then ended at its
// cancel or expiry. The event-driven engine must match it exactly.
func bruteAdvance(v *engine, now time.Time) {
	for _, o := range v.orders {
		if o.final() {
			continue
		}
		end := o.endAt()
		for t := o.lastEval.Add(time.Second); !t.After(now) && !o.final(); t = t.Add(time.Second) {
			if !end.IsZero() && !t.Before(end) {
				break
			}
			v.evalAt(o, t)
			o.lastEval = t
		}
		if !o.final() && !end.IsZero() && !now.Before(end) {
			o.state, o.updated = stateCanceled, end
		}
		v.hold(o)
	}
}

// scanReserved is reserved() as a scan over the open orders, as it was.
func scanReserved(v *engine, a *account) (decimal.Decimal, map[string]decimal.Decimal) {
	cash, assets := decimal.Zero, map[string]decimal.Decimal{}
	for _, o := range v.orders {
		if o.account != a.Number || o.final() {
			continue
		}
		rem := o.qty.Sub(o.filled)
		if o.side == "sell" {
			assets[o.pair.asset] = assets[o.pair.asset].Add(rem)
			continue
		}
		cash = cash.Add(rem.Mul(v.refPrice(o, o.created)).Mul(decimal.NewFromInt(1).Add(o.feeRatio)))
	}
	return cash, assets
}

// TestEventDrivenMatchesBruteForce drives two venues with the same
// creates and cancels, hundreds of orders of every type and time in force
// near and far from the market, over gaps of a second to a quarter of an hour: one
// advances event-driven (advance), the other by bruteAdvance. Every order
// reads the same, every balance is the same, and the running reserved sums
// equal a scan of the open orders. It runs on three seeds, with and
// without partial fills, and counts the fills that came in crossed or
// stale seconds, where the price bounds are most easily wrong.
func TestEventDrivenMatchesBruteForce(t *testing.T) {
	t.Parallel()
	var odd atomic.Int64 // fills after resting in a crossed or stale second, over all runs
	t.Run("runs", func(t *testing.T) {
		for _, seed := range []int64{5, 6, 7} {
			for _, partial := range []bool{true, false} {
				t.Run(fmt.Sprintf("seed=%d/partial=%v", seed, partial), func(t *testing.T) {
					t.Parallel()
					odd.Add(int64(bruteForceRun(t, seed, partial)))
				})
			}
		}
	})
	// Not vacuous: some fills came in the seconds the book misbehaves.
	if n := odd.Load(); n < 3 {
		t.Errorf("%d fills in crossed or stale seconds, want 3 or more", n)
	}
}

// bruteForceRun is one run of TestEventDrivenMatchesBruteForce on seed;
// it returns how many fills after resting came in crossed or stale
// seconds.
func bruteForceRun(t *testing.T, seed int64, partial bool) int {
	cfg := engineConfig{Seed: seed, RatePerMinute: -1, NoPartialFills: !partial, History: 40}
	fast, brute := setup(t, cfg), setup(t, cfg)
	rng := rand.New(rand.NewPCG(uint64(seed)+2, 8))
	var ids []string
	acted := 0
	for i := range 150 {
		gap := time.Duration(1+rng.IntN(10)) * time.Second
		if rng.IntN(15) == 0 {
			gap = time.Duration(rng.IntN(900)) * time.Second
		}
		gap += time.Duration(rng.IntN(1000)) * time.Millisecond
		fast.clock.Advance(gap)
		brute.clock.Advance(gap)
		now := fast.clock.Now()
		fast.v.mu.Lock()
		brute.v.mu.Lock()
		fast.v.advance(now)
		bruteAdvance(brute.v, now)
		if len(ids) > 0 && rng.IntN(5) == 0 {
			id := ids[rng.IntN(len(ids))]
			a, b := fast.v.cancelOrder(fast.v.accounts[0], id, now), brute.v.cancelOrder(brute.v.accounts[0], id, now)
			if a.status != b.status || !bytes.Equal(a.body, b.body) {
				t.Fatalf("cancel %s: %d %s, brute force %d %s", id, a.status, a.body, b.status, b.body)
			}
		} else {
			body := randomOrder(fast.v, rng, i, now)
			a, oa := fast.v.createOrder(fast.v.accounts[0], body, now)
			b, _ := brute.v.createOrder(brute.v.accounts[0], body, now)
			if a.status != b.status || !bytes.Equal(a.body, b.body) {
				t.Fatalf("create %s: %d %s, brute force %d %s", body, a.status, a.body, b.status, b.body)
			}
			if oa != nil {
				ids = append(ids, oa.id)
			}
		}
		if i%10 == 0 || i == 149 {
			compareBooks(t, fast.v, brute.v, now)
		}
		fast.v.mu.Unlock()
		brute.v.mu.Unlock()
	}
	odd := 0
	for _, o := range fast.v.orders {
		if len(o.execs) > 0 && o.execs[len(o.execs)-1].at.After(o.created) {
			acted++
		}
		for _, e := range o.execs {
			if bt := o.pair.bookTime(fast.v.seed, e.at); e.at.After(o.created) && (bt.Unix() < e.at.Unix() || o.pair.crossedAt(fast.v.seed, bt.Unix())) {
				odd++
			}
		}
	}
	t.Logf("%d orders filled after resting, %d fills in crossed or stale seconds", acted, odd)
	// Not vacuous: orders rested and then filled, and others ended.
	if acted < 10 {
		t.Errorf("only %d orders filled after resting", acted)
	}
	return odd
}

// randomOrder is a create body for order i: any type, either side, near
// the market or far from it, with any time in force.
func randomOrder(v *engine, rng *rand.Rand, i int, now time.Time) []byte {
	p := v.pairs[rng.IntN(len(v.pairs))]
	bid, ask := p.quoteAt(v.seed, now)
	side := []string{"buy", "sell"}[rng.IntN(2)]
	typ := []string{"market", "limit", "limit", "stop_loss", "stop_limit"}[rng.IntN(5)]
	ref := ask
	if side == "sell" {
		ref = bid
	}
	// -2 % .. +2 % around the touch, on the quote increment.
	off := decimal.NewFromFloat(1 + (rng.Float64()-0.5)*0.04*rng.Float64())
	px := floorTo(ref.Mul(off), p.quoteInc)
	qty := floorTo(decimal.NewFromInt(int64(20+rng.IntN(200))).Div(ref), p.assetInc)
	cfg := map[string]string{"asset_quantity": qty.String()}
	switch typ {
	case "limit":
		cfg["limit_price"] = px.String()
	case "stop_loss":
		cfg["stop_price"] = px.String()
	case "stop_limit":
		cfg["stop_price"] = px.String()
		cfg["limit_price"] = floorTo(px.Mul(decimal.NewFromFloat(1+(rng.Float64()-0.5)*0.01)), p.quoteInc).String()
	}
	if typ != "market" {
		if tif := []string{"", "gtc", "gfd", "gfw"}[rng.IntN(4)]; tif != "" {
			cfg["time_in_force"] = tif
		}
	}
	c, _ := json.Marshal(cfg)
	return orderBody(newID(11, 0x74657374, uint64(i)), side, typ, p.symbol, string(c))
}

func compareBooks(t *testing.T, fast, brute *engine, now time.Time) {
	t.Helper()
	if len(fast.orders) != len(brute.orders) {
		t.Fatalf("%d orders, brute force %d", len(fast.orders), len(brute.orders))
	}
	for i, o := range fast.orders {
		a, _ := json.Marshal(fast.orderJSON(o, now))
		b, _ := json.Marshal(brute.orderJSON(brute.orders[i], now))
		if !bytes.Equal(a, b) {
			t.Fatalf("at %s order %s:\n%s\nbrute force:\n%s", now.Format(time.RFC3339), o.id, a, b)
		}
	}
	fa, ba := fast.accounts[0], brute.accounts[0]
	if !fa.cash.Equal(ba.cash) || !fa.volume.at(now).Equal(ba.volume.at(now)) || fmt.Sprint(fa.holdings) != fmt.Sprint(ba.holdings) {
		t.Fatalf("account %v %v %v, brute force %v %v %v", fa.cash, fa.volume.at(now), fa.holdings, ba.cash, ba.volume.at(now), ba.holdings)
	}
	cash, assets := scanReserved(fast, fa)
	gotCash, gotAssets := fast.reserved(fa, now)
	if !cash.Equal(gotCash) || len(assets) != len(gotAssets) {
		t.Fatalf("reserved %v %v, scan %v %v", gotCash, gotAssets, cash, assets)
	}
	for k, q := range assets {
		if !q.Equal(gotAssets[k]) {
			t.Fatalf("reserved %s %v, scan %v", k, gotAssets[k], q)
		}
	}
	for _, o := range fast.due {
		if o.final() || !o.dueAt.After(now) {
			t.Fatalf("order %s in the due queue: state %s, due %v at %v", o.id, o.state, o.dueAt, now)
		}
	}
}

// TestFarOrdersWaitTheLookahead checks that an order the market cannot
// reach waits out the whole lookahead (or its end) in the due queue, so
// no request before then looks at it.
func TestFarOrdersWaitTheLookahead(t *testing.T) {
	t.Parallel()
	h := setup(t, engineConfig{RatePerMinute: -1})
	for _, tc := range []struct{ typ, tif string }{{"limit", ""}, {"stop_loss", "gtc"}, {"stop_limit", "gfd"}} {
		side, cfg := restingConfig(t, h, tc.typ, tc.tif)
		m := h.create(orderBody(newID(3, 0x66617200, uint64(len(h.v.orders))), side, tc.typ, "BTC-USD", cfg), 201)
		o := h.v.byID[m["id"].(string)]
		want := o.created.Add(lookahead)
		if end := o.endAt(); !end.IsZero() && end.Before(want) {
			want = end
		}
		if !o.dueAt.Equal(want) {
			t.Errorf("%s %s: due at %v, want %v", tc.typ, tc.tif, o.dueAt, want)
		}
	}
	// Negative control: an order at the touch is due within the hour.
	_, ask, _ := h.v.quote("BTC-USD")
	m := h.create(orderBody(newID(3, 0x66617201, 0), "sell", "limit", "BTC-USD",
		`{"asset_quantity":"0.0001","limit_price":"`+ask.String()+`"}`), 201)
	o := h.v.byID[m["id"].(string)]
	if o.final() || !o.dueAt.Before(o.created.Add(time.Hour)) {
		t.Errorf("a sell at the ask: %s, due at %v, created %v", o.state, o.dueAt, o.created)
	}
}

// TestLedgerLimit checks the ring: it keeps the most recent requests in
// arrival order, while the counts, the length and the order records stay
// exact over everything; unlimited, it keeps them all.
func TestLedgerLimit(t *testing.T) {
	t.Parallel()
	for _, limit := range []int{0, 3} {
		l := &Ledger{limit: limit}
		for i := range 8 {
			l.add(Request{Target: fmt.Sprint(i), Status: 200 + i%2})
			if i%3 == 0 {
				l.addOrder(OrderRecord{ID: fmt.Sprint(i), ClientOrderID: "c" + fmt.Sprint(i%2)})
			}
		}
		var got []string
		for _, r := range l.Requests() {
			got = append(got, r.Target)
		}
		want := "[0 1 2 3 4 5 6 7]"
		if limit == 3 {
			want = "[5 6 7]"
		}
		if fmt.Sprint(got) != want {
			t.Errorf("limit %d: kept %v, want %s", limit, got, want)
		}
		var seen []string
		n, err := l.AwaitRequests(t.Context(), 1, func(r Request) bool { seen = append(seen, r.Target); return r.Target == "7" })
		if err != nil || n != 8 || (limit == 3) != (len(seen) == 3) {
			t.Errorf("limit %d: AwaitRequests from 1 saw %v, returned %d, %v", limit, seen, n, err)
		}
		c := l.Counts()
		if l.len() != 8 || c.Total != 8 || c.ByStatus[200] != 4 || c.ByStatus[201] != 4 || c.Creates != 3 {
			t.Errorf("limit %d: Len %d, counts %+v", limit, l.len(), c)
		}
		if d := l.DuplicateClientIDs(); fmt.Sprint(d) != "[c0]" || len(l.OrdersByClientID("c0")) != 2 || len(l.OrdersByClientID("c1")) != 1 {
			t.Errorf("limit %d: duplicates %v, c0 %v, c1 %v", limit, d, l.OrdersByClientID("c0"), l.OrdersByClientID("c1"))
		}
	}
}
