package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/shopspring/decimal"
	"github.com/spf13/cobra"

	"github.com/tradewire/tradewire/broker"
	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/orders"
)

// The intent store (--store): where order placement records what it is
// about to do.
const defaultStoreHint = "$XDG_STATE_HOME/tradewire/intents.db"

// intentStore opens the intent store: the fleet's with --redis-url or
// --postgres-url (for the account account returns); else the file from
// --store or TRADEWIRE_STORE, else the default path; in memory with --sim
// unless a file is named, since the simulated venue lives only as long as
// the command.
func (a *app) intentStore(ctx context.Context, account func(context.Context) (string, error)) (idempotency.Store, error) {
	f, err := a.fleet()
	if err != nil {
		return nil, err
	}
	if f.url != "" {
		n, err := account(ctx)
		if err != nil {
			return nil, err
		}
		return a.fleetStore(ctx, f, n)
	}
	path, source := a.setting(flagStore, envStore)
	if path == "" {
		if a.flags.sim {
			return idempotency.NewMemoryStore(), nil
		}
		p, err := idempotency.DefaultPath()
		if err != nil {
			return nil, usagef("no intent store: %v (pass --%s)", err, flagStore)
		}
		path, source = p, "default"
	}
	s, err := idempotency.Open(path, idempotency.Config{})
	if err != nil {
		// A store that is locked, damaged or cannot be created is a
		// configuration error: nothing has been sent yet.
		if source == "default" {
			return nil, usagef("%v", err)
		}
		return nil, usagef("%s: %v", source, err)
	}
	return s, nil
}

// accountNumber returns --account-number, or reads the account's number
// from the venue.
func (a *app) accountNumber(ctx context.Context) (string, error) {
	c, err := a.brokerClient() // checks --account-number too
	if err != nil {
		return "", err
	}
	if n := a.accountNumberFlag(); n != "" {
		return n, nil
	}
	acct, err := c.Account(ctx)
	if err != nil {
		return "", err
	}
	return acct.AccountNumber, nil
}

// placer builds a broker client that places on the account, with the
// intent store it returns; close releases the store. Everything that can
// be checked offline is, before the first request: the flags, the client,
// and the store file, which is opened before the accounts list is read (a
// fleet's store is keyed by the account, so it opens after).
func (a *app) placer(ctx context.Context, namespace string, limits broker.Limits) (p *broker.Client, store idempotency.Store, close func(), err error) {
	c, err := a.brokerClient()
	if err != nil {
		return nil, nil, nil, err
	}
	log, err := a.logger()
	if err != nil {
		return nil, nil, nil, err
	}
	if !a.inFleet() {
		if store, err = a.intentStore(ctx, nil); err != nil {
			return nil, nil, nil, err
		}
	}
	number := a.accountNumberFlag()
	if number == "" {
		var acct *broker.Account
		if acct, err = c.Account(ctx); err == nil {
			number = acct.AccountNumber
		}
	}
	if err == nil && store == nil {
		store, err = a.intentStore(ctx, func(context.Context) (string, error) { return number, nil })
	}
	if err != nil {
		if store != nil {
			store.Close()
		}
		return nil, nil, nil, err
	}
	p, err = broker.NewFromTransport(c.Transport(), broker.Config{
		Logger:        log,
		AccountNumber: number,
		IntentStore:   store,
		Orders:        orders.Config{Namespace: namespace},
		Limits:        limits,
	})
	if err != nil {
		store.Close()
		return nil, nil, nil, usagef("%v", err)
	}
	return p, store, func() { p.Close(); store.Close() }, nil
}

// orderRequestFlags are the flags that describe an order, shared by
// "order place" and "preview".
type orderRequestFlags struct {
	symbol, side, typ                            string
	quantity, quoteAmount, limitPrice, stopPrice string
	timeInForce                                  string
	cmd                                          *cobra.Command
}

