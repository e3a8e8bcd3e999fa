package venue

import (
	_ "embed"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/shopspring/decimal"
)

// Trading pair statuses, as the vendor's spec enumerates them
// (TradingPair.status).
const (
	pairTradable   = "tradable"
	pairUntradable = "untradable"
	pairSellOnly   = "sellonly"
)

// pair is one market the venue lists and the parameters of its simulated
// book.
type pair struct {
	symbol, asset, quote string
	assetInc, quoteInc   decimal.Decimal
	maxSize, minAmount   decimal.Decimal // minAmount zero: the pair has none
	// The strings the venue prints for the increments and limits;
	// minAmountStr "" omits min_order_amount, as some live pairs do.
	assetIncStr, quoteIncStr, maxSizeStr, minAmountStr string
	status                                             string  // pairTradable, pairUntradable or pairSellOnly
	core                                               bool    // one of the four pairs seeded history trades
	base                                               float64 // price level the walk moves around
	halfSpread                                         float64 // fraction of mid, before noise
	depth                                              float64 // size of the top level in the quote currency, before noise
	symHash                                            uint64
}

// corePairs are the pairs the venue has always listed, with their
// parameters unchanged: seeded history trades them alone.
var corePairs = map[string]bool{"BTC-USD": true, "DOGE-USD": true, "ETH-USD": true, "SOL-USD": true}

// pairsText is the catalogue, the venue's list of pairs in symbol order: a
// list shaped like the live one (tens of USD pairs; a few untradable or
// sell-only; some without min_order_amount). TestPairsFile holds it valid.
//
//go:embed pairs.txt
var pairsText string

// defaultPairs are the markets every venue lists, in symbol order. Pairs
// are never changed once built, so every venue shares one parse of the
// catalogue.
var defaultPairs = sync.OnceValue(func() []*pair {
	ps, err := parsePairs(pairsText)
	if err != nil {
		panic(err)
	}
	return ps
})

// pairsHeader names the columns of a catalogue.
const pairsHeader = "symbol asset_increment quote_increment max_order_size min_order_amount base half_spread depth status"

// parsePairs reads a catalogue: lines starting with # and blank lines
// aside, the header, then one pair a line, in symbol order.
func parsePairs(text string) ([]*pair, error) {
	var out []*pair
	header := false
	for i, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 0 || strings.HasPrefix(f[0], "#"):
			continue
		case !header:
			if strings.Join(f, " ") != pairsHeader {
				return nil, fmt.Errorf("venue: pairs line %d: %q, want the header %q", i+1, line, pairsHeader)
			}
			header = true
			continue
		}
		p, err := parsePair(f)
		if err == nil && len(out) > 0 && p.symbol <= out[len(out)-1].symbol {
			err = fmt.Errorf("%s after %s: not in symbol order", p.symbol, out[len(out)-1].symbol)
		}
		if err != nil {
			return nil, fmt.Errorf("venue: pairs line %d: %w", i+1, err)
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, errors.New("venue: pairs: no pair")
	}
	return out, nil
}

// parsePair reads one catalogue line's columns (see pairsHeader): every
// number positive, min_order_amount "-" for none.
func parsePair(f []string) (*pair, error) {
	if len(f) != 9 {
		return nil, fmt.Errorf("%d columns, want 9", len(f))
	}
	var bad error
	dec := func(s string) decimal.Decimal {
		d, err := decimal.NewFromString(s)
		if (err != nil || !d.IsPositive()) && bad == nil {
			bad = fmt.Errorf("%q is not a positive decimal", s)
		}
		return d
	}
	num := func(s string) float64 {
		x, err := strconv.ParseFloat(s, 64)
		if (err != nil || !(x > 0) || math.IsInf(x, 0)) && bad == nil {
			bad = fmt.Errorf("%q is not a positive number", s)
		}
		return x
	}
	asset, quote, _ := strings.Cut(f[0], "-")
	if asset == "" || quote == "" {
		return nil, fmt.Errorf("symbol %q is not ASSET-QUOTE", f[0])
	}
	h := fnv.New64a()
	h.Write([]byte(f[0]))
	p := &pair{
		symbol: f[0], asset: asset, quote: quote,
		assetInc: dec(f[1]), quoteInc: dec(f[2]), maxSize: dec(f[3]),
		assetIncStr: f[1], quoteIncStr: f[2], maxSizeStr: f[3],
		base: num(f[5]), halfSpread: num(f[6]), depth: num(f[7]),
		status: f[8], core: corePairs[f[0]], symHash: h.Sum64(),
	}
	if f[4] != "-" {
		p.minAmount, p.minAmountStr = dec(f[4]), f[4]
	}
	switch p.status {
	case pairTradable, pairUntradable, pairSellOnly:
	default:
		return nil, fmt.Errorf("status %q", p.status)
	}
	return p, bad
}

