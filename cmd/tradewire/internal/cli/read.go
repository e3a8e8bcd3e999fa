package cli

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"
	"github.com/spf13/cobra"

	"github.com/tradewire/tradewire/broker"
	"github.com/tradewire/tradewire/internal/wire"
)

// The read commands: account, holdings, pairs, quote, estimate and
// orders (order get is in order.go, fees in fees.go, preview in
// preview.go). Each resolves --output and its arguments before building a
// client, so that a usage error sends nothing; each prints on stdout only
// once everything was read, so that a failure leaves stdout empty.

// ---- account ----

type accountJSON struct {
	AccountNumber        string  `json:"account_number"`
	Status               string  `json:"status"`
	AccountType          string  `json:"account_type"`
	IsAPITradable        bool    `json:"is_api_tradable"`
	BuyingPower          string  `json:"buying_power"`
	BuyingPowerCurrency  string  `json:"buying_power_currency"`
	FeeRatio             string  `json:"fee_ratio"`
	ThirtyDayVolume      string  `json:"thirty_day_volume"`
	NextFeeTierRatio     *string `json:"next_fee_tier_ratio"`
	NextFeeTierThreshold *string `json:"next_fee_tier_threshold"`
}

func newAccountCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "account",
		Short: "Show the account: status, buying power and fee tier",
		Args:  noArgs,
		RunE: a.run(func(cmd *cobra.Command, _ []string) error {
			format, err := a.outputFormat()
			if err != nil {
				return err
			}
			c, err := a.brokerClient()
			if err != nil {
				return err
			}
			acct, err := c.Account(cmd.Context())
			if err != nil {
				return err
			}
			j := accountJSON{
				AccountNumber: acct.AccountNumber, Status: acct.Status, AccountType: acct.AccountType,
				IsAPITradable: acct.IsAPITradable, BuyingPower: dec(acct.BuyingPower), BuyingPowerCurrency: acct.BuyingPowerCurrency,
				FeeRatio: dec(acct.FeeTier.FeeRatio), ThirtyDayVolume: dec(acct.FeeTier.ThirtyDayVolume),
				NextFeeTierRatio: decOrNull(acct.FeeTier.NextFeeTierRatio), NextFeeTierThreshold: decOrNull(acct.FeeTier.NextFeeTierThreshold),
			}
			header := []string{"account_number", "status", "account_type", "is_api_tradable", "buying_power", "buying_power_currency",
				"fee_ratio", "thirty_day_volume", "next_fee_tier_ratio", "next_fee_tier_threshold"}
			row := []string{j.AccountNumber, j.Status, j.AccountType, yesNo(j.IsAPITradable), j.BuyingPower, j.BuyingPowerCurrency,
				j.FeeRatio, j.ThirtyDayVolume, decOrEmpty(acct.FeeTier.NextFeeTierRatio), decOrEmpty(acct.FeeTier.NextFeeTierThreshold)}
			r := &report{json: j, csv: table{header: header, rows: [][]string{row}}}
			for i, h := range header {
				v := row[i]
				if v == "" {
					v = "- (top tier)"
				}
				r.fields = append(r.fields, [2]string{h, v})
			}
			return r.write(a.opts.Stdout, format)
		}),
	}
}

// ---- holdings ----

type holdingJSON struct {
	AssetCode                   string `json:"asset_code"`
	TotalQuantity               string `json:"total_quantity"`
	QuantityAvailableForTrading string `json:"quantity_available_for_trading"`
	AccountNumber               string `json:"account_number"`
}

func newHoldingsCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "holdings [ASSET_CODE...]",
		Short: "List the account's holdings (optionally only some assets, such as BTC)",
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			format, err := a.outputFormat()
			if err != nil {
				return err
			}
			codes := upper(args)
			c, err := a.brokerClient()
			if err != nil {
				return err
			}
			hs, err := broker.Collect(c.Holdings(cmd.Context(), codes))
			if err != nil {
				return err
			}
			items := make([]holdingJSON, 0, len(hs))
			t := table{header: []string{"asset_code", "total_quantity", "quantity_available_for_trading", "account_number"}}
			for _, h := range hs {
				j := holdingJSON{h.AssetCode, dec(h.TotalQuantity), dec(h.QuantityAvailableForTrading), h.AccountNumber}
				items = append(items, j)
				t.rows = append(t.rows, []string{j.AssetCode, j.TotalQuantity, j.QuantityAvailableForTrading, j.AccountNumber})
			}
			return listReport(items, t).write(a.opts.Stdout, format)
		}),
	}
}

