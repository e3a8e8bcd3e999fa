package brokertest

import (
	"hash/fnv"
	"math"
	"time"

	"github.com/shopspring/decimal"
)

// pair is one tradable market and the parameters of its simulated price.
type pair struct {
	symbol, asset, quote string
	assetInc, quoteInc   decimal.Decimal
	maxSize, minAmount   decimal.Decimal
	// The strings the venue prints for the increments and limits.
	assetIncStr, quoteIncStr, maxSizeStr, minAmountStr string
	base                                               float64 // price level the walk moves around
	halfSpread                                         float64 // fraction of mid, before noise
	symHash                                            uint64
}

func newPair(symbol, asset, assetInc, quoteInc, maxSize, minAmount string, base, halfSpread float64) *pair {
	h := fnv.New64a()
	h.Write([]byte(symbol))
	return &pair{
		symbol: symbol, asset: asset, quote: "USD",
		assetInc: decimal.RequireFromString(assetInc), quoteInc: decimal.RequireFromString(quoteInc),
		maxSize: decimal.RequireFromString(maxSize), minAmount: decimal.RequireFromString(minAmount),
		assetIncStr: assetInc, quoteIncStr: quoteInc, maxSizeStr: maxSize, minAmountStr: minAmount,
		base: base, halfSpread: halfSpread, symHash: h.Sum64(),
	}
}

// defaultPairs are the markets every venue lists, in symbol order.
func defaultPairs() []*pair {
	return []*pair{
		newPair("BTC-USD", "BTC", "0.00000001", "0.01", "20.0000000000000000", "0.1", 65000, 0.00004),
		newPair("DOGE-USD", "DOGE", "0.01", "0.000001", "2000000.0000000000000000", "0.1", 0.15, 0.0002),
		newPair("ETH-USD", "ETH", "0.000001", "0.01", "400.0000000000000000", "0.1", 3200, 0.00006),
		newPair("SOL-USD", "SOL", "0.000001", "0.01", "10000.0000000000000000", "0.1", 150, 0.0001),
	}
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

// midAt is the simulated mid price of p at t: a pure function of (seed,
// symbol, whole second), made of smoothly interpolated hashed value noise at
// several time scales plus per-second jitter. Cheap to evaluate at any time.
func (p *pair) midAt(seed uint64, t time.Time) float64 {
	sec := t.Unix()
	var logp float64
	for i, l := range noiseLayers {
		k := floorDiv(sec, l.period)
		frac := float64(sec-k*l.period) / float64(l.period)
		frac = frac * frac * (3 - 2*frac) // smoothstep
		a := unit(seed, p.symHash, uint64(i), uint64(k))
		b := unit(seed, p.symHash, uint64(i), uint64(k+1))
		logp += l.amp * (a + (b-a)*frac)
	}
	logp += 0.0003 * unit(seed, p.symHash, 99, uint64(sec))
	return p.base * math.Exp(logp)
}

// quoteAt returns the best bid and ask of p at t, on the quote increment,
// with bid < ask.
func (p *pair) quoteAt(seed uint64, t time.Time) (bid, ask decimal.Decimal) {
	mid := p.midAt(seed, t)
	hs := p.halfSpread * (1.25 + 0.75*unit(seed, p.symHash, 7, uint64(t.Unix())))
	bid = floorTo(decimal.NewFromFloat(mid*(1-hs)), p.quoteInc)
	ask = ceilTo(decimal.NewFromFloat(mid*(1+hs)), p.quoteInc)
	if !ask.GreaterThan(bid) {
		ask = bid.Add(p.quoteInc)
	}
	if !bid.IsPositive() {
		bid = p.quoteInc
		ask = bid.Add(p.quoteInc)
	}
	return bid, ask
}

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