// historyPairs are the pairs seeded history trades, in symbol order.
func (v *engine) historyPairs() []*pair { return v.hist }

// refuse is the create refusal a pair's status gives an order on side, or
// nil: an untradable pair takes no order, a sell-only pair no buy. The
// vendor documents the statuses (TradingPair.status: tradable, untradable,
// sellonly) but no answer for them; the venue answers as for any other
// unusable symbol: 400 validation_error on attr symbol.
func (p *pair) refuse(side string) *fieldErr {
	switch {
	case p.status == pairUntradable:
		return &fieldErr{"Trading pair is untradable: " + p.symbol, "symbol"}
	case p.status == pairSellOnly && side == "buy":
		return &fieldErr{"Trading pair is sell only: " + p.symbol, "symbol"}
	}
	return nil
}

// mix64 is the splitmix64 finaliser: a cheap, well-spread hash.
func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// unit hashes its inputs to a float in [-1, 1).
func unit(parts ...uint64) float64 {
	var h uint64
	for _, p := range parts {
		h = mix64(h ^ p)
	}
	return float64(h>>11)/float64(1<<53)*2 - 1
}

// noise layers: periods in seconds and their amplitude in log-price.
var noiseLayers = []struct {
	period int64
	amp    float64
}{
	{7 * 86400, 0.06}, {86400, 0.025}, {3600, 0.01}, {600, 0.004}, {60, 0.0015},
}

// jitterAmp is the amplitude in log-price of midAt's per-second jitter.
const jitterAmp = 0.0003

// layerKey is unit's hash state after (seed, symbol, layer i), so that
// knotAt(layerKey(seed, h, i), k) is unit(seed, h, i, k) for less work.
func layerKey(seed, symHash uint64, i int) uint64 {
	return mix64(mix64(mix64(seed)^symHash) ^ uint64(i))
}

// knotAt is the hashed knot k of the noise layer whose key is key, in [-1, 1).
func knotAt(key uint64, k int64) float64 {
	return float64(mix64(key^uint64(k))>>11)/float64(1<<53)*2 - 1
}

// layerAt is a noise layer's value at whole second sec: a smoothstep
// between its knots at the multiples of period either side, scaled by amp.
// From one knot to the next it is monotonic (due.go relies on it).
func layerAt(key uint64, period int64, amp float64, sec int64) float64 {
	k := floorDiv(sec, period)
	frac := float64(sec-k*period) / float64(period)
	frac = frac * frac * (3 - 2*frac) // smoothstep
	a, b := knotAt(key, k), knotAt(key, k+1)
	return amp * (a + (b-a)*frac)
}

// midAt is the simulated mid price of p at t: a pure function of (seed,
// symbol, whole second), made of smoothly interpolated hashed value noise at
// several time scales plus per-second jitter. Cheap to evaluate at any time.
func (p *pair) midAt(seed uint64, t time.Time) float64 {
	sec := t.Unix()
	var logp float64
	for i, l := range noiseLayers {
		logp += layerAt(layerKey(seed, p.symHash, i), l.period, l.amp, sec)
	}
	logp += jitterAmp * unit(seed, p.symHash, 99, uint64(sec))
	return p.base * math.Exp(logp)
}

// The half spread's noise: in the whole second sec, p's half spread is
// p.halfSpread × (spreadMid + spreadAmp×u), u in [-1, 1).
const (
	spreadMid = 1.25
	spreadAmp = 0.75
)

// halfSpreadAt is p's half spread, as a fraction of the mid, in the whole
// second sec.
func (p *pair) halfSpreadAt(seed uint64, sec int64) float64 {
	return p.halfSpread * (spreadMid + spreadAmp*unit(seed, p.symHash, 7, uint64(sec)))
}

// The book's rare misbehaviour, per pair, seeded and deterministic.
const (
	// crossedEvery: about one second in crossedEvery shows a crossed book
	// (bid above ask), as the live venue has been seen to send.
	crossedEvery = 900
	// staleBlock: about half of the staleBlock-second blocks hold one stale
	// stretch of staleMin to staleMax seconds, during which the venue keeps
	// showing the book of the stretch's first second, timestamp included.
	staleBlock = 1800
	staleMin   = 3
	staleMax   = 15
)

