package cli

import (
	"context"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tradewire/tradewire/broker"
	"github.com/tradewire/tradewire/transport"
)

func newPreviewCmd(a *app) *cobra.Command {
	var f orderRequestFlags
	cmd := &cobra.Command{
		Use:   "preview --symbol S --side buy|sell --type T --quantity Q|--quote-amount A [--limit-price P] [--stop-price P] [--time-in-force gtc|gfd|gfw|gfm]",
		Short: "Estimate an order and list every rule it breaks, without placing it",
		Long: `Estimate what an order would cost (a buy) or fetch (a sell), fees included, and
list every trading-pair rule it breaks: minimum order amount, maximum order
size, increments, prices its type needs or does not take, a pair that is not
tradable. Nothing is placed: the venue has no preview endpoint, so this reads
the trading pair and the venue's estimated price, which can move before an
order is placed. Every output is marked as an estimate (an ESTIMATE banner,
"estimate": true, an estimate column).

A preview never changes the order asked for. When the quantity breaks an
increment or the maximum, it may suggest one (rounded down) that does not.

Exit codes: 0 when the order breaks no rule; 6 ("rejected": refused offline,
with the reasons on stdout and a one-line summary on stderr) when it breaks
at least one; 2 when the request cannot be previewed at all (bad flags).`,
		Example: `  tradewire preview --symbol BTC-USD --side buy --type market --quantity 0.0001
  tradewire preview --symbol BTC-USD --side buy --type limit --quantity 0.001 --limit-price 50000`,
		Args: noArgs,
		RunE: a.run(func(cmd *cobra.Command, _ []string) error {
			var req broker.OrderRequest
			var limits broker.Limits
			return a.read(cmd, readSpec{
				check: func() error {
					r, err := f.fields()
					req = broker.OrderRequest{Symbol: r.Symbol, Side: r.Side, Type: r.Type, AssetQuantity: r.AssetQuantity,
						QuoteAmount: r.QuoteAmount, LimitPrice: r.LimitPrice, StopPrice: r.StopPrice, TimeInForce: r.TimeInForce}
					if err != nil {
						return err
					}
					limits, err = a.limits()
					return err
				},
				fetch: func(ctx context.Context, q *readQuery) (*report, error) {
					c := q.c
					if !reflect.ValueOf(limits).IsZero() {
						// The limits count the intent store's orders, as Place does.
						lc, _, closeStore, err := a.placer(ctx, "", limits)
						if err != nil {
							return nil, err
						}
						defer closeStore()
						c = lc
					}
					p, err := c.Preview(ctx, req)
					if err != nil {
						return nil, err
					}
					// The preview has read the pair: its money needs no other request.
					m := money{pairs: map[string]broker.TradingPair{p.Pair.Symbol: p.Pair}}
					if !p.OK() {
						return previewReport(p, m), &previewRefusedError{violations: p.Violations}
					}
					return previewReport(p, m), nil
				},
			})
		}),
	}
	f.add(cmd)
	return cmd
}

// previewRefusedError is a preview that found violations: the order would
// be refused, and tradewire refused it offline. It matches
// transport.ErrRejected, so the exit code is 6; nothing was sent to place
// anything.
type previewRefusedError struct {
	violations []broker.Violation
}

func (e *previewRefusedError) Error() string {
	codes := make([]string, len(e.violations))
	for i, v := range e.violations {
		codes[i] = string(v.Code) + " (" + v.Field + ")"
	}
	return fmt.Sprintf("preview: the order breaks %d %s and would be refused: %s; nothing was placed",
		len(e.violations), plural(len(e.violations), "rule", "rules"), strings.Join(codes, ", "))
}

// Is matches transport.ErrRejected: exit code 6, refused.
func (e *previewRefusedError) Is(target error) bool { return target == transport.ErrRejected }

// previewReport is the preview for every format: the JSON is broker's
// (previewJSON); the table's estimated money is rounded as
// m says, the request is shown as given.
func previewReport(p *broker.Preview, m money) *report {
	symbol := p.Request.Symbol
	out := &report{json: p}
	out.banner = []string{"ESTIMATE: nothing was placed; prices can move before an order is placed"}
	if p.OK() {
		out.banner = append(out.banner, "VALID: the order breaks no trading-pair rule")
	} else {
		out.banner = append(out.banner, fmt.Sprintf("REFUSED OFFLINE: the order breaks %d %s", len(p.Violations), plural(len(p.Violations), "rule", "rules")))
	}
	total := "total_cost"
	if p.Request.Side == broker.SideSell {
		total = "total_credit"
	}
	suggested := decOrEmpty(p.SuggestedQuantity)
	if suggested == "" {
		suggested = "- (none)"
	}
	out.fields = [][2]string{
		{"symbol", symbol},
		{"side", string(p.Request.Side)},
		{"type", string(p.Request.Type)},
		{"asset_quantity", givenOrEmpty(p.Request.AssetQuantity)},
		{"quote_amount", givenOrEmpty(p.Request.QuoteAmount)},
		{"limit_price", givenOrEmpty(p.Request.LimitPrice)},
		{"stop_price", givenOrEmpty(p.Request.StopPrice)},
		{"estimated_asset_quantity", dec(p.AssetQuantity)},
		{"market_price", m.cell(symbol, p.MarketPrice)},
		{"price", m.cell(symbol, p.Price)},
		{"notional", m.cell(symbol, p.Notional)},
		{"fee_ratio", dec(p.FeeRatio)},
		{"fee", m.cell(symbol, p.Fee)},
		{total, m.cell(symbol, p.Total)},
		{"suggested_quantity", suggested},
		{"estimated_at", stamp(p.EstimatedAt)},
	}
	if len(p.Violations) > 0 {
		vt := table{title: "violations", header: []string{"code", "field", "limit", "detail"}}
		for _, v := range p.Violations {
			vt.rows = append(vt.rows, []string{string(v.Code), v.Field, givenOrEmpty(v.Limit), v.Detail})
		}
		out.tables = []table{vt}
	}

	// CSV: one row; the violations joined, and counted.
	vs := make([]string, len(p.Violations))
	for i, v := range p.Violations {
		vs[i] = string(v.Code) + " " + v.Field + ": " + v.Detail
	}
	out.csv.header = []string{"estimate", "valid", "symbol", "side", "type", "asset_quantity", "quote_amount", "limit_price", "stop_price",
		"estimated_asset_quantity", "market_price", "price", "notional", "fee_ratio", "fee", "total", "suggested_quantity",
		"violation_count", "violations", "estimated_at"}
	out.csv.rows = [][]string{{"true", yesNo(p.OK()), symbol, string(p.Request.Side), string(p.Request.Type),
		givenOrEmpty(p.Request.AssetQuantity), givenOrEmpty(p.Request.QuoteAmount), givenOrEmpty(p.Request.LimitPrice),
		givenOrEmpty(p.Request.StopPrice), dec(p.AssetQuantity), dec(p.MarketPrice), dec(p.Price), dec(p.Notional),
		dec(p.FeeRatio), dec(p.Fee), dec(p.Total), decOrEmpty(p.SuggestedQuantity),
		strconv.Itoa(len(p.Violations)), strings.Join(vs, "; "), stamp(p.EstimatedAt)}}
	return out
}
