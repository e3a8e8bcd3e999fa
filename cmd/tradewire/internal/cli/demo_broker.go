package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/tradewire/tradewire/broker"
)

// The demo's chapters on package broker: a fee summary and previews,
// through the same transport (and so the same token bucket) as the
// chapters before them.

const demoFeeWindow = 30 * 24 * time.Hour

// brokerClient returns a broker client on the demo's transport and clock.
func (d *demoRun) brokerClient() (*broker.Client, error) {
	b, err := broker.NewFromTransport(d.client, broker.WithClock(d.clock))
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	return b, nil
}

// ---- Chapter 5 ----

func demoFeeSummary(ctx context.Context, d *demoRun) error {
	b, err := d.brokerClient()
	if err != nil {
		return err
	}
	d.w.say("The venue has no \"fees paid\" total. FeeSummary builds one honestly with 1 + N requests: one fresh " +
		"accounts read for the fee tier (fee_ratio, thirty_day_volume), then every page of orders with " +
		"updated_at_start = now - 30 days and no state filter. It filters on updated_at, not created_at: a GTC order " +
		"placed long ago and filled today paid its fee today. And no state filter: a partly filled, then canceled order " +
		"still paid. Each page is summed and dropped before the next is read, so memory stays flat however long the sweep.")
	l := d.venue.Ledger()
	start := len(l.Requests())
	before := d.clock.Now()
	pages := 0
	r, err := b.FeeSummary(ctx, demoFeeWindow, broker.OnProgress(func(p broker.Progress) { pages = p.Pages }))
	if err != nil {
		return err
	}
	took := d.clock.Since(before)
	reqs := l.Requests()[start:]

	d.w.detail("window: %s to %s", stamp(r.Start), stamp(r.End))
	d.w.detail("fee tier: fee ratio %s, 30-day volume %s", r.FeeRatio, r.ThirtyDayVolume)
	rate := "undefined (nothing filled)"
	if r.EffectiveFeeRateDefined {
		rate = r.EffectiveFeeRate.String()
	}
	d.w.detail("total fees %s on %d orders; filled notional %s; effective fee rate %s", r.TotalFees, r.Orders, r.FilledNotional, rate)
	for _, s := range r.BySymbol {
		d.w.detail("  %-8s %2d orders, fees %s on notional %s", s.Symbol, s.Orders, s.TotalFees, s.FilledNotional)
	}
	statuses := map[int]int{}
	for _, q := range reqs {
		statuses[q.Status]++
		path, query, _ := strings.Cut(q.Target, "?")
		if path == pathOrders {
			if v, err := url.ParseQuery(query); err == nil && v.Get("state") == "" {
				d.w.detail("GET %s?...updated_at_start=%s (no state filter) -> %d", pathOrders, v.Get("updated_at_start"), q.Status)
				continue
			}
		}
		d.w.detail("GET %s -> %d", path, q.Status)
	}
	d.w.detail("requests: %d = 1 accounts read + %d %s of orders (progress reported %d); answered %s; 429 answers: %d",
		len(reqs), r.Pages, plural(r.Pages, "page", "pages"), pages, byStatus(statuses), statuses[http.StatusTooManyRequests])
	d.w.say(fmt.Sprintf("Here N is %d: the %d orders updated in the window, chapter 4's resting order among them, "+
		"fit on %s of up to 100. Every request drew a token from the same bucket as the chapters before (%d a minute, "+
		"bursts of %d) and waited %v of simulated time for it; the venue's ledger shows no 429. Past the page cap "+
		"(20 pages by default) FeeSummary fails rather than under-report, unless the caller passes AllowPartial, "+
		"which marks the report Partial.",
		r.Pages, r.Orders, plural(r.Pages, "one page", fmt.Sprintf("%d pages", r.Pages)), demoRatePerMinute, demoBurst, took))
	return nil
}

// ---- Chapter 6 ----

func demoPreview(ctx context.Context, d *demoRun) error {
	b, err := d.brokerClient()
	if err != nil {
		return err
	}
	d.w.say("The venue has no preview endpoint. Preview reads the trading pair (cached per symbol) and the venue's " +
		"estimated price, then checks the order against every rule of the pair. Nothing is placed, and every figure " +
		"is an estimate: the price can move before an order is placed.")
	l := d.venue.Ledger()
	start := len(l.Requests())

	ask := func(side broker.Side, qty string) (broker.OrderRequest, *broker.Preview, error) {
		req := broker.OrderRequest{Symbol: demoSymbol, Side: side, Type: broker.TypeMarket, AssetQuantity: decimal.RequireFromString(qty)}
		p, err := b.Preview(ctx, req)
		return req, p, err
	}

	req, p, err := ask(broker.SideBuy, "0.0001")
	if err != nil {
		return err
	}
	d.w.detail("market buy %s %s: ESTIMATE price %s, notional %s, fee %s (ratio %s), total cost %s; violations: %d",
		req.AssetQuantity, demoSymbol, p.Price, p.Notional, p.Fee, p.FeeRatio, p.Total, len(p.Violations))
	d.w.detail("pair rules: asset increment %s, min order amount %s %s, max order size %s",
		p.Pair.AssetIncrement, decOrEmpty(p.Pair.MinOrderAmount), p.Pair.QuoteCode, p.Pair.MaxOrderSize)

	req, p, err = ask(broker.SideBuy, "0.000000015")
	if err != nil {
		return err
	}
	d.w.detail("market buy %s %s: ESTIMATE notional %s; violations: %d", req.AssetQuantity, demoSymbol, p.Notional, len(p.Violations))
	for _, v := range p.Violations {
		d.w.detail("  %s on %s: %s", v.Code, v.Field, v.Detail)
	}
	d.w.detail("suggested quantity: %s", suggestion(p))
	if !p.Request.AssetQuantity.Equal(req.AssetQuantity) {
		return errors.New("the preview changed the request")
	}
	d.w.detail("the request afterwards: asset_quantity %s, as asked", p.Request.AssetQuantity)

	req, p, err = ask(broker.SideSell, "0.000123456789")
	if err != nil {
		return err
	}
	d.w.detail("market sell %s %s: ESTIMATE total credit %s; violations: %d", req.AssetQuantity, demoSymbol, p.Total, len(p.Violations))
	for _, v := range p.Violations {
		d.w.detail("  %s on %s: %s", v.Code, v.Field, v.Detail)
	}
	d.w.detail("suggested quantity: %s", suggestion(p))

	reqs := l.Requests()[start:]
	paths := map[string]int{}
	created := 0
	for _, q := range reqs {
		path, _, _ := strings.Cut(q.Target, "?")
		paths[path]++
		if q.Created != "" {
			created++
		}
	}
	d.w.detail("requests: %d (trading pair %d, estimated price %d); orders created: %d",
		len(reqs), paths["/api/v2/crypto/trading/trading_pairs/"], paths["/api/v2/crypto/trading/estimated_price/"], created)
	d.w.say("A preview never changes what the caller asked: it reports every violation at once, and may suggest a " +
		"quantity (rounded down to the increment and the maximum) that would pass. It offers none when rounding down " +
		"cannot reach the minimum order amount. The CLI's preview exits 0 when the order is valid and 6 when it breaks " +
		"a rule: refused offline, with the reasons on stdout.")
	return nil
}

func suggestion(p *broker.Preview) string {
	if !p.SuggestedQuantity.Valid {
		return "none (rounding down cannot lift the order above the minimum)"
	}
	return p.SuggestedQuantity.Decimal.String() + " (rounded down to the increment)"
}