// bookTime is the instant whose book p shows at t: t itself, or within a
// stale stretch the whole second the book froze at.
func (p *pair) bookTime(seed uint64, t time.Time) time.Time {
	sec := t.Unix()
	k := floorDiv(sec, staleBlock)
	h := mix64(seed ^ mix64(p.symHash^mix64(0x7374616c65^uint64(k))))
	if h&1 == 0 {
		return t
	}
	length := int64(staleMin + (h>>8)%(staleMax-staleMin+1))
	start := k*staleBlock + int64((h>>16)%uint64(staleBlock-length))
	if sec > start && sec <= start+length {
		return time.Unix(start, 0).In(t.Location())
	}
	return t
}

// crossedAt reports whether p's book in the whole second sec is crossed.
func (p *pair) crossedAt(seed uint64, sec int64) bool {
	return mix64(seed^mix64(p.symHash^mix64(0x63726f7373^uint64(sec))))%crossedEvery == 0
}

// quoteAt returns the best bid and ask of p at t, on the quote increment:
// bid < ask, except in the rare crossed second, when the two sides swap
// (bid > ask); in a stale stretch, those of the second the book froze at.
func (p *pair) quoteAt(seed uint64, t time.Time) (bid, ask decimal.Decimal) {
	bt := p.bookTime(seed, t)
	mid := p.midAt(seed, bt)
	hs := p.halfSpreadAt(seed, bt.Unix())
	bid = floorTo(decimal.NewFromFloat(mid*(1-hs)), p.quoteInc)
	ask = ceilTo(decimal.NewFromFloat(mid*(1+hs)), p.quoteInc)
	if !ask.GreaterThan(bid) {
		ask = bid.Add(p.quoteInc)
	}
	if !bid.IsPositive() {
		bid = p.quoteInc
		ask = bid.Add(p.quoteInc)
	}
	if p.crossedAt(seed, bt.Unix()) {
		bid, ask = ask, bid
	}
	return bid, ask
}

// bookLevels is how many price levels each side of a book has; the last
// holds whatever the levels above it do not, so any size fills.
const bookLevels = 50

// sweep walks the side of p's book at t that an order on side takes
// (asks for "buy", bids for "sell"), best level first, up to qty, taking
// only levels no worse than limit when limit is positive. It returns the
// quantity found (qty itself without a limit) and its notional.
//
// Level 0 is the best bid or ask (quoteAt). Level i lies a seeded 0.5 to
// 1 gap further out, a gap being 2×halfSpread+1 bp of the mid (at least
// one quote increment), and holds about depth×(1+0.6·i) of the quote
// currency (±25%, on the asset increment, at least one increment): a
// bigger order gets a worse average price.
func (p *pair) sweep(seed uint64, t time.Time, side string, qty, limit decimal.Decimal) (got, notional decimal.Decimal) {
	bt := p.bookTime(seed, t)
	bid, ask := p.quoteAt(seed, t)
	price, dir, sd := ask, 1.0, uint64(0)
	if side == "sell" {
		price, dir, sd = bid, -1.0, 1
	}
	top := price
	mid := p.midAt(seed, bt)
	sec := uint64(bt.Unix())
	gap := mid * (2*p.halfSpread + 0.0001)
	off := 0.0
	got, notional = decimal.Zero, decimal.Zero
	for i := 0; i < bookLevels && got.LessThan(qty); i++ {
		if i > 0 {
			off += gap * (0.75 + 0.25*unit(seed, p.symHash, 21, sd, uint64(i), sec))
			var next decimal.Decimal
			if dir > 0 {
				next = ceilTo(top.Add(decimal.NewFromFloat(off)), p.quoteInc)
				if !next.GreaterThan(price) {
					next = price.Add(p.quoteInc)
				}
			} else {
				next = floorTo(top.Sub(decimal.NewFromFloat(off)), p.quoteInc)
				if !next.LessThan(price) {
					next = price.Sub(p.quoteInc)
				}
				if !next.IsPositive() {
					break
				}
			}
			price = next
		}
		if limit.IsPositive() && (dir > 0 && price.GreaterThan(limit) || dir < 0 && price.LessThan(limit)) {
			break
		}
		take := qty.Sub(got)
		if i < bookLevels-1 {
			usd := p.depth * (1 + 0.6*float64(i)) * (1 + 0.25*unit(seed, p.symHash, 22, sd, uint64(i), sec))
			size := floorTo(decimal.NewFromFloat(usd/mid), p.assetInc)
			if size.LessThan(p.assetInc) {
				size = p.assetInc
			}
			take = decimal.Min(take, size)
		}
		got = got.Add(take)
		notional = notional.Add(take.Mul(price))
	}
	return got, notional
}

