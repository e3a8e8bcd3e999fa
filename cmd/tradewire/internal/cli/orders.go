package cli

import (
	"context"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tradewire/tradewire/broker"
)

// The orders listing. An order's JSON and CSV (orderJSON) are shared with
// order get and order place (orderReport).

// ---- orders ----

// orderJSON is an order in the read commands' output. The sizing and
// prices are the order's <type>_order_config, flattened.
type orderJSON struct {
	ID                    string          `json:"id"`
	ClientOrderID         string          `json:"client_order_id"`
	Symbol                string          `json:"symbol"`
	Side                  string          `json:"side"`
	Type                  string          `json:"type"`
	State                 string          `json:"state"`
	AssetQuantity         *string         `json:"asset_quantity"`
	QuoteAmount           *string         `json:"quote_amount"`
	LimitPrice            *string         `json:"limit_price"`
	StopPrice             *string         `json:"stop_price"`
	TimeInForce           string          `json:"time_in_force"`
	FilledAssetQuantity   string          `json:"filled_asset_quantity"`
	AveragePrice          *string         `json:"average_price"`
	FilledNotional        string          `json:"filled_notional"`
	FeeCharged            string          `json:"fee_charged"`
	EstimatedFeeRemaining string          `json:"estimated_fee_remaining"`
	CreatedAt             string          `json:"created_at"`
	UpdatedAt             string          `json:"updated_at"`
	AccountNumber         string          `json:"account_number"`
	Executions            []executionJSON `json:"executions"`
}

type executionJSON struct {
	EffectivePrice string `json:"effective_price"`
	Quantity       string `json:"quantity"`
	Timestamp      string `json:"timestamp"`
}

func orderView(o *broker.Order) orderJSON {
	j := orderJSON{
		ID: o.ID, ClientOrderID: o.ClientOrderID, Symbol: o.Symbol, Side: string(o.Side), Type: string(o.Type), State: string(o.State),
		FilledAssetQuantity: dec(o.FilledAssetQuantity), AveragePrice: decOrNull(o.AveragePrice), FilledNotional: dec(o.FilledNotional()),
		FeeCharged: dec(o.FeeCharged), EstimatedFeeRemaining: dec(o.EstimatedFeeRemaining),
		CreatedAt: stamp(o.CreatedAt), UpdatedAt: stamp(o.UpdatedAt), AccountNumber: o.AccountNumber,
		Executions: make([]executionJSON, 0, len(o.Executions)),
	}
	if cfg := o.Config(); cfg != nil {
		j.AssetQuantity, j.QuoteAmount = decOrNull(cfg.AssetQuantity), decOrNull(cfg.QuoteAmount)
		j.LimitPrice, j.StopPrice, j.TimeInForce = decOrNull(cfg.LimitPrice), decOrNull(cfg.StopPrice), cfg.TimeInForce
	}
	for _, e := range o.Executions {
		j.Executions = append(j.Executions, executionJSON{dec(e.EffectivePrice), dec(e.Quantity), stamp(e.Timestamp)})
	}
	return j
}

// orderCSVHeader is every column of an order in CSV: orderJSON's fields,
// with the executions counted.
var orderCSVHeader = []string{"id", "client_order_id", "symbol", "side", "type", "state", "asset_quantity", "quote_amount",
	"limit_price", "stop_price", "time_in_force", "filled_asset_quantity", "average_price", "filled_notional", "fee_charged",
	"estimated_fee_remaining", "created_at", "updated_at", "account_number", "executions"}

func (j orderJSON) csvRow() []string {
	return []string{j.ID, j.ClientOrderID, j.Symbol, j.Side, j.Type, j.State, str(j.AssetQuantity), str(j.QuoteAmount),
		str(j.LimitPrice), str(j.StopPrice), j.TimeInForce, j.FilledAssetQuantity, str(j.AveragePrice), j.FilledNotional, j.FeeCharged,
		j.EstimatedFeeRemaining, j.CreatedAt, j.UpdatedAt, j.AccountNumber, strconv.Itoa(len(j.Executions))}
}

// orderTableHeader is the narrower table a terminal shows.
var orderTableHeader = []string{"created_at", "id", "symbol", "side", "type", "state", "size", "limit_price", "filled_asset_quantity", "average_price", "fee_charged"}

// orderTableRow is o's row of the table, its money (a quote amount, the
// limit and average prices, the fee) rounded as m says.
func orderTableRow(o *broker.Order, j orderJSON, m money) []string {
	size := str(j.AssetQuantity)
	var limit string
	if cfg := o.Config(); cfg != nil {
		if cfg.QuoteAmount.Valid {
			size = m.nullCell(o.Symbol, cfg.QuoteAmount) + " (quote)"
		}
		limit = m.nullCell(o.Symbol, cfg.LimitPrice)
	}
	return []string{j.CreatedAt, j.ID, j.Symbol, j.Side, j.Type, j.State, size, limit, j.FilledAssetQuantity,
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

func str(s *string) string {
	if s == nil {
		return ""
	}
	return *s
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
					orders, err := broker.Collect(q.c.Orders(ctx, filter, append(q.pages, broker.MaxPages(f.maxPages))...))
					if err != nil {
						return nil, listError("orders", err)
					}
					items := make([]orderJSON, 0, len(orders))
					tt := table{header: orderTableHeader}
					ct := table{header: orderCSVHeader}
					m := q.money(ctx, orderSymbols(orders)...)
					for i := range orders {
						j := orderView(&orders[i])
						items = append(items, j)
						tt.rows = append(tt.rows, orderTableRow(&orders[i], j, m))
						ct.rows = append(ct.rows, j.csvRow())
					}
					return &report{json: items, tables: []table{tt}, csv: ct}, nil
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
	fs.IntVar(&f.maxPages, "max-pages", broker.DefaultPageCap, "fail rather than read more than this many pages")
	return cmd
}
