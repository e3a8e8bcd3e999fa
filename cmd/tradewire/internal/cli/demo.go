package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/shopspring/decimal"
	"github.com/spf13/cobra"

	"github.com/tradewire/tradewire/broker"
	"github.com/tradewire/tradewire/broker/brokertest"
	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/internal/wire"
	"github.com/tradewire/tradewire/orders"
	"github.com/tradewire/tradewire/signing"
	"github.com/tradewire/tradewire/transport"
	"github.com/tradewire/tradewire/venue"
)

// demoStart is fixed, so that the narration depends on the seed alone.
var demoStart = time.Date(2026, time.March, 2, 14, 30, 0, 0, time.UTC)

const (
	demoPerMinute, demoBurst = 60, 10
	demoSymbol               = "BTC-USD"
	demoWallTimeTag          = "wall time:"
)

// demoChapters is the tour. A chapter fails through check and must.
var demoChapters = []func(ctx context.Context, d *demoRun){
	demoSignedReads, demoServerErrorStorm, demoThrottle, demoLostAnswer, demoRefusedCreate, demoFeeSummary, demoPreview,
}

// The demo's wires: HTTPS + HTTP/2, as the real venue is served (the
// default), or plain HTTP/1.1; both on loopback.
const (
	demoWireTLS  = "tls"
	demoWireHTTP = "http"
)

func newDemoCmd(a *app) *cobra.Command {
	var wire string
	cmd := &cobra.Command{
		Use:   "demo [--seed N] [--wire tls|http]",
		Short: "A narrated tour on the embedded simulated venue, faults switched on",
		Long: "A narrated tour of package broker on a simulated venue served over HTTPS + HTTP/2 on loopback, as the real\n" +
			"venue is served (--wire http: plain HTTP/1.1 on loopback), misbehaving on cue. No credentials, no network,\n" +
			"and the same output for the same --seed and --wire.",
		Args: noArgs,
		RunE: a.run(func(cmd *cobra.Command, _ []string) error {
			if err := a.checkSimFlags(true); err != nil {
				return err
			}
			if wire != demoWireTLS && wire != demoWireHTTP {
				return usagef("--wire %q: want %s (HTTPS + HTTP/2) or %s (plain HTTP/1.1)", wire, demoWireTLS, demoWireHTTP)
			}
			return runDemo(cmd.Context(), a.opts.Stdout, a.flags.seed, wire)
		}),
	}
	cmd.Flags().StringVar(&wire, "wire", demoWireTLS, "how the demo's client reaches its venue on loopback: tls (HTTPS + HTTP/2, as the real venue) or http (plain HTTP/1.1)")
	return cmd
}

// demoRun is the state the chapters share.
type demoRun struct {
	demoWriter
	seed     int64
	wire     string // demoWireTLS or demoWireHTTP
	chapters int    // printed so far
	clock    venue.Clock
	venue    *brokertest.Server
	store    idempotency.Store // the intent store every client of the venue shares
	b        *broker.Client
	bid      decimal.Decimal // read in chapter 1
	mu       sync.Mutex      // guards seen
	seen     []seenAttempt   // reported by the transport's observer since the last take
}

// seenAttempt is one attempt, when it ended, and the wait before it.
type seenAttempt struct {
	transport.Attempt
	end  time.Time
	wait time.Duration
}

// demoFailure carries an error to runDemo, so that a chapter reads as a script.
type demoFailure struct{ err error }

func check(err error) {
	if err != nil {
		panic(demoFailure{err})
	}
}

func must[T any](v T, err error) T { check(err); return v }

func runDemo(ctx context.Context, out io.Writer, seed int64, wire string) (err error) {
	wallStart := time.Now()
	d := &demoRun{demoWriter: demoWriter{w: out}, seed: seed, wire: wire, clock: skippingClock(demoStart)}
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(demoFailure)
			if !ok {
				panic(r)
			}
			err = fmt.Errorf("demo (chapter %d): %w", d.chapters, f.err)
		}
	}()
	dir := must(os.MkdirTemp("", "tradewire-demo-"))
	defer os.RemoveAll(dir)
	d.venue = d.newVenue(venue.Config{History: 40})
	defer d.venue.Close()
	d.store = must(idempotency.Open(filepath.Join(dir, "intents.db"), idempotency.Config{}))
	defer d.store.Close()
	d.b = must(d.newBroker(d.venue, nil))
	d.printf("tradewire demo: a scripted tour on the embedded simulated venue (seed %d)\n\n", seed)
	d.say("The venue runs in this process over %s on loopback, checks every signature and misbehaves on cue; its budget, "+
		"and the client's token bucket, is %d requests a minute in bursts of %d. \"attempt N\" lines come from the "+
		"transport's per-attempt observer.", d.wireName(), demoPerMinute, demoBurst)
	for _, ch := range demoChapters {
		ch(ctx, d)
	}
	d.venue.Close() // waits for the venue to record every request
	d.ledger()
	d.printf("\nsimulated time: %v\n", d.clock.Since(demoStart).Round(time.Millisecond))
	d.printf("%s %v\n", demoWallTimeTag, time.Since(wallStart).Round(time.Millisecond))
	return d.err
}

