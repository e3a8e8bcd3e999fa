package cli

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/shopspring/decimal"
	"github.com/spf13/cobra"

	"github.com/tradewire/tradewire/broker"
)

func newFeesCmd(a *app) *cobra.Command {
	var (
		window       string
		maxPages     int
		allowPartial bool
	)
	cmd := &cobra.Command{
		Use:   "fees [--window 30d] [--max-pages N] [--allow-partial]",
		Short: "Sum the fees paid on orders updated within a window",
		Long: `Sum the fees the account paid on orders updated within --window before now
(a Go duration, or days: 30d, 7d12h), with the account's fee tier, the filled
notional, the effective fee rate and a breakdown per symbol.

The venue has no "fees paid" total, so this is built as 1 + N requests: one
accounts read (fee ratio, 30-day volume), then every page of orders with
updated_at_start = now - window and no state filter (a partly filled, then
canceled order still paid). Every request waits on the rate budget; on a
terminal a progress bar on stderr shows pages, orders and waits. The table
rounds money to each pair's quote increment, which costs one trading pairs
read more; JSON and CSV print every digit and read nothing more.

Past --max-pages the summary fails (exit 1) rather than under-report. With
--allow-partial it prints what it read, marked PARTIAL in every format (a
banner in the table, "partial": true in JSON, a partial column in CSV).`,
		Example: `  tradewire fees
  tradewire fees --window 7d -o json | jq -r .total_fees
  tradewire fees --window 90d --max-pages 100 --allow-partial -o csv`,
		Args: noArgs,
		RunE: a.run(func(cmd *cobra.Command, _ []string) error {
			var w time.Duration
			return a.read(cmd, readSpec{
				check: func() error {
					var err error
					if w, err = parseWindow(window); err != nil {
						return usagef("--window %q: %v", window, err)
					}
					return checkMaxPages(maxPages)
				},
				sweep: "fees",
				fetch: func(ctx context.Context, q *readQuery) (*report, error) {
					opts := append(q.pages, broker.Paging{MaxPages: maxPages})
					if allowPartial {
						opts = append(opts, broker.Paging{AllowPartial: true})
					}
					r, err := q.c.FeeSummary(ctx, w, opts...)
					if err != nil {
						var pc *broker.PageCapError
						if errors.As(err, &pc) {
							return nil, &pageCapError{
								msg: fmt.Sprintf("fees: more than %d pages of orders in the window; stopped rather than under-report: use --allow-partial or --max-pages", pc.Pages),
								err: pc,
							}
						}
						return nil, err
					}
					symbols := make([]string, len(r.BySymbol))
					for i, s := range r.BySymbol {
						symbols[i] = s.Symbol
					}
					return feesReport(r, q.money(ctx, symbols...)), nil
				},
			})
		}),
	}
	fs := cmd.Flags()
	fs.StringVar(&window, "window", "30d", "how far back to sum: a Go duration or days (30d, 7d12h, 36h)")
	fs.IntVar(&maxPages, "max-pages", defaultMaxPages, "fail (or, with --allow-partial, stop) after this many pages of orders")
	fs.BoolVar(&allowPartial, "allow-partial", false, "past --max-pages, print the totals read so far, marked PARTIAL, instead of failing")
	return cmd
}

// feeRatePlaces is the precision of a per-symbol effective fee rate, the
// same as broker's FeeReport.EffectiveFeeRate (and SymbolFees' JSON).
const feeRatePlaces = 12

// effectiveRate is fees / notional, or "" when nothing filled.
func effectiveRate(fees, notional decimal.Decimal) string {
	if !notional.IsPositive() {
		return ""
	}
	return dec(fees.DivRound(notional, feeRatePlaces))
}

// feesReport is the fee summary for every format: the JSON is broker's
// (feeReportJSON); the table's money is rounded as m says.
func feesReport(r *broker.FeeReport, m money) *report {
	window := stamp(r.Start) + " to " + stamp(r.End)
	symbols := make([]string, len(r.BySymbol))
	for i, s := range r.BySymbol {
		symbols[i] = s.Symbol
	}
	rate := ""
	if r.EffectiveFeeRateDefined {
		rate = dec(r.EffectiveFeeRate)
	}
	requests := fmt.Sprintf("%d (1 accounts read + %d %s of orders with the catch-up read)", 1+r.Pages, r.Pages, plural(r.Pages, "page", "pages"))
	if m.pairs != nil {
		// The table's rounding read the trading pairs: say so, so that the
		// count is what was sent.
		requests = fmt.Sprintf("%d (1 accounts read + %d %s of orders with the catch-up read + 1 trading pairs read for the rounding)", 2+r.Pages, r.Pages, plural(r.Pages, "page", "pages"))
	}
	out := &report{json: r}
	if r.Partial {
		out.banner = []string{fmt.Sprintf("PARTIAL: stopped at the page cap after %d pages; the totals below are too low", r.Pages)}
	}
	tableRate := rate
	if tableRate == "" {
		tableRate = "- (nothing filled)"
	}
	out.fields = [][2]string{
		{"window", window},
		{"fee_ratio", dec(r.FeeRatio)},
		{"thirty_day_volume", m.totalCell(r.ThirtyDayVolume, symbols...)},
		{"total_fees", m.totalCell(r.TotalFees, symbols...)},
		{"orders", strconv.Itoa(r.Orders)},
		{"filled_notional", m.totalCell(r.FilledNotional, symbols...)},
		{"effective_fee_rate", tableRate},
		{"requests", requests},
		{"partial", yesNo(r.Partial)},
	}
	bySymbol := table{title: "by symbol", header: []string{"symbol", "orders", "total_fees", "filled_notional", "effective_fee_rate"}}
	for _, s := range r.BySymbol {
		bySymbol.rows = append(bySymbol.rows, []string{s.Symbol, strconv.Itoa(s.Orders), m.cell(s.Symbol, s.TotalFees),
			m.cell(s.Symbol, s.FilledNotional), effectiveRate(s.TotalFees, s.FilledNotional)})
	}
	out.tables = []table{bySymbol}

	// CSV: a total row, then one row per symbol; every row says whether the
	// report is partial, and carries the window and the fee tier.
	out.csv.header = []string{"scope", "symbol", "orders", "total_fees", "filled_notional", "effective_fee_rate",
		"fee_ratio", "thirty_day_volume", "window_start", "window_end", "pages", "partial"}
	row := func(scope, symbol string, orders int, fees, notional decimal.Decimal, rate string) []string {
		return []string{scope, symbol, strconv.Itoa(orders), dec(fees), dec(notional), rate,
			dec(r.FeeRatio), dec(r.ThirtyDayVolume), stamp(r.Start), stamp(r.End), strconv.Itoa(r.Pages), yesNo(r.Partial)}
	}
	out.csv.rows = append(out.csv.rows, row("total", "", r.Orders, r.TotalFees, r.FilledNotional, rate))
	for _, s := range r.BySymbol {
		out.csv.rows = append(out.csv.rows, row("symbol", s.Symbol, s.Orders, s.TotalFees, s.FilledNotional, effectiveRate(s.TotalFees, s.FilledNotional)))
	}
	return out
}
