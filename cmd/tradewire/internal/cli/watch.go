package cli

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/tradewire/tradewire/broker"
)

// watchEvent is one line of tradewire watch -o json: a broker.Event,
// decimals as exact strings.
type watchEvent struct {
	EventID             string  `json:"event_id"`
	Event               string  `json:"event"`
	ID                  string  `json:"id"`
	ClientOrderID       string  `json:"client_order_id"`
	Symbol              string  `json:"symbol"`
	Side                string  `json:"side"`
	Type                string  `json:"type"`
	State               string  `json:"state"`
	FilledAssetQuantity string  `json:"filled_asset_quantity"`
	FillQuantity        string  `json:"fill_quantity"`
	FillPrice           *string `json:"fill_price"`
	FillFee             string  `json:"fill_fee"`
	FeeCharged          string  `json:"fee_charged"`
	UpdatedAt           string  `json:"updated_at"`
	External            bool    `json:"external"`
	Intent              string  `json:"intent,omitempty"`
}

func watchJSON(ev broker.Event) watchEvent {
	o := &ev.Order
	w := watchEvent{
		EventID: ev.ID, Event: string(ev.Kind), ID: o.ID, ClientOrderID: o.ClientOrderID, Symbol: o.Symbol,
		Side: string(o.Side), Type: string(o.Type), State: string(o.State),
		FilledAssetQuantity: dec(o.FilledAssetQuantity), FillQuantity: dec(ev.FillQuantity), FillFee: dec(ev.FillFee),
		FeeCharged: dec(o.FeeCharged), UpdatedAt: stamp(o.UpdatedAt), External: ev.External, Intent: string(ev.Intent),
	}
	if ev.FillPrice.Valid {
		p := dec(ev.FillPrice.Decimal)
		w.FillPrice = &p
	}
	return w
}

// watchLine is ev's line for a person: when, what, the order, and whose.
func watchLine(ev broker.Event) string {
	o := &ev.Order
	line := fmt.Sprintf("%s  %-16s  %s %s %s  filled %s", stamp(o.UpdatedAt), ev.Kind, o.Symbol, o.Side, o.ID, dec(o.FilledAssetQuantity))
	if ev.FillQuantity.IsPositive() {
		line += " (+" + dec(ev.FillQuantity)
		if ev.FillPrice.Valid {
			line += " @ " + dec(ev.FillPrice.Decimal)
		}
		line += ", fee " + dec(ev.FillFee) + ")"
	}
	if ev.Kind == broker.EventSettled {
		line = fmt.Sprintf("%s  %-16s  %s intent %s now %s", stamp(o.UpdatedAt), ev.Kind, o.Symbol, o.ClientOrderID, ev.Intent)
		if o.ID != "" {
			line += ", order " + o.ID
		}
		return printable(line) + "\n"
	}
	switch {
	case ev.External:
		line += "  external"
	case ev.Intent.Open():
		line += "  intent was " + string(ev.Intent)
	}
	return printable(line) + "\n"
}

func newWatchCmd(a *app) *cobra.Command {
	var f struct {
		since       string
		interval    time.Duration
		overlap     time.Duration
		metricsAddr string
	}
	cmd := &cobra.Command{
		Use:   "watch [--since DURATION|TIME] [--interval D] [--overlap D] [--metrics-addr HOST:PORT]",
		Short: "Print each change of the account's orders as it happens",
		Long: `Print each change of the account's orders (created, partially_filled, filled,
canceled, failed) as the venue's orders list shows it, polled by updated_at
every --interval with an overlap, so that a list that shows an update late
loses nothing and nothing is printed twice. One JSON object a line when
piped or with -o json (event_id, event, id, client_order_id, symbol, side,
type, state, filled_asset_quantity (cumulative), fill_quantity, fill_price,
fill_fee, fee_charged, updated_at, external, intent); a line for a person
on a terminal.

The watch keeps its cursor in the intent store (--store, or the fleet's
Redis): run again, it goes on where it stopped, printing nothing twice after
a clean stop; after a crash it prints again the events since its last save,
with the same event_id. An intent of the store left pending or unknown (by
a crash) is settled as recover settles it, once its order shows or every
signature it was sent with has expired, and printed as event "settled" with
its new intent (acknowledged, rejected or not_placed). --since starts earlier (a duration back from now
such as 30m, or an RFC 3339 time). external marks an order the store did
not place. Ctrl-C or SIGTERM stops it, the cursor saved (exit 0).

--metrics-addr HOST:PORT serves the client's metrics (requests, retries,
429s, the rate budget, the watch's lag; docs/metrics.md) as Prometheus text
at http://HOST:PORT/metrics while it runs.`,
		Example: `  tradewire watch
  tradewire watch --since 30m -o json | jq -c 'select(.event == "filled")'`,
		Args: noArgs,
		RunE: a.run(func(cmd *cobra.Command, _ []string) error {
			format, err := a.outputFormat()
			if err != nil {
				return err
			}
			if format == outputCSV {
				return usagef("--%s csv: watch prints json or table", flagOutput)
			}
			cfg := broker.WatchConfig{PollInterval: f.interval, Overlap: f.overlap}
			if f.interval < 0 {
				return usagef("--interval %v: must not be negative", f.interval)
			}
			if f.overlap < 0 {
				return usagef("--overlap %v: must not be negative", f.overlap)
			}
			if f.since != "" {
				if cfg.Since, err = parseSince(f.since, a.clock().Now()); err != nil {
					return err
				}
			}
			ctx := cmd.Context()
			if f.metricsAddr != "" {
				m, err := a.startMetrics(ctx, "tradewire watch", f.metricsAddr)
				if err != nil {
					return err
				}
				defer m.stop()
				a.meterProvider = m.provider
			}
			c, _, closeStore, err := a.placer(ctx, "", broker.Limits{})
			if err != nil {
				return err
			}
			defer closeStore()
			out := a.opts.Stdout
			var last error
			for ev, err := range c.Watch(ctx, cfg) {
				if err != nil {
					if ctx.Err() != nil {
						break
					}
					last = err
					fmt.Fprintf(a.opts.Stderr, "tradewire watch: %v\n", err)
					continue
				}
				var line []byte
				if format == outputJSON {
					b, err := json.Marshal(watchJSON(ev))
					if err != nil {
						return err
					}
					line = append(b, '\n')
				} else {
					line = []byte(watchLine(ev))
				}
				if _, err := out.Write(line); err != nil {
					return fmt.Errorf("writing the output: %w", err)
				}
			}
			if ctx.Err() == nil {
				// The watch ends by itself only when it cannot start.
				return last
			}
			return nil
		}),
	}
	fs := cmd.Flags()
	fs.StringVar(&f.since, "since", "", "start earlier than the saved cursor: a duration back from now (30m, 36h, 7d) or an RFC 3339 time")
	fs.DurationVar(&f.interval, "interval", 0, "time between polls (default 10s: 6 requests a minute with 100 open orders)")
	addMetricsFlag(cmd, &f.metricsAddr)
	fs.DurationVar(&f.overlap, "overlap", 0, "how far back by updated_at each poll reads again: an update the list shows later than this can be missed (default 30s)")
	return cmd
}