// ---- pairs ----

type pairJSON struct {
	Symbol         string  `json:"symbol"`
	AssetCode      string  `json:"asset_code"`
	QuoteCode      string  `json:"quote_code"`
	AssetIncrement string  `json:"asset_increment"`
	QuoteIncrement string  `json:"quote_increment"`
	MinOrderAmount *string `json:"min_order_amount"`
	MaxOrderSize   string  `json:"max_order_size"`
	Status         string  `json:"status"`
	IsAPITradable  bool    `json:"is_api_tradable"`
}

func newPairsCmd(a *app) *cobra.Command {
	var maxPages int
	cmd := &cobra.Command{
		Use:   "pairs [SYMBOL...]",
		Short: "List trading pairs and their rules (increments, minimum and maximum order size)",
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			format, err := a.outputFormat()
			if err != nil {
				return err
			}
			if err := checkMaxPages(maxPages); err != nil {
				return err
			}
			c, err := a.brokerClient()
			if err != nil {
				return err
			}
			pairs, err := broker.Collect(c.TradingPairs(cmd.Context(), upper(args), broker.MaxPages(maxPages)))
			if err != nil {
				return listError("pairs", err)
			}
			items := make([]pairJSON, 0, len(pairs))
			t := table{header: []string{"symbol", "asset_code", "quote_code", "asset_increment", "quote_increment",
				"min_order_amount", "max_order_size", "status", "is_api_tradable"}}
			for _, p := range pairs {
				j := pairJSON{p.Symbol, p.AssetCode, p.QuoteCode, dec(p.AssetIncrement), dec(p.QuoteIncrement),
					decOrNull(p.MinOrderAmount), dec(p.MaxOrderSize), p.Status, p.IsAPITradable}
				items = append(items, j)
				t.rows = append(t.rows, []string{j.Symbol, j.AssetCode, j.QuoteCode, j.AssetIncrement, j.QuoteIncrement,
					decOrEmpty(p.MinOrderAmount), j.MaxOrderSize, j.Status, yesNo(j.IsAPITradable)})
			}
			return listReport(items, t).write(a.opts.Stdout, format)
		}),
	}
	cmd.Flags().IntVar(&maxPages, "max-pages", broker.DefaultPageCap, "fail rather than read more than this many pages")
	return cmd
}

// ---- quote ----

type quoteJSON struct {
	Symbol    string `json:"symbol"`
	Bid       string `json:"bid"`
	Ask       string `json:"ask"`
	Crossed   bool   `json:"crossed"`
	Timestamp string `json:"timestamp"`
}

func newQuoteCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "quote SYMBOL...",
		Short: "Show the best bid and ask, exactly as the venue sends them",
		Long: `Show the best bid and ask for each SYMBOL (such as BTC-USD), exactly as the
venue sends them. The venue has been seen to send a crossed book (bid above
ask); it is shown as sent, with crossed=true, never corrected.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("quote: want at least one SYMBOL, such as BTC-USD")
			}
			return nil
		},
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			format, err := a.outputFormat()
			if err != nil {
				return err
			}
			c, err := a.brokerClient()
			if err != nil {
				return err
			}
			qs, err := c.BestBidAsk(cmd.Context(), upper(args)...)
			if err != nil {
				return err
			}
			items := make([]quoteJSON, 0, len(qs))
			t := table{header: []string{"symbol", "bid", "ask", "crossed", "timestamp"}}
			for _, q := range qs {
				j := quoteJSON{q.Symbol, dec(q.Bid), dec(q.Ask), q.Crossed(), stamp(q.Timestamp)}
				items = append(items, j)
				t.rows = append(t.rows, []string{j.Symbol, j.Bid, j.Ask, yesNo(j.Crossed), j.Timestamp})
			}
			return listReport(items, t).write(a.opts.Stdout, format)
		}),
	}
}

// ---- estimate ----

type estimateJSON struct {
	Symbol       string  `json:"symbol"`
	Side         string  `json:"side"`
	Quantity     string  `json:"quantity"`
	Price        *string `json:"price"`
	FeeRatio     string  `json:"fee_ratio"`
	EstFee       string  `json:"est_fee"`
	EstTotalCost *string `json:"est_total_cost"`
	Timestamp    string  `json:"timestamp"`
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
			format, err := a.outputFormat()
			if err != nil {
				return err
			}
			ps := broker.PriceSide(strings.ToLower(strings.TrimSpace(side)))
			switch ps {
			case broker.PriceBid, broker.PriceAsk, broker.PriceBoth:
			default:
				return usagef("--side %q: want bid (what a sell fetches), ask (what a buy costs) or both", side)
			}
			qs, err := parseQuantities(quantities)
			if err != nil {
				return err
			}
			c, err := a.brokerClient()
			if err != nil {
				return err
			}
			rows, err := c.EstimatedPrice(cmd.Context(), strings.ToUpper(args[0]), ps, qs...)
			if err != nil {
				return err
			}
			items := make([]estimateJSON, 0, len(rows))
			t := table{header: []string{"symbol", "side", "quantity", "price", "fee_ratio", "est_fee", "est_total_cost", "timestamp"}}
			for _, e := range rows {
				price, ok := e.Price()
				j := estimateJSON{e.Symbol, string(e.Side), dec(e.Quantity), decOrNull(decimal.NullDecimal{Decimal: price, Valid: ok}),
					dec(e.FeeRatio), dec(e.EstFee), decOrNull(e.EstTotalCost), stamp(e.Timestamp)}
				items = append(items, j)
				t.rows = append(t.rows, []string{j.Symbol, j.Side, j.Quantity, decOrEmpty(decimal.NullDecimal{Decimal: price, Valid: ok}),
					j.FeeRatio, j.EstFee, decOrEmpty(e.EstTotalCost), j.Timestamp})
			}
			return listReport(items, t).write(a.opts.Stdout, format)
		}),
	}
	cmd.Flags().StringVar(&side, "side", string(broker.PriceBoth), "bid (what a sell fetches), ask (what a buy costs) or both")
	cmd.Flags().StringVar(&quantities, "quantity", "", "asset quantities, comma-separated (at most 10), such as 0.001,0.01")
	_ = cmd.MarkFlagRequired("quantity")
	return cmd
}

// parseQuantities parses --quantity's comma list of decimals. Their
// number and sign are checked by broker, before anything is sent.
func parseQuantities(s string) ([]decimal.Decimal, error) {
	var out []decimal.Decimal
	for _, f := range strings.Split(s, ",") {
		d, err := parseDecimal("--quantity", strings.TrimSpace(f))
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// parseDecimal parses a decimal flag value exactly (never through
// float64) with the library's one rule for decimals sent (wire.ParseAmount:
// plain digits, at most 18 decimal places and 20 before the point, no
// exponent or sign but minus), naming the flag when it breaks it.
func parseDecimal(flag, s string) (decimal.Decimal, error) {
	d, err := wire.ParseAmount(flag, s)
	var ae *wire.AmountError
	if errors.As(err, &ae) {
		return decimal.Decimal{}, usagef("%s: %s", flag, ae.Reason)
	}
	return d, err
}

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

func (j orderJSON) tableRow() []string {
	size := str(j.AssetQuantity)
	if j.QuoteAmount != nil {
		size = *j.QuoteAmount + " (quote)"
	}
	return []string{j.CreatedAt, j.ID, j.Symbol, j.Side, j.Type, j.State, size, str(j.LimitPrice), j.FilledAssetQuantity, str(j.AveragePrice), j.FeeCharged}
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
			format, err := a.outputFormat()
			if err != nil {
				return err
			}
			if err := checkMaxPages(f.maxPages); err != nil {
				return err
			}
			filter := broker.OrderFilter{
				Symbol: strings.ToUpper(f.symbol),
				Side:   broker.Side(strings.ToLower(f.side)),
				State:  broker.OrderState(strings.ToLower(f.state)),
				Type:   broker.OrderType(strings.ToLower(f.typ)),
			}
			if f.since != "" {
				if filter.CreatedAtStart, err = parseSince(f.since, a.clock().Now()); err != nil {
					return err
				}
			}
			// Before the client: in a fleet, building it can read the
			// accounts list.
			if err := filter.Validate(); err != nil {
				return err
			}
			rate, burst, err := a.rateLimit()
			if err != nil {
				return err
			}
			progress := a.newSweepProgress("orders", "orders")
			defer progress.done()
			c, err := a.brokerClient(progress.transportOptions(rate, burst)...)
			if err != nil {
				return err
			}
			orders, err := broker.Collect(c.Orders(cmd.Context(), filter, broker.MaxPages(f.maxPages), progress.callOption()))
			progress.done()
			if err != nil {
				return listError("orders", err)
			}
			items := make([]orderJSON, 0, len(orders))
			tt := table{header: orderTableHeader}
			ct := table{header: orderCSVHeader}
			for i := range orders {
				j := orderView(&orders[i])
				items = append(items, j)
				tt.rows = append(tt.rows, j.tableRow())
				ct.rows = append(ct.rows, j.csvRow())
			}
			return (&report{json: items, tables: []table{tt}, csv: ct}).write(a.opts.Stdout, format)
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

// parseSince reads --since: a duration back from now (Go syntax, plus d
// for days) or an RFC 3339 time.
func parseSince(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	d, err := parseWindow(s)
	if err != nil {
		return time.Time{}, usagef("--since %q: want a duration back from now (90m, 36h, 7d) or an RFC 3339 time (2026-03-01T00:00:00Z)", s)
	}
	return now.Add(-d), nil
}

// maxDays bounds a duration in days so that it fits a time.Duration.
const maxDays = 100_000

// parseWindow reads a positive duration in Go syntax (90m, 36h, 1h30m)
// or with a leading whole number of days (30d, 1d12h). Its errors say
// what is wrong without repeating the value.
func parseWindow(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	var days time.Duration
	if i := strings.IndexByte(s, 'd'); i >= 0 {
		n, err := strconv.Atoi(s[:i])
		if err != nil || n < 0 || n > maxDays {
			return 0, fmt.Errorf("want a whole number of days before d, at most %d (30d, 1d12h)", maxDays)
		}
		days, s = time.Duration(n)*24*time.Hour, s[i+1:]
	}
	var rest time.Duration
	if s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			return 0, errors.New("want a duration such as 30d, 36h or 90m")
		}
		rest = d
	}
	total := days + rest
	if total <= 0 || rest < 0 || total < days {
		return 0, errors.New("must be positive")
	}
	return total, nil
}

// checkMaxPages refuses a page cap below 1 before anything is sent.
func checkMaxPages(n int) error {
	if n < 1 {
		return usagef("--max-pages %d: want 1 or more", n)
	}
	return nil
}

// pageCapError is a listing that stopped at its page cap: one line that
// says what to do, wrapping broker's *PageCapError (exit 1).
type pageCapError struct {
	msg string
	err *broker.PageCapError
}

func (e *pageCapError) Error() string { return e.msg }
func (e *pageCapError) Unwrap() error { return e.err }

// listError explains a listing's page cap; other errors pass unchanged.
func listError(cmd string, err error) error {
	var pc *broker.PageCapError
	if errors.As(err, &pc) {
		return &pageCapError{
			msg: fmt.Sprintf("%s: more than %d pages; stopped at the cap rather than print a partial list: narrow the query or raise --max-pages", cmd, pc.Pages),
			err: pc,
		}
	}
	return err
}

// upper upper-cases symbols and asset codes, as the venue spells them.
func upper(args []string) []string {
	out := make([]string, len(args))
	for i, s := range args {
		out[i] = strings.ToUpper(strings.TrimSpace(s))
	}
	return out
}
