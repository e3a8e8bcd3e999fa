package cli

import (
	"context"
	"strings"

	"github.com/shopspring/decimal"
	"github.com/spf13/cobra"

	"github.com/tradewire/tradewire/broker"
)

// The market commands: pairs, quote and estimate. Their JSON is broker's
// (tradingPairJSON, quoteJSON, priceEstimateJSON).

func newPairsCmd(a *app) *cobra.Command {
	var maxPages int
	cmd := &cobra.Command{
		Use:   "pairs [SYMBOL...]",
		Short: "List trading pairs and their rules (increments, minimum and maximum order size)",
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			return a.read(cmd, readSpec{
				check: func() error { return checkMaxPages(maxPages) },
				fetch: func(ctx context.Context, q *readQuery) (*report, error) {
					pairs, err := broker.Collect(q.c.TradingPairs(ctx, upper(args), broker.Paging{MaxPages: maxPages}))
					if err != nil {
						return nil, listError("pairs", err)
					}
					// The rules are printed exactly in every format.
					t := table{header: []string{"symbol", "asset_code", "quote_code", "asset_increment", "quote_increment",
						"min_order_amount", "max_order_size", "status", "is_api_tradable"}}
					for _, p := range pairs {
						t.rows = append(t.rows, []string{p.Symbol, p.AssetCode, p.QuoteCode, dec(p.AssetIncrement), dec(p.QuoteIncrement),
							decOrEmpty(p.MinOrderAmount), dec(p.MaxOrderSize), p.Status, yesNo(p.IsAPITradable)})
					}
					return listReport(nonNil(pairs), t), nil
				},
			})
		}),
	}
	cmd.Flags().IntVar(&maxPages, "max-pages", defaultMaxPages, "fail rather than read more than this many pages")
	return cmd
}

func newQuoteCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "quote SYMBOL...",
		Short: "Show the best bid and ask, exactly as the venue sends them",
		Long: `Show the best bid and ask for each SYMBOL (such as BTC-USD), exactly as the
venue sends them in JSON and CSV, and rounded to the pair's quote increment
in the table. The venue has been seen to send a crossed book (bid above
ask); it is shown as sent, with crossed=true, never corrected.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("quote: want at least one SYMBOL, such as BTC-USD")
			}
			return nil
		},
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			return a.read(cmd, readSpec{fetch: func(ctx context.Context, q *readQuery) (*report, error) {
				symbols := upper(args)
				qs, err := q.c.BestBidAsk(ctx, symbols...)
				if err != nil {
					return nil, err
				}
				m := q.money(ctx, symbols...)
				header := []string{"symbol", "bid", "ask", "crossed", "timestamp"}
				tt, ct := table{header: header}, table{header: header}
				for _, x := range qs {
					tt.rows = append(tt.rows, []string{x.Symbol, m.cell(x.Symbol, x.Bid), m.cell(x.Symbol, x.Ask), yesNo(x.Crossed()), stamp(x.Timestamp)})
					ct.rows = append(ct.rows, []string{x.Symbol, dec(x.Bid), dec(x.Ask), yesNo(x.Crossed()), stamp(x.Timestamp)})
				}
				return &report{json: nonNil(qs), tables: []table{tt}, csv: ct}, nil
			}})
		}),
	}
}

func newEstimateCmd(a *app) *cobra.Command {
	var side, quantities string
	cmd := &cobra.Command{
		Use:   "estimate SYMBOL --side bid|ask|both --quantity Q[,Q...]",
		Short: "Ask the venue what quantities of SYMBOL would cost (ask) or fetch (bid), fees included",
		Long: `Ask the venue's estimated price for up to 10 asset quantities of SYMBOL: what a
buy would cost (--side ask), what a sell would fetch (--side bid), or both.
Each row carries the venue's fee ratio, estimated fee and, for asks, the
estimated total cost. Every figure is the venue's estimate at that moment.`,
		Example: `  tradewire estimate BTC-USD --side ask --quantity 0.001,0.01,0.1`,
		Args:    oneArg("estimate", "SYMBOL, such as BTC-USD,"),
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			var ps broker.PriceSide
			var qs []decimal.Decimal
			return a.read(cmd, readSpec{
				check: func() error {
					ps = broker.PriceSide(strings.ToLower(strings.TrimSpace(side)))
					switch ps {
					case broker.PriceBid, broker.PriceAsk, broker.PriceBoth:
					default:
						return usagef("--side %q: want bid (what a sell fetches), ask (what a buy costs) or both", side)
					}
					var err error
					qs, err = parseQuantities(quantities)
					return err
				},
				fetch: func(ctx context.Context, q *readQuery) (*report, error) {
					symbol := strings.ToUpper(args[0])
					rows, err := q.c.EstimatedPrice(ctx, symbol, ps, qs...)
					if err != nil {
						return nil, err
					}
					m := q.money(ctx, symbol)
					header := []string{"symbol", "side", "quantity", "price", "fee_ratio", "est_fee", "est_total_cost", "timestamp"}
					tt, ct := table{header: header}, table{header: header}
					for _, e := range rows {
						tt.rows = append(tt.rows, estimateRow(e, m))
						ct.rows = append(ct.rows, estimateRow(e, money{}))
					}
					return &report{json: nonNil(rows), tables: []table{tt}, csv: ct}, nil
				},
			})
		}),
	}
	cmd.Flags().StringVar(&side, "side", string(broker.PriceBoth), "bid (what a sell fetches), ask (what a buy costs) or both")
	cmd.Flags().StringVar(&quantities, "quantity", "", "asset quantities, comma-separated (at most 10), such as 0.001,0.01")
	_ = cmd.MarkFlagRequired("quantity")
	return cmd
}

// estimateRow is one estimate's cells, its money rounded as m says.
func estimateRow(e broker.PriceEstimate, m money) []string {
	price, ok := e.Price()
	return []string{e.Symbol, string(e.Side), dec(e.Quantity), m.nullCell(e.Symbol, decimal.NullDecimal{Decimal: price, Valid: ok}),
		dec(e.FeeRatio), m.cell(e.Symbol, e.EstFee), m.nullCell(e.Symbol, e.EstTotalCost), stamp(e.Timestamp)}
}

// parseQuantities parses --quantity's comma list of decimals. Their
// number and sign are checked by broker, before anything is sent.
func parseQuantities(s string) ([]decimal.Decimal, error) {
	var out []decimal.Decimal
	for _, f := range strings.Split(s, ",") {
		d, err := parseDecimal("--quantity", f)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}