// newVenue starts a simulated venue on the demo's wire, clock, seed and
// budget, and the rest of cfg.
func (d *demoRun) newVenue(cfg venue.Config) *brokertest.Server {
	cfg.Clock, cfg.Seed = d.clock, d.seed
	cfg.RateLimits = venue.RateLimits{Account: venue.RateLimit{PerMinute: demoPerMinute, Burst: demoBurst}}
	if d.wire == demoWireHTTP {
		return brokertest.NewServer(cfg)
	}
	return brokertest.NewTLSServer(cfg)
}

// wireName is how the narration names the demo's wire.
func (d *demoRun) wireName() string {
	if d.wire == demoWireHTTP {
		return "plain HTTP/1.1"
	}
	return "HTTPS + HTTP/2"
}

// demoSkewMargin is the placement engine's margin past a signature's
// validity (orders.Config.SkewMargin's default).
const demoSkewMargin = 10 * time.Second

// newBroker returns a client of srv on the demo's clock and store, observed by d.record.
func (d *demoRun) newBroker(srv *brokertest.Server, tweak func(*transport.Config)) (*broker.Client, error) {
	key, err := demoKey(srv)
	if err != nil {
		return nil, err
	}
	t := transport.Config{RoundTripper: srv.Client().Transport, Clock: d.clock, RatePerMinute: demoPerMinute, Burst: demoBurst, Observer: d.record}
	if tweak != nil {
		tweak(&t)
	}
	return broker.New(broker.Config{APIKey: srv.APIKey, PrivateKey: key, BaseURL: srv.URL,
		IntentStore: d.store, Orders: orders.Config{Namespace: "demo"}, Transport: t})
}

// record is the observer; a retry's wait runs from the last attempt's end to its signature.
func (d *demoRun) record(a transport.Attempt) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := seenAttempt{Attempt: a, end: d.clock.Now()}
	if n := len(d.seen); n > 0 && a.Number > 1 {
		s.wait = s.end.Add(-a.Elapsed).Sub(d.seen[n-1].end)
	}
	d.seen = append(d.seen, s)
}

// take returns the attempts reported since the last take, printing them if narrate.
func (d *demoRun) take(narrate bool) []seenAttempt {
	d.mu.Lock()
	seen := d.seen
	d.seen = nil
	d.mu.Unlock()
	for _, s := range seen {
		if narrate && s.Number == 1 {
			d.detail("attempt 1: %s %s -> %d over %s", s.Method, s.Path, s.Status, s.Proto)
		} else if narrate {
			d.detail("attempt %d, after waiting %v: %s %s -> %d", s.Number, s.wait.Round(time.Millisecond), s.Method, s.Path, s.Status)
		}
	}
	return seen
}

// count counts requests of seen sent with method to path, or attempts answered status.
func count(seen []seenAttempt, method, path string, status int) int {
	n := 0
	for _, s := range seen {
		if method == "" && s.Status == status || s.Method == method && s.Path == path && s.Number == 1 {
			n++
		}
	}
	return n
}

func (d *demoRun) chapter(title string) {
	d.chapters++
	d.printf("\n== %d. %s ==\n", d.chapters, title)
}

func demoSignedReads(ctx context.Context, d *demoRun) {
	d.chapter("Signed reads")
	d.say("Every attempt is signed afresh: Ed25519 over api_key + timestamp + path + METHOD + body, valid for 30 s. " +
		"Money is decoded to decimal.Decimal, never through float64.")
	acct := must(d.b.Account(ctx))
	holdings := must(broker.Collect(d.b.Holdings(ctx, nil)))
	q := must(d.b.BestBidAsk(ctx, demoSymbol))[0]
	d.take(true)
	d.detail("account %s: buying power %s %s, fee ratio %s, 30-day volume %s", acct.AccountNumber,
		acct.BuyingPower, acct.BuyingPowerCurrency, acct.FeeTier.FeeRatio, acct.FeeTier.ThirtyDayVolume)
	var held []string
	for _, h := range holdings {
		held = append(held, h.AssetCode+" "+h.TotalQuantity.String())
	}
	d.detail("holdings: %s", strings.Join(held, ", "))
	d.detail("%s: bid %s, ask %s", q.Symbol, q.Bid, q.Ask)
	d.bid = q.Bid
}