func (f *orderRequestFlags) add(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.symbol, "symbol", "", "the pair, such as BTC-USD")
	fs.StringVar(&f.side, "side", "", "buy or sell")
	fs.StringVar(&f.typ, "type", "", "market, limit, stop_loss or stop_limit")
	fs.StringVar(&f.quantity, "quantity", "", "asset quantity, such as 0.001")
	fs.StringVar(&f.quoteAmount, "quote-amount", "", "size in the quote currency instead, such as 25.00 (not for market orders)")
	fs.StringVar(&f.limitPrice, "limit-price", "", "limit price (limit and stop_limit orders)")
	fs.StringVar(&f.stopPrice, "stop-price", "", "stop price (stop_loss and stop_limit orders)")
	fs.StringVar(&f.timeInForce, "time-in-force", string(broker.TimeInForceGTC),
		"gtc (good till canceled), gfd, gfw or gfm (good for the venue's day, week or month); limit and stop orders only")
	f.cmd = cmd
	for _, name := range []string{"symbol", "side", "type"} {
		_ = cmd.MarkFlagRequired(name)
	}
	cmd.MarkFlagsOneRequired("quantity", "quote-amount")
	cmd.MarkFlagsMutuallyExclusive("quantity", "quote-amount")
}

// fields parses the flags into a request without judging it.
func (f *orderRequestFlags) fields() (broker.OrderRequest, error) {
	req := broker.OrderRequest{
		Symbol: strings.ToUpper(strings.TrimSpace(f.symbol)),
		Side:   broker.Side(strings.ToLower(strings.TrimSpace(f.side))),
		Type:   broker.OrderType(strings.ToLower(strings.TrimSpace(f.typ))),
	}
	// The default gtc is the venue's, for the types that take a time in
	// force; a market order takes none unless one is asked for.
	if req.Type != broker.TypeMarket || f.cmd.Flags().Changed("time-in-force") {
		req.TimeInForce = broker.TimeInForce(strings.ToLower(strings.TrimSpace(f.timeInForce)))
	}
	for _, p := range []struct {
		flag, value string
		dst         *decimal.Decimal
	}{
		{"quantity", f.quantity, &req.AssetQuantity},
		{"quote-amount", f.quoteAmount, &req.QuoteAmount},
		{"limit-price", f.limitPrice, &req.LimitPrice},
		{"stop-price", f.stopPrice, &req.StopPrice},
	} {
		if strings.TrimSpace(p.value) == "" {
			continue
		}
		d, err := parseDecimal("--"+p.flag, p.value)
		if err != nil {
			return req, err
		}
		// A zero would read as "not given" (broker.OrderRequest).
		if d.IsZero() {
			return req, usagef("--%s: %s: must be positive (nothing was sent)", p.flag, d)
		}
		*p.dst = d
	}
	return req, nil
}

// request parses the flags and validates the request offline.
func (f *orderRequestFlags) request() (broker.OrderRequest, error) {
	req, err := f.fields()
	if err != nil {
		return req, err
	}
	if err := req.Validate(); err != nil {
		var ve *broker.ArgumentError
		if errors.As(err, &ve) {
			return req, usagef("%s: %s (nothing was sent)", flagForField(ve.Field), ve.Reason)
		}
		return req, usagef("%v", err)
	}
	return req, nil
}

// flagForField names the flag behind a venue field.
func flagForField(field string) string {
	switch field {
	case "asset_quantity":
		return "--quantity"
	case "quote_amount":
		return "--quote-amount"
	case "limit_price":
		return "--limit-price"
	case "stop_price":
		return "--stop-price"
	case "time_in_force":
		return "--time-in-force"
	}
	return "--" + field
}

