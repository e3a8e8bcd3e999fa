package cli

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/shopspring/decimal"
	"github.com/spf13/cobra"

	"github.com/tradewire/tradewire/broker"
)

// feeRatePlaces is the precision of a per-symbol effective fee rate, the
// same as broker's FeeReport.EffectiveFeeRate.
const feeRatePlaces = 12

type feesJSON struct {
	// Partial is true when the sweep stopped at --max-pages and
	// --allow-partial accepted it: the totals are then too low.
	Partial          bool             `json:"partial"`
	WindowStart      string           `json:"window_start"`
	WindowEnd        string           `json:"window_end"`
	FeeRatio         string           `json:"fee_ratio"`
	ThirtyDayVolume  string           `json:"thirty_day_volume"`
	TotalFees        string           `json:"total_fees"`
	Orders           int              `json:"orders"`
	FilledNotional   string           `json:"filled_notional"`
	EffectiveFeeRate *string          `json:"effective_fee_rate"`
	Pages            int              `json:"pages"`
	Requests         int              `json:"requests"`
	BySymbol         []symbolFeesJSON `json:"by_symbol"`
}

type symbolFeesJSON struct {
	Symbol           string  `json:"symbol"`
	Orders           int     `json:"orders"`
	TotalFees        string  `json:"total_fees"`
	FilledNotional   string  `json:"filled_notional"`
	EffectiveFeeRate *string `json:"effective_fee_rate"`
}

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
terminal a progress bar on stderr shows pages, orders and waits.

Past --max-pages the summary fails (exit 1) rather than under-report. With
--allow-partial it prints what it read, marked PARTIAL in every format (a
banner in the table, "partial": true in JSON, a partial column in CSV).`,
		Example: `  tradewire fees
  tradewire fees --window 7d -o json | jq -r .total_fees
  tradewire fees --window 90d --max-pages 100 --allow-partial -o csv`,
		Args: noArgs,
		RunE: a.run(func(cmd *cobra.Command, _ []string) error {
			format, err := a.outputFormat()
			if err != nil {
				return err
			}
			w, err := parseWindow(window)
			if err != nil {
				return usagef("--window %q: %v", window, err)
			}
			if err := checkMaxPages(maxPages); err != nil {
				return err
			}
			rate, burst, err := a.rateLimit()
			if err != nil {
				return err
			}
			progress := a.newSweepProgress("fees", "orders")
			defer progress.done()
			c, err := a.brokerClient(progress.transportOptions(rate, burst)...)
			if err != nil {
				return err
			}
			opts := []broker.CallOption{broker.MaxPages(maxPages), progress.callOption()}
			if allowPartial {
				opts = append(opts, broker.AllowPartial())
			}
			r, err := c.FeeSummary(cmd.Context(), w, opts...)
			progress.done()
			if err != nil {
				var pc *broker.PageCapError
				if errors.As(err, &pc) {
					return &pageCapError{
						msg: fmt.Sprintf("fees: more than %d pages of orders in the window; stopped rather than under-report: use --allow-partial or --max-pages", pc.Pages),
						err: pc,
					}
				}
				return err
			}
			return feesReport(r).write(a.opts.Stdout, format)
		}),
	}
	fs := cmd.Flags()
	fs.StringVar(&window, "window", "30d", "how far back to sum: a Go duration or days (30d, 7d12h, 36h)")
	fs.IntVar(&maxPages, "max-pages", broker.DefaultPageCap, "fail (or, with --allow-partial, stop) after this many pages of orders")
	fs.BoolVar(&allowPartial, "allow-partial", false, "past --max-pages, print the totals read so far, marked PARTIAL, instead of failing")
	return cmd
}

// effectiveRate is fees / notional, or nil when nothing filled.
func effectiveRate(fees, notional decimal.Decimal) *string {
	if !notional.IsPositive() {
		return nil
	}
	s := dec(fees.DivRound(notional, feeRatePlaces))
	return &s
}

func feesReport(r *broker.FeeReport) *report {
	j := feesJSON{
		Partial: r.Partial, WindowStart: stamp(r.Start), WindowEnd: stamp(r.End),
		FeeRatio: dec(r.FeeRatio), ThirtyDayVolume: dec(r.ThirtyDayVolume),
		TotalFees: dec(r.TotalFees), Orders: r.Orders, FilledNotional: dec(r.FilledNotional),
		Pages: r.Pages, Requests: 1 + r.Pages, BySymbol: make([]symbolFeesJSON, 0, len(r.BySymbol)),
	}
	if r.EffectiveFeeRateDefined {
		s := dec(r.EffectiveFeeRate)
		j.EffectiveFeeRate = &s
	}
	for _, s := range r.BySymbol {
		j.BySymbol = append(j.BySymbol, symbolFeesJSON{
			Symbol: s.Symbol, Orders: s.Orders, TotalFees: dec(s.TotalFees), FilledNotional: dec(s.FilledNotional),
			EffectiveFeeRate: effectiveRate(s.TotalFees, s.FilledNotional),
		})
	}

	out := &report{json: j}
	if r.Partial {
		out.banner = []string{fmt.Sprintf("PARTIAL: stopped at the page cap after %d pages; the totals below are too low", r.Pages)}
	}
	rate := str(j.EffectiveFeeRate)
	if rate == "" {
		rate = "- (nothing filled)"
	}
	out.fields = [][2]string{
		{"window", j.WindowStart + " to " + j.WindowEnd},
		{"fee_ratio", j.FeeRatio},
		{"thirty_day_volume", j.ThirtyDayVolume},
		{"total_fees", j.TotalFees},
		{"orders", strconv.Itoa(j.Orders)},
		{"filled_notional", j.FilledNotional},
		{"effective_fee_rate", rate},
		{"requests", fmt.Sprintf("%d (1 accounts read + %d %s of orders)", j.Requests, j.Pages, plural(j.Pages, "page", "pages"))},
		{"partial", yesNo(j.Partial)},
	}
	bySymbol := table{title: "by symbol", header: []string{"symbol", "orders", "total_fees", "filled_notional", "effective_fee_rate"}}
	for _, s := range j.BySymbol {
		bySymbol.rows = append(bySymbol.rows, []string{s.Symbol, strconv.Itoa(s.Orders), s.TotalFees, s.FilledNotional, str(s.EffectiveFeeRate)})
	}
	out.tables = []table{bySymbol}

	// CSV: a total row, then one row per symbol; every row says whether the
	// report is partial, and carries the window and the fee tier.
	out.csv.header = []string{"scope", "symbol", "orders", "total_fees", "filled_notional", "effective_fee_rate",
		"fee_ratio", "thirty_day_volume", "window_start", "window_end", "pages", "partial"}
	row := func(scope, symbol string, orders int, fees, notional string, rate *string) []string {
		return []string{scope, symbol, strconv.Itoa(orders), fees, notional, str(rate),
			j.FeeRatio, j.ThirtyDayVolume, j.WindowStart, j.WindowEnd, strconv.Itoa(j.Pages), yesNo(j.Partial)}
	}
	out.csv.rows = append(out.csv.rows, row("total", "", j.Orders, j.TotalFees, j.FilledNotional, j.EffectiveFeeRate))
	for _, s := range j.BySymbol {
		out.csv.rows = append(out.csv.rows, row("symbol", s.Symbol, s.Orders, s.TotalFees, s.FilledNotional, s.EffectiveFeeRate))
	}
	return out
}