func demoServerErrorStorm(ctx context.Context, d *demoRun) {
	d.chapter("A 5xx storm, ridden out by retries")
	d.say("The venue is told to answer the next two market-data reads with 503 Service Unavailable.")
	check(d.venue.Inject(venue.Fault{Kind: "respond", Method: http.MethodGet,
		Path: wire.PathBestBidAsk, Times: 2, Status: http.StatusServiceUnavailable}))
	before := d.clock.Now()
	must(d.b.BestBidAsk(ctx, demoSymbol))
	d.say("BestBidAsk returned the quote on attempt %d, %v after the first. A GET has no effect to duplicate, so 429, "+
		"500, 502, 503, 504 are retried: 4 attempts, backoff doubling from 0.5 s to at most 8 s, each signed afresh.",
		len(d.take(true)), d.clock.Since(before))
}

func demoThrottle(ctx context.Context, d *demoRun) {
	d.chapter("A 429 storm, absorbed by the throttle")
	d.say("25 account reads are fired back to back, more than the venue's burst of %d.", demoBurst)
	held, waited := d.burst(ctx, d.b)
	seen := d.take(false)
	d.detail("client: 25 reads, %d sent at once, %d held back by its token bucket for %v in all; attempts: %d, answered 429: %d",
		25-held, held, waited.Round(time.Millisecond), len(seen), count(seen, "", "", 429))
	other := d.newVenue(venue.Config{})
	defer other.Close()
	d.burst(ctx, must(d.newBroker(other, func(t *transport.Config) { t.RatePerMinute = -1 })))
	seen = d.take(false)
	d.say("The bucket spaced the burst out itself. The same burst with the bucket off, on a second venue:")
	d.detail("client: 25 reads took %d attempts, %d answered 429 and retried after a backoff", len(seen), count(seen, "", "", 429))
	d.say("Next, the venue answers an accounts read with 429 and \"Retry-After: 120\".")
	check(d.venue.Inject(venue.Fault{Kind: "respond", Method: http.MethodGet, Path: wire.PathAccounts,
		Status: http.StatusTooManyRequests, Header: map[string]string{"Retry-After": "120"}}))
	before := d.clock.Now()
	must(d.b.Account(ctx))
	d.say("Retry-After was clamped to the 8 s cap: the read succeeded on attempt %d, %v later. A 429 also pauses the "+
		"whole client, so other requests do not pile onto a venue that already said no.", len(d.take(true)), d.clock.Since(before))
}

// burst reads the account 25 times, and says how many reads waited, and how long.
func (d *demoRun) burst(ctx context.Context, b *broker.Client) (held int, waited time.Duration) {
	for range 25 {
		before := d.clock.Now()
		must(b.Account(ctx))
		if w := d.clock.Since(before); w > 0 {
			held, waited = held+1, waited+w
		}
	}
	return held, waited
}

// restingBuy is a limit buy at half the bid: it rests and never fills.
func (d *demoRun) restingBuy() broker.OrderRequest {
	return broker.OrderRequest{Symbol: demoSymbol, Side: broker.SideBuy, Type: broker.TypeLimit,
		AssetQuantity: decimal.RequireFromString("0.0001"), LimitPrice: d.bid.Div(decimal.NewFromInt(2)).Round(2)}
}

// placed narrates the attempts since the last take and their outcome; it returns the creates' times.
func (d *demoRun) placed(key, outcome string, args ...any) (creates []time.Time) {
	seen := d.take(true)
	for _, s := range seen {
		if s.Method == http.MethodPost && s.Path == wire.PathOrders {
			creates = append(creates, s.end.Add(-s.Elapsed))
		}
	}
	d.detail(outcome, args...)
	id := d.b.ClientOrderID(key)
	d.detail("creates sent: %d; lookups: %d; orders at the venue with client_order_id %s: %d", len(creates),
		count(seen, http.MethodGet, wire.PathOrders, 0), id, len(d.venue.Ledger().OrdersByClientID(id)))
	return creates
}

