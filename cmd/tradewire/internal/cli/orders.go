package cli

import (
	"context"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tradewire/tradewire/broker"
)

// The orders listing. An order's JSON is broker.Order's own; its CSV row
// (orderCSVRow) is shared with order get and order place (orderReport).

// ---- orders ----

// orderCSVHeader is every column of an order in CSV: the fields of its
// JSON (orderJSON), with the executions counted.
var orderCSVHeader = []string{"id", "client_order_id", "symbol", "side", "type", "state", "asset_quantity", "quote_amount",
	"limit_price", "stop_price", "time_in_force", "filled_asset_quantity", "average_price", "filled_notional", "fee_charged",
	"estimated_fee_remaining", "created_at", "updated_at", "account_number", "executions"}

func orderCSVRow(o *broker.Order) []string {
	var qty, quote, limit, stop, tif string
	if cfg := o.Config(); cfg != nil {
		qty, quote, limit, stop, tif = decOrEmpty(cfg.AssetQuantity), decOrEmpty(cfg.QuoteAmount), decOrEmpty(cfg.LimitPrice), decOrEmpty(cfg.StopPrice), cfg.TimeInForce
	}
	return []string{o.ID, o.ClientOrderID, o.Symbol, string(o.Side), string(o.Type), string(o.State), qty, quote,
		limit, stop, tif, dec(o.FilledAssetQuantity), decOrEmpty(o.AveragePrice), dec(o.FilledNotional()), dec(o.FeeCharged),
		dec(o.EstimatedFeeRemaining), stamp(o.CreatedAt), stamp(o.UpdatedAt), o.AccountNumber, strconv.Itoa(len(o.Executions))}
}

// orderTableHeader is the narrower table a terminal shows.
var orderTableHeader = []string{"created_at", "id", "symbol", "side", "type", "state", "size", "limit_price", "filled_asset_quantity", "average_price", "fee_charged"}

// orderTableRow is o's row of the table, its money (a quote amount, the
// limit and average prices, the fee) rounded as m says.
func orderTableRow(o *broker.Order, m money) []string {
	var size, limit string
	if cfg := o.Config(); cfg != nil {
		size = decOrEmpty(cfg.AssetQuantity)
		if cfg.QuoteAmount.Valid {
			size = m.nullCell(o.Symbol, cfg.QuoteAmount) + " (quote)"
		}
		limit = m.nullCell(o.Symbol, cfg.LimitPrice)
	}
	return []string{stamp(o.CreatedAt), o.ID, o.Symbol, string(o.Side), string(o.Type), string(o.State), size, limit, dec(o.FilledAssetQuantity),
		m.nullCell(o.Symbol, o.AveragePrice), m.cell(o.Symbol, o.FeeCharged)}
}

// orderSymbols lists the symbols of orders, once each.
func orderSymbols(orders []broker.Order) []string {
	seen := map[string]bool{}
	var out []string
	for _, o := range orders {
		if !seen[o.Symbol] {
			seen[o.Symbol] = true
			out = append(out, o.Symbol)
		}
	}
	return out
}

func newOrdersCmd(a *app) *cobra.Command {
	var f struct {
		symbol, side, state, typ, since string
		maxPages                        int
	}
	cmd := &cobra.Command{
		Use:   "orders [--symbol S] [--side buy|sell] [--state S] [--type T] [--since DURATION|TIME]",
		Short: "List the account's orders, newest first",
		Long: `List the account's orders, newest first, optionally only one symbol, side,
state or type, or only those created since a time: --since takes a duration
back from now (90m, 36h, 7d) or an RFC 3339 time (2026-03-01T00:00:00Z).

The listing stops with an error rather than print a partial list when it
would read more than --max-pages pages; narrow it with --since or raise the
cap. On a terminal a progress bar on stderr shows the pages read.`,
		Example: `  tradewire orders --since 7d --state filled
  tradewire orders --symbol BTC-USD --side buy -o csv > buys.csv`,
		Args: noArgs,
		RunE: a.run(func(cmd *cobra.Command, _ []string) error {
			var filter broker.OrderFilter
			return a.read(cmd, readSpec{
				check: func() error {
					if err := checkMaxPages(f.maxPages); err != nil {
						return err
					}
					filter = broker.OrderFilter{
						Symbol: strings.ToUpper(f.symbol),
						Side:   broker.Side(strings.ToLower(f.side)),
						State:  broker.OrderState(strings.ToLower(f.state)),
						Type:   broker.OrderType(strings.ToLower(f.typ)),
					}
					if f.since != "" {
						var err error
						if filter.CreatedAtStart, err = parseSince(f.since, a.clock().Now()); err != nil {
							return err
						}
					}
					return filter.Validate()
				},
				sweep: "orders",
				fetch: func(ctx context.Context, q *readQuery) (*report, error) {
					orders, err := broker.Collect(q.c.Orders(ctx, filter, append(q.pages, broker.Paging{MaxPages: f.maxPages})...))
					if err != nil {
						return nil, listError("orders", err)
					}
					tt := table{header: orderTableHeader}
					ct := table{header: orderCSVHeader}
					m := q.money(ctx, orderSymbols(orders)...)
					for i := range orders {
						tt.rows = append(tt.rows, orderTableRow(&orders[i], m))
						ct.rows = append(ct.rows, orderCSVRow(&orders[i]))
					}
					if orders == nil {
						orders = []broker.Order{}
					}
					return &report{json: orders, tables: []table{tt}, csv: ct}, nil
				},
			})
		}),
	}
	fs := cmd.Flags()
	fs.StringVar(&f.symbol, "symbol", "", "only this symbol, such as BTC-USD")
	fs.StringVar(&f.side, "side", "", "only this side: buy or sell")
	fs.StringVar(&f.state, "state", "", "only this state: open, pending, partially_filled, filled, canceled or failed")
	fs.StringVar(&f.typ, "type", "", "only this type: market, limit, stop_loss or stop_limit")
	fs.StringVar(&f.since, "since", "", "only orders created since: a duration back from now (90m, 36h, 7d) or an RFC 3339 time")
	fs.IntVar(&f.maxPages, "max-pages", defaultMaxPages, "fail rather than read more than this many pages")
	return cmd
}