func newOrderPlaceCmd(a *app) *cobra.Command {
	var f orderRequestFlags
	var key, namespace string
	cmd := &cobra.Command{
		Use:   "place",
		Short: "Place an order, at most once per idempotency key",
		Long: `Place an order. With --idempotency-key, the create is recorded in the intent
store before it is sent, and after an ambiguous answer (429, 5xx, timeout) it
is looked up by its client_order_id; it is sent again, with the same id, only
once every signature it was sent with has expired and a second lookup found
nothing. Running the same command again is always safe: an acknowledged key
prints its order and sends nothing.

A new order that breaks its trading pair's increments or maximum order size
(as preview reports them) exits 2 before the create is sent.

--time-in-force sets how long a limit or stop order stays open: gtc (the
default) until it fills or is canceled, gfd, gfw or gfm until the end of the
venue's day, week or month, when the venue cancels it. Market orders take
none.

Without --idempotency-key the create is sent once under a random id and never
retried. An outcome that stays unknown exits 5 and prints the client_order_id,
so a person can look it up; so does a command stopped while it waits (Ctrl-C,
SIGTERM, or the SIGHUP of a closed terminal or ssh session).`,
		Args: noArgs,
		RunE: a.run(func(cmd *cobra.Command, _ []string) error {
			format, err := a.outputFormat()
			if err != nil {
				return err
			}
			req, err := f.request()
			if err != nil {
				return err
			}
			if err := checkKeyFlag("idempotency-key", key); err != nil {
				return err
			}
			if err := checkKeyFlag("namespace", namespace); err != nil {
				return err
			}
			limits, err := a.limits()
			if err != nil {
				return err
			}
			if key == "" {
				fmt.Fprintln(a.opts.Stderr, "tradewire: no --idempotency-key: the create is sent once and will not be retried")
			}
			ctx := cmd.Context()
			p, _, closeStore, err := a.placer(ctx, namespace, limits)
			if err != nil {
				return err
			}
			defer closeStore()
			o, err := p.Place(ctx, key, req)
			var ae *broker.ArgumentError
			if errors.As(err, &ae) {
				// The pair's rules, which Place checks before anything is sent.
				field := ae.Field[strings.IndexByte(ae.Field, '.')+1:] // after "limit_order_config."
				return usagef("%s: %s; the venue would refuse it (see tradewire preview); the create was not sent", flagForField(field), ae.Reason)
			}
			if err != nil {
				return err
			}
			return orderReport(o).write(a.opts.Stdout, format)
		}),
	}
	f.add(cmd)
	cmd.Flags().StringVar(&key, "idempotency-key", "", "the caller's key: the same key names the same order, forever (compared byte for byte: no control characters, surrounding spaces or text not in Unicode NFC)")
	cmd.Flags().StringVar(&namespace, "namespace", "", "a namespace for keys, such as a strategy name")
	return cmd
}

// checkKeyFlag refuses a key (or namespace: it derives the
// client_order_id as the key does) that idempotency.CheckKey refuses,
// before anything is opened or sent. The key is not echoed: the byte
// offset says where it is wrong.
func checkKeyFlag(flag, key string) error {
	var ke *idempotency.KeyError
	if err := idempotency.CheckKey(key); errors.As(err, &ke) {
		return usagef("--%s: %s at byte %d; keys are compared byte for byte, so pass the exact text meant (nothing was sent)", flag, ke.Reason, ke.Offset)
	} else if err != nil {
		return usagef("--%s: %v (nothing was sent)", flag, err)
	}
	return nil
}

func newOrderCancelCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "cancel ID",
		Short: "Ask the venue to cancel an order",
		Long: `Ask the venue to cancel an order. The venue answers with the order, usually
still open: it settles about a second later. An unknown id exits 3; an order
that cannot be canceled exits 6.`,
		Args: oneArg("order cancel", "order ID,"),
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			return a.read(cmd, readSpec{fetch: func(ctx context.Context, q *readQuery) (*report, error) {
				o, err := q.c.CancelOrder(ctx, strings.TrimSpace(args[0]))
				switch {
				case err != nil:
					return nil, err
				case o != nil:
					return orderReport(o), nil
				}
				_, err = io.WriteString(a.opts.Stdout, "cancel requested\n")
				return nil, err
			}})
		}),
	}
}

// intentJSON is an intent in the output of "intents" and "recover".
type intentJSON struct {
	ClientOrderID string `json:"client_order_id"`
	Key           string `json:"key"`
	Namespace     string `json:"namespace"`
	AccountNumber string `json:"account_number"`
	Symbol        string `json:"symbol"`
	State         string `json:"state"`
	OrderID       string `json:"order_id"`
	Sends         int    `json:"sends"`
	CreatedAt     string `json:"created_at"`
	FirstSentAt   string `json:"first_sent_at"`
	LastSignedAt  string `json:"last_signed_at"`
	Reason        string `json:"reason"`
}

var intentHeader = []string{"client_order_id", "key", "namespace", "account_number", "symbol", "state", "order_id", "sends",
	"created_at", "first_sent_at", "last_signed_at", "reason"}

func intentView(r idempotency.Record) intentJSON {
	return intentJSON{
		ClientOrderID: r.ClientOrderID, Key: r.Key, Namespace: r.Namespace, AccountNumber: r.AccountNumber, Symbol: r.Symbol,
		State: string(r.State), OrderID: r.OrderID, Sends: r.Sends, CreatedAt: stamp(r.CreatedAt),
		FirstSentAt: stamp(r.FirstSentAt), LastSignedAt: stamp(r.LastSignedAt), Reason: r.Reason,
	}
}

