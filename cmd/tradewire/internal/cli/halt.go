package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/tradewire/tradewire/broker"
)

// haltJSON is one order in the output of "halt": what became of it.
type haltJSON struct {
	ID            string `json:"id"`
	ClientOrderID string `json:"client_order_id"`
	Symbol        string `json:"symbol"`
	Side          string `json:"side"`
	State         string `json:"state"` // as listed before its cancel
	Result        string `json:"result"`
	Error         string `json:"error"`
}

var haltHeader = []string{"id", "client_order_id", "symbol", "side", "state", "result", "error"}

func haltRow(o broker.Order, result string, err error) haltJSON {
	j := haltJSON{ID: o.ID, ClientOrderID: o.ClientOrderID, Symbol: o.Symbol, Side: string(o.Side), State: string(o.State), Result: result}
	if err != nil {
		j.Error = err.Error()
	}
	return j
}

func haltReport(rep *broker.HaltReport) *report {
	items := []haltJSON{}
	for _, o := range rep.Canceled {
		items = append(items, haltRow(o, "canceled", nil))
	}
	for _, f := range rep.Open {
		items = append(items, haltRow(f.Order, "open", f.Err))
	}
	t := table{header: haltHeader}
	for _, j := range items {
		t.rows = append(t.rows, []string{j.ID, j.ClientOrderID, j.Symbol, j.Side, j.State, j.Result, j.Error})
	}
	r := listReport(items, t)
	r.banner = []string{fmt.Sprintf("HALTED: every create through this intent store is refused until \"tradewire resume\"; %d canceled, %d still open", len(rep.Canceled), len(rep.Open))}
	return r
}

func newHaltCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "halt",
		Short: "Kill switch: refuse every create through the intent store, and cancel every open order",
		Long: `Halt the intent store — the --store file, or with --redis-url or
--postgres-url the fleet's — so that every tradewire process and bot placing through it refuses
every new order, within a second, sending nothing (cancels still go out),
until "tradewire resume". The halt is durable: it survives restarts.

Then cancel every open order of the account (whoever placed it), paging
through the orders list since the venue has no cancel-all, within the rate
budget, listing again once a second until 5 s after the halt and after the
last cancel, for the cancels to settle. It prints one row per order: canceled, or still open with why. It exits 0 when
nothing is left open, 1 when an order stayed open (run it again, or cancel
it by hand), and with the usual codes when the store or the venue failed.`,
		Args: noArgs,
		RunE: a.run(func(cmd *cobra.Command, _ []string) error {
			format, err := a.outputFormat()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			c, _, closeStore, err := a.placer(ctx, "", broker.Limits{})
			if err != nil {
				return err
			}
			defer closeStore()
			rep, err := c.Halt(ctx)
			if rep != nil {
				if werr := haltReport(rep).write(a.opts.Stdout, format); werr != nil && err == nil {
					err = werr
				}
			}
			if err != nil {
				return err
			}
			if n := len(rep.Open); n > 0 {
				return fmt.Errorf("halt: the store is halted, but %d order(s) stayed open, such as %s (%v); run halt again, or cancel them by hand", n, rep.Open[0].Order.ID, rep.Open[0].Err)
			}
			return nil
		}),
	}
}

func newResumeCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "resume",
		Short: "Lift a halt: creates through the intent store go out again",
		Long: `Lift "tradewire halt" on the intent store — the --store file, or with
--redis-url or --postgres-url the fleet's: every process placing through it places again
within a second. It places and cancels nothing.`,
		Args: noArgs,
		RunE: a.run(func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			c, _, closeStore, err := a.placer(ctx, "", broker.Limits{})
			if err != nil {
				return err
			}
			defer closeStore()
			if err := c.Resume(ctx); err != nil {
				return err
			}
			_, err = io.WriteString(a.opts.Stdout, "resumed: creates through this intent store go out again\n")
			return err
		}),
	}
}
