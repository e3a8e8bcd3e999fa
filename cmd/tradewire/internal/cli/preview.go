package cli

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tradewire/tradewire/broker"
	"github.com/tradewire/tradewire/transport"
)

type previewJSON struct {
	// Estimate is always true: every figure is an estimate.
	Estimate bool `json:"estimate"`
	// Valid is true when the order breaks no rule.
	Valid  bool   `json:"valid"`
	Symbol string `json:"symbol"`
	Side   string `json:"side"`
	Type   string `json:"type"`
	// The request as given; null when not given.
	AssetQuantity *string `json:"asset_quantity"`
	QuoteAmount   *string `json:"quote_amount"`
	LimitPrice    *string `json:"limit_price"`
	StopPrice     *string `json:"stop_price"`
	// The estimate.
	EstimatedAssetQuantity string          `json:"estimated_asset_quantity"`
	MarketPrice            string          `json:"market_price"`
	Price                  string          `json:"price"`
	Notional               string          `json:"notional"`
	FeeRatio               string          `json:"fee_ratio"`
	Fee                    string          `json:"fee"`
	Total                  string          `json:"total"`
	SuggestedQuantity      *string         `json:"suggested_quantity"`
	Violations             []violationJSON `json:"violations"`
	EstimatedAt            string          `json:"estimated_at"`
}

type violationJSON struct {
	Field  string  `json:"field"`
	Code   string  `json:"code"`
	Limit  *string `json:"limit"`
	Detail string  `json:"detail"`
}

func newPreviewCmd(a *app) *cobra.Command {
	var f orderRequestFlags
	cmd := &cobra.Command{
		Use:   "preview --symbol S --side buy|sell --type T --quantity Q|--quote-amount A [--limit-price P] [--stop-price P]",
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
			format, err := a.outputFormat()
			if err != nil {
				return err
			}
			r, err := f.fields()
			if err != nil {
				return err
			}
			req := broker.OrderRequest{Symbol: r.Symbol, Side: r.Side, Type: r.Type, AssetQuantity: r.AssetQuantity,
				QuoteAmount: r.QuoteAmount, LimitPrice: r.LimitPrice, StopPrice: r.StopPrice}
			c, err := a.brokerClient()
			if err != nil {
				return err
			}
			p, err := c.Preview(cmd.Context(), req)
			if err != nil {
				return err
			}
			if err := previewReport(p).write(a.opts.Stdout, format); err != nil {
				return err
			}
			if !p.OK() {
				return &previewRefusedError{violations: p.Violations}
			}
			return nil
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

func previewReport(p *broker.Preview) *report {
	j := previewJSON{
		Estimate: true, Valid: p.OK(),
		Symbol: p.Request.Symbol, Side: string(p.Request.Side), Type: string(p.Request.Type),
		AssetQuantity: givenOrNull(p.Request.AssetQuantity), QuoteAmount: givenOrNull(p.Request.QuoteAmount),
		LimitPrice: givenOrNull(p.Request.LimitPrice), StopPrice: givenOrNull(p.Request.StopPrice),
		EstimatedAssetQuantity: dec(p.AssetQuantity), MarketPrice: dec(p.MarketPrice), Price: dec(p.Price),
		Notional: dec(p.Notional), FeeRatio: dec(p.FeeRatio), Fee: dec(p.Fee), Total: dec(p.Total),
		SuggestedQuantity: decOrNull(p.SuggestedQuantity), Violations: make([]violationJSON, 0, len(p.Violations)),
		EstimatedAt: stamp(p.EstimatedAt),
	}
	for _, v := range p.Violations {
		j.Violations = append(j.Violations, violationJSON{Field: v.Field, Code: string(v.Code), Limit: givenOrNull(v.Limit), Detail: v.Detail})
	}

	out := &report{json: j}
	out.banner = []string{"ESTIMATE: nothing was placed; prices can move before an order is placed"}
	if j.Valid {
		out.banner = append(out.banner, "VALID: the order breaks no trading-pair rule")
	} else {
		out.banner = append(out.banner, fmt.Sprintf("REFUSED OFFLINE: the order breaks %d %s", len(j.Violations), plural(len(j.Violations), "rule", "rules")))
	}
	total := "total_cost"
	if p.Request.Side == broker.SideSell {
		total = "total_credit"
	}
	suggested := str(j.SuggestedQuantity)
	if suggested == "" {
		suggested = "- (none)"
	}
	out.fields = [][2]string{
		{"symbol", j.Symbol},
		{"side", j.Side},
		{"type", j.Type},
		{"asset_quantity", givenOrEmpty(p.Request.AssetQuantity)},
		{"quote_amount", givenOrEmpty(p.Request.QuoteAmount)},
		{"limit_price", givenOrEmpty(p.Request.LimitPrice)},
		{"stop_price", givenOrEmpty(p.Request.StopPrice)},
		{"estimated_asset_quantity", j.EstimatedAssetQuantity},
		{"market_price", j.MarketPrice},
		{"price", j.Price},
		{"notional", j.Notional},
		{"fee_ratio", j.FeeRatio},
		{"fee", j.Fee},
		{total, j.Total},
		{"suggested_quantity", suggested},
		{"estimated_at", j.EstimatedAt},
	}
	if len(j.Violations) > 0 {
		vt := table{title: "violations", header: []string{"code", "field", "limit", "detail"}}
		for _, v := range j.Violations {
			vt.rows = append(vt.rows, []string{v.Code, v.Field, str(v.Limit), v.Detail})
		}
		out.tables = []table{vt}
	}

	// CSV: one row; the violations joined, and counted.
	var vs []string
	for _, v := range j.Violations {
		vs = append(vs, v.Code+" "+v.Field+": "+v.Detail)
	}
	out.csv.header = []string{"estimate", "valid", "symbol", "side", "type", "asset_quantity", "quote_amount", "limit_price", "stop_price",
		"estimated_asset_quantity", "market_price", "price", "notional", "fee_ratio", "fee", "total", "suggested_quantity",
		"violation_count", "violations", "estimated_at"}
	out.csv.rows = [][]string{{"true", yesNo(j.Valid), j.Symbol, j.Side, j.Type, str(j.AssetQuantity), str(j.QuoteAmount), str(j.LimitPrice),
		str(j.StopPrice), j.EstimatedAssetQuantity, j.MarketPrice, j.Price, j.Notional, j.FeeRatio, j.Fee, j.Total, str(j.SuggestedQuantity),
		strconv.Itoa(len(j.Violations)), strings.Join(vs, "; "), j.EstimatedAt}}
	return out
}
