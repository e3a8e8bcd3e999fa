package cli

import (
	"context"
	"strings"

	"github.com/spf13/cobra"
)

// newOrderCmd is the parent of the commands on one order. "get" reads an
// order; placing and canceling ("order place", "order cancel") are added
// beside it as siblings.
func newOrderCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "order",
		Short: "Commands on one order",
		Args:  noArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newOrderGetCmd(a), newOrderPlaceCmd(a), newOrderCancelCmd(a))
	return cmd
}

func newOrderGetCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "get ID",
		Short: "Show one order by its id",
		Long: `Show one order by its id (a UUID), as the venue reports it now: state,
sizing, fills, average price and fees. An id the venue does not know exits 3.`,
		Args: oneArg("order get", "order ID,"),
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			return a.read(cmd, readSpec{fetch: func(ctx context.Context, q *readQuery) (*report, error) {
				o, err := q.c.Order(ctx, strings.TrimSpace(args[0]))
				if err != nil {
					return nil, err
				}
				return orderReport(o), nil
			}})
		}),
	}
}