func (j intentJSON) row() []string {
	return []string{j.ClientOrderID, j.Key, j.Namespace, j.AccountNumber, j.Symbol, j.State, j.OrderID, fmt.Sprint(j.Sends),
		j.CreatedAt, j.FirstSentAt, j.LastSignedAt, j.Reason}
}

func intentsReport(recs []idempotency.Record) *report {
	items := make([]intentJSON, 0, len(recs))
	t := table{header: intentHeader}
	for _, r := range recs {
		j := intentView(r)
		items = append(items, j)
		t.rows = append(t.rows, j.row())
	}
	return listReport(items, t)
}

var intentStates = []idempotency.State{idempotency.Pending, idempotency.Unknown, idempotency.Acknowledged, idempotency.Rejected, idempotency.NotPlaced}

func newIntentsCmd(a *app) *cobra.Command {
	var states []string
	cmd := &cobra.Command{
		Use:   "intents",
		Short: "List what the intent store holds",
		Long: `List the intents in the store: every create order placement recorded, with
its client_order_id, state (pending, unknown, acknowledged, rejected,
not_placed), sends and signature times. Nothing is sent to the venue.`,
		Args: noArgs,
		RunE: a.run(func(cmd *cobra.Command, _ []string) error {
			format, err := a.outputFormat()
			if err != nil {
				return err
			}
			var want []idempotency.State
			for _, s := range states {
				st := idempotency.State(strings.TrimSpace(s))
				if !containsState(st) {
					return usagef("--state %q: want one of pending, unknown, acknowledged, rejected, not_placed", s)
				}
				want = append(want, st)
			}
			store, err := a.intentStore(cmd.Context(), a.accountNumber)
			if err != nil {
				return err
			}
			defer store.Close()
			recs, err := store.List(cmd.Context(), want...)
			if err != nil {
				return err
			}
			return intentsReport(recs).write(a.opts.Stdout, format)
		}),
	}
	cmd.Flags().StringSliceVar(&states, "state", nil, "only intents in these states (repeat or comma-separate)")
	return cmd
}

func containsState(s idempotency.State) bool {
	for _, st := range intentStates {
		if s == st {
			return true
		}
	}
	return false
}

func newRecoverCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "recover",
		Short: "Settle every open intent by lookup, placing nothing",
		Long: `Settle every pending or unknown intent in the store by looking its order up:
acknowledged when found; not placed when absent once every signature it was
sent with has expired (it waits for that). It never places anything. Run it
at start-up. Intents it could not settle exit 5.`,
		Args: noArgs,
		RunE: a.run(func(cmd *cobra.Command, _ []string) error {
			format, err := a.outputFormat()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			p, _, closeStore, err := a.placer(ctx, "", broker.Limits{})
			if err != nil {
				return err
			}
			defer closeStore()
			rep, err := p.Recover(ctx)
			if err != nil {
				return err
			}
			var all []idempotency.Record
			for _, group := range [][]idempotency.Record{rep.Acknowledged, rep.Rejected, rep.NotPlaced, rep.Unresolved} {
				all = append(all, group...)
			}
			if err := intentsReport(all).write(a.opts.Stdout, format); err != nil {
				return err
			}
			if n := len(rep.Unresolved); n > 0 {
				first := rep.Unresolved[0]
				return fmt.Errorf("recover: %d intent(s) could not be settled, such as client_order_id %s (key %q: it may have been placed; do not place it under a new key): %w; run recover again",
					n, first.ClientOrderID, first.Key, broker.ErrUnknownOutcome)
			}
			return nil
		}),
	}
}

// orderReport is one order for every output format.
func orderReport(o *broker.Order) *report {
	row := orderCSVRow(o)
	r := &report{json: o, csv: table{header: orderCSVHeader, rows: [][]string{row}}}
	for i, h := range orderCSVHeader {
		if h != "executions" {
			r.fields = append(r.fields, [2]string{h, row[i]})
		}
	}
	ex := table{title: "executions", header: []string{"timestamp", "quantity", "effective_price"}}
	for _, e := range o.Executions {
		ex.rows = append(ex.rows, []string{stamp(e.Timestamp), dec(e.Quantity), dec(e.EffectivePrice)})
	}
	r.tables = []table{ex}
	return r
}
