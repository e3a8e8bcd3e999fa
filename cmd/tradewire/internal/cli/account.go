package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/tradewire/tradewire/broker"
)

// The account commands: account and holdings. Their JSON is broker's
// (accountJSON, holdingJSON).

func newAccountCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "account",
		Short: "Show the account: status, buying power and fee tier",
		Args:  noArgs,
		RunE: a.run(func(cmd *cobra.Command, _ []string) error {
			return a.read(cmd, readSpec{fetch: func(ctx context.Context, q *readQuery) (*report, error) {
				acct, err := q.c.Account(ctx)
				if err != nil {
					return nil, err
				}
				return accountReport(acct, q.currencyMoney(ctx)), nil
			}})
		}),
	}
}

// accountReport is the account as one CSV row and, in the table, one
// labelled line a field, its amounts of money rounded as m says.
func accountReport(acct *broker.Account, m money) *report {
	ft := acct.FeeTier
	header := []string{"account_number", "status", "account_type", "is_api_tradable", "buying_power", "buying_power_currency",
		"fee_ratio", "thirty_day_volume", "next_fee_tier_ratio", "next_fee_tier_threshold"}
	row := func(m money) []string {
		threshold := ""
		if ft.NextFeeTierThreshold.Valid {
			threshold = m.currencyCell(acct.BuyingPowerCurrency, ft.NextFeeTierThreshold.Decimal)
		}
		return []string{acct.AccountNumber, acct.Status, acct.AccountType, yesNo(acct.IsAPITradable),
			m.currencyCell(acct.BuyingPowerCurrency, acct.BuyingPower), acct.BuyingPowerCurrency,
			dec(ft.FeeRatio), m.currencyCell(acct.BuyingPowerCurrency, ft.ThirtyDayVolume), decOrEmpty(ft.NextFeeTierRatio), threshold}
	}
	r := &report{json: acct, csv: table{header: header, rows: [][]string{row(money{})}}}
	for i, v := range row(m) {
		if v == "" {
			v = "- (top tier)"
		}
		r.fields = append(r.fields, [2]string{header[i], v})
	}
	return r
}

func newHoldingsCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "holdings [ASSET_CODE...]",
		Short: "List the account's holdings (optionally only some assets, such as BTC)",
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			return a.read(cmd, readSpec{fetch: func(ctx context.Context, q *readQuery) (*report, error) {
				hs, err := broker.Collect(q.c.Holdings(ctx, upper(args)))
				if err != nil {
					return nil, err
				}
				t := table{header: []string{"asset_code", "total_quantity", "quantity_available_for_trading", "account_number"}}
				for _, h := range hs {
					t.rows = append(t.rows, []string{h.AssetCode, dec(h.TotalQuantity), dec(h.QuantityAvailableForTrading), h.AccountNumber})
				}
				return listReport(nonNil(hs), t), nil
			}})
		}),
	}
}

// nonNil is items, or an empty slice for nil: a listing prints [] in
// JSON, never null.
func nonNil[T any](items []T) []T {
	if items == nil {
		return []T{}
	}
	return items
}