func demoLostAnswer(ctx context.Context, d *demoRun) {
	d.chapter("A create whose answer is lost, never sent twice")
	req := d.restingBuy()
	d.say("Place(ctx, key, req) derives the client_order_id from the key, records the intent, and after an ambiguous "+
		"answer looks the order up before any resend. A limit buy of %s %s at %s, half the bid: the venue commits it "+
		"and loses its answer, replying 503.", req.AssetQuantity, demoSymbol, req.LimitPrice)
	lost := venue.Fault{Kind: "lose_response", Method: http.MethodPost, Path: wire.PathOrders, Status: 503}
	check(d.venue.Inject(lost))
	o := must(d.b.Place(ctx, "entry-1", req))
	d.placed("entry-1", "Place(key %q) -> order %s, state %s", "entry-1", o.ID, o.State)
	d.say("A 5xx on a create is not a refusal. The transport never sends a POST twice; Place listed the orders created " +
		"since the send and found this one. Now key \"entry-2\", and the venue's order list answers 503 too.")
	check(d.venue.Inject(lost, venue.Fault{Kind: "respond", Method: http.MethodGet, Path: wire.PathOrders,
		Times: 4, Status: http.StatusServiceUnavailable}))
	_, err := d.b.Place(ctx, "entry-2", req)
	d.placed("entry-2", "Place(key %q) -> unknown outcome: %t; %v", "entry-2", errors.Is(err, broker.ErrUnknownOutcome), err)
	d.say("Place says it cannot know (ErrUnknownOutcome; the CLI exits 5) rather than guess. The bot restarts: a new " +
		"Client on the same intent store runs Recover, which settles open intents by lookup alone.")
	b2 := must(d.newBroker(d.venue, nil)) // its store is d.store: Close would close nothing
	rep := must(b2.Recover(ctx))
	d.placed("entry-2", "Recover -> acknowledged %d, not placed %d, unresolved %d", len(rep.Acknowledged), len(rep.NotPlaced), len(rep.Unresolved))
	o = must(b2.OrderByKey(ctx, "entry-2"))
	d.placed("entry-2", "OrderByKey(%q) -> order %s, state %s", "entry-2", o.ID, o.State)
}

func demoRefusedCreate(ctx context.Context, d *demoRun) {
	d.chapter("A refused create, sent again only once it cannot land")
	d.say("The venue refuses the next create with 503 before committing it, and would create a second order on a resend.")
	check(d.venue.SetFaultPlan(venue.FaultPlan{Duplicate: venue.CreateSecond,
		Faults: []venue.Fault{{Kind: "respond", Method: http.MethodPost, Path: wire.PathOrders, Status: 503}}}))
	defer d.venue.SetFaultPlan(venue.FaultPlan{Duplicate: venue.ReturnOriginal})
	o := must(d.b.Place(ctx, "entry-3", d.restingBuy()))
	creates := d.placed("entry-3", "Place(key %q) -> order %s, state %s", "entry-3", o.ID, o.State)
	if len(creates) != 2 {
		check(fmt.Errorf("%d creates sent, want 2", len(creates)))
	}
	off, _ := d.b.Transport().ClockOffset()
	d.say("The lookup found nothing, but the first signature was valid for %v: it could still land. Place waited until "+
		"it had expired on the venue's clock (from the Date headers: %v from ours, to the second) plus %v, looked again, and only then "+
		"sent the same bytes, %v after the first. Even this venue holds one order.", signing.ValidFor, off,
		demoSkewMargin, creates[1].Sub(creates[0]).Round(time.Second))
	c := must(d.b.CancelOrder(ctx, o.ID))
	d.placed("entry-3", "CancelOrder(%s) -> state %s", o.ID, c.State)
	d.clock.Sleep(2 * time.Second) // the venue settles a cancel about a second later
	o = must(d.b.Place(ctx, "entry-3", d.restingBuy()))
	d.placed("entry-3", "Place(key %q) again, 2s later -> order %s, state %s", "entry-3", o.ID, o.State)
	d.say("Placing again under an acknowledged key sends no create and returns the order read afresh, canceled since: " +
		"after a crash, a timeout or a restart, a bot simply calls Place again.")
}