// fillPrice is the price an order on side gets for qty of p at t: the
// average over the book's levels (sweep), on the quote increment, rounded
// against the order (up for a buy, down for a sell). Up to the top level's
// size, and for qty zero, it is the best ask or bid itself.
func (v *engine) fillPrice(p *pair, side string, qty decimal.Decimal, t time.Time) decimal.Decimal {
	if !qty.IsPositive() {
		bid, ask := p.quoteAt(v.seed, t)
		if side == "sell" {
			return bid
		}
		return ask
	}
	got, notional := p.sweep(v.seed, t, side, qty, decimal.Zero)
	return averagePrice(p, side, got, notional)
}

// fillWithin is how much of qty an order on side finds in p's book at t at
// prices no worse than limit, and its average price (as fillPrice rounds
// it, which keeps it within limit: limit is on the quote increment).
func (v *engine) fillWithin(p *pair, side string, qty, limit decimal.Decimal, t time.Time) (got, price decimal.Decimal) {
	got, notional := p.sweep(v.seed, t, side, qty, limit)
	if !got.IsPositive() {
		return decimal.Zero, decimal.Zero
	}
	return got, averagePrice(p, side, got, notional)
}

func averagePrice(p *pair, side string, qty, notional decimal.Decimal) decimal.Decimal {
	avg := notional.DivRound(qty, 24)
	if side == "sell" {
		return floorTo(avg, p.quoteInc)
	}
	return ceilTo(avg, p.quoteInc)
}

// US Eastern time, in which the venue prints order timestamps (the live
// captures show created_at "2026-08-20T13:26:18.409035-04:00").
var (
	easternDaylight = time.FixedZone("EDT", -4*3600)
	easternStandard = time.FixedZone("EST", -5*3600)
)

// eastern is the US Eastern offset in force at t, by the rule in force
// since 2007: daylight time from the second Sunday of March, 02:00 EST,
// to the first Sunday of November, 02:00 EDT. It needs no time zone
// database, so every machine prints the same.
func eastern(t time.Time) *time.Location {
	y := t.UTC().Year()
	start := nthSunday(y, time.March, 2).Add(7 * time.Hour)  // 02:00 EST
	end := nthSunday(y, time.November, 1).Add(6 * time.Hour) // 02:00 EDT
	if !t.Before(start) && t.Before(end) {
		return easternDaylight
	}
	return easternStandard
}

// nthSunday is 00:00 UTC on the nth Sunday of month m of year y.
func nthSunday(y int, m time.Month, n int) time.Time {
	first := time.Date(y, m, 1, 0, 0, 0, 0, time.UTC)
	return first.AddDate(0, 0, (7-int(first.Weekday()))%7+7*(n-1))
}

// tsLayout is the layout of order timestamps: microseconds and an offset.
const tsLayout = "2006-01-02T15:04:05.000000Z07:00"

// orderStamp prints t as the venue prints an order's created_at,
// updated_at and execution timestamps: US Eastern time with its offset
// and microseconds ("2026-08-20T13:26:18.409035-04:00").
func orderStamp(t time.Time) string { return t.In(eastern(t)).Format(tsLayout) }

// marketStamp prints t as the venue prints a best bid/ask or estimated
// price timestamp: UTC, "Z" and nanoseconds ("2026-08-19T19:20:41.579217945Z").
func marketStamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000000Z07:00") }

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// floorTo rounds d down to a multiple of inc.
func floorTo(d, inc decimal.Decimal) decimal.Decimal {
	return d.Div(inc).Floor().Mul(inc)
}

// ceilTo rounds d up to a multiple of inc.
func ceilTo(d, inc decimal.Decimal) decimal.Decimal {
	return d.Div(inc).Ceil().Mul(inc)
}

// isMultiple reports whether d is an exact multiple of inc.
func isMultiple(d, inc decimal.Decimal) bool {
	return d.Mod(inc).IsZero()
}