func demoFeeSummary(ctx context.Context, d *demoRun) {
	d.chapter("A fee summary over the seeded history")
	d.say("The venue has no \"fees paid\" total. FeeSummary reads the fee tier, then every page of the orders that " +
		"existed at its instant and were updated in the last 30 days (no state filter: a GTC order filled today paid " +
		"today), then catches up with the orders that changed or appeared meanwhile: exact as of its end.")
	before := d.clock.Now()
	r := must(d.b.FeeSummary(ctx, 30*24*time.Hour))
	took, seen := d.clock.Since(before), d.take(true)
	d.detail("window (updated_at): %s to %s; fee ratio %s, 30-day volume %s", stamp(r.Start), stamp(r.End), r.FeeRatio, r.ThirtyDayVolume)
	d.detail("total fees %s on %d orders; filled notional %s; effective fee rate %s", r.TotalFees, r.Orders, r.FilledNotional, r.EffectiveFeeRate)
	for _, s := range r.BySymbol {
		d.detail("  %-8s %2d orders, fees %s on notional %s", s.Symbol, s.Orders, s.TotalFees, s.FilledNotional)
	}
	d.detail("requests: %d = 1 accounts read + %d %s of orders with the catch-up read; 429 answers: %d", len(seen), r.Pages,
		plural(r.Pages, "page", "pages"), count(seen, "", "", http.StatusTooManyRequests))
	d.say("The %d orders, the demo's own among them, were read in %v of simulated time; the catch-up found the "+
		"demo's newest orders and read once more to see them settled. Past the page cap FeeSummary fails rather "+
		"than under-report, unless called with AllowPartial.", r.Orders, took)
}

func demoPreview(ctx context.Context, d *demoRun) {
	d.chapter("Previews: estimates, and refusals made offline")
	d.say("Preview reads the trading pair (cached) and the estimated price, and checks the order against every rule " +
		"of the pair. Nothing is placed, and every figure is an estimate.")
	for _, qty := range []string{"0.0001", "0.000000015", "0.000123456789"} {
		p := must(d.b.Preview(ctx, broker.OrderRequest{Symbol: demoSymbol, Side: broker.SideBuy, Type: broker.TypeMarket,
			AssetQuantity: decimal.RequireFromString(qty)}))
		d.detail("market buy %s %s: ESTIMATE price %s, notional %s, fee %s, total cost %s; violations: %d",
			qty, demoSymbol, p.Price, p.Notional, p.Fee, p.Total, len(p.Violations))
		for _, v := range p.Violations {
			d.detail("  %s on %s: %s", v.Code, v.Field, v.Detail)
		}
		if len(p.Violations) > 0 {
			d.detail("  suggested quantity: %s", cmp.Or(decOrEmpty(p.SuggestedQuantity), "none (rounding down cannot reach the minimum)"))
		}
	}
	seen := d.take(false)
	d.detail("requests: %d, of which trading-pair reads: %d (the pair is cached)", len(seen),
		count(seen, http.MethodGet, wire.PathTradingPairs, 0))
	bad := broker.OrderRequest{Symbol: "btc-usd", Side: broker.SideBuy, Type: broker.TypeMarket, AssetQuantity: decimal.New(1, -4)}
	_, perr := d.b.Preview(ctx, bad)
	_, err := d.b.Place(ctx, "bad", bad)
	d.detail("Preview and Place of %s: ErrInvalidRequest: %t and %t; requests: %d; %v", bad.Symbol,
		errors.Is(perr, broker.ErrInvalidRequest), errors.Is(err, broker.ErrInvalidRequest), len(d.take(false)), err)
	d.say("A preview reports every violation at once and never changes the request. Preview and Place share one " +
		"offline check: a request that cannot be valid is refused before anything is sent.")
}

func (d *demoRun) ledger() {
	l := d.venue.Ledger()
	c := l.Counts()
	d.printf("\n== The venue's ledger ==\nEverything the venue received and created (the second venue of chapter 3 aside):\n")
	d.detail("requests: %d; by status: %s", c.Total, byStatus(c.ByStatus))
	d.detail("401 answers (bad signatures): %d; 429 answers: %d; dropped connections: %d", c.Unauthorized, c.Throttled, c.Dropped)
	d.detail("orders created: %d; client_order_ids used twice: %d", c.Creates, len(l.DuplicateClientIDs()))
	for _, o := range l.Orders() {
		d.detail("order %s: client_order_id %s, orders with it: %d", o.ID, o.ClientOrderID, len(l.OrdersByClientID(o.ClientOrderID)))
	}
}

// demoWriter prints the narration and keeps the first write error.
type demoWriter struct {
	w   io.Writer
	err error
}

func (w *demoWriter) printf(format string, args ...any) {
	if w.err == nil {
		_, w.err = fmt.Fprintf(w.w, format, args...)
	}
}

// say prints prose, wrapped at 100 columns.
func (w *demoWriter) say(format string, args ...any) {
	line := ""
	for _, word := range strings.Fields(fmt.Sprintf(format, args...)) {
		if line != "" && len(line)+1+len(word) > 100 {
			w.printf("%s\n", line)
			line = ""
		}
		line = strings.TrimPrefix(line+" "+word, " ")
	}
	w.printf("%s\n", line)
}

// detail prints one indented line of what happened.
func (w *demoWriter) detail(format string, args ...any) { w.printf("    "+format+"\n", args...) }
