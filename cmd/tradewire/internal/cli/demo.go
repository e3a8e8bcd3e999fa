package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"
	"github.com/shopspring/decimal"
	"github.com/spf13/cobra"

	"github.com/tradewire/tradewire/broker/brokertest"
	"github.com/tradewire/tradewire/internal/skipclock"
	"github.com/tradewire/tradewire/transport"
)

// The demo's fixed setting. The clock starts at a fixed instant, so that
// prices, ids, the seeded history and so the whole narration are the same
// on every run with the same seed. The venue's budget is smaller than the
// real one's (100 a minute, bursts of 300) so that a burst of a few dozen
// requests runs into it; the client's token bucket is set to the same.
var demoStart = time.Date(2026, time.March, 2, 14, 30, 0, 0, time.UTC)

const (
	demoRatePerMinute = 60
	demoBurst         = 10
	demoHistory       = 40
	demoSymbol        = "BTC-USD"
	demoBurstSize     = 25

	pathAccounts    = "/api/v2/crypto/trading/accounts/"
	pathHoldings    = "/api/v2/crypto/trading/holdings/"
	pathBestBidAsk  = "/api/v2/crypto/marketdata/best_bid_ask/"
	pathOrders      = "/api/v2/crypto/trading/orders/"
	demoWallTimeTag = "wall time:"
)

// demoChapter is one scene of the tour. run narrates what it does through
// d.say and leaves the venue ready for the next chapter; an error ends the
// demo.
type demoChapter struct {
	title string
	run   func(ctx context.Context, d *demoRun) error
}

// demoChapters is the tour, in order. Add a chapter by appending it here.
func demoChapters() []demoChapter {
	return []demoChapter{
		{"Signed reads", demoSignedReads},
		{"A 5xx storm, ridden out by retries", demoServerErrorStorm},
		{"A 429 storm, absorbed by the throttle", demoThrottle},
		{"A create that is never sent twice", demoUnknownOutcome},
		{"A fee summary over the seeded history", demoFeeSummary},
		{"Previews: estimates, and refusals made offline", demoPreview},
		{"Idempotent placement: exactly one order, whatever the venue does", demoIdempotentPlacement},
	}
}

func newDemoCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "demo [--seed N]",
		Short: "A narrated tour on the in-memory simulated venue, faults switched on",
		Long: `A narrated, scripted tour of what tradewire does, run against an in-memory
simulated venue with its faults switched on: signed reads, a 5xx storm ridden
out by retries, a 429 storm absorbed by the throttle, a create whose answer is
lost and that is never sent twice, a fee summary over the seeded history,
order previews that refuse bad orders offline, and idempotent placement that
reconciles lost answers into exactly one order. It ends with the venue's ledger:
every request it received, by status, and every order created.

No credentials and no network are needed, and no time is spent waiting: the
venue and the client share a simulated clock that jumps ahead whenever the
client waits. The output is the same on every run with the same --seed,
except the wall-time line.`,
		Args: noArgs,
		RunE: a.run(func(cmd *cobra.Command, _ []string) error {
			if err := a.checkSimFlags(true); err != nil {
				return err
			}
			return runDemo(cmd.Context(), a.opts.Stdout, a.flags.seed)
		}),
	}
	return cmd
}

// demoRun is the state a demo shares between its chapters.
type demoRun struct {
	w       *demoWriter
	seed    int64
	clock   *skipclock.Clock
	venue   *brokertest.Server
	client  *transport.Client
	log     *attemptLog
	account string
	// bid and ask are the best bid and ask read in chapter 1, as sent.
	bid, ask string
}

// runDemo plays every chapter against a fresh in-memory venue and prints
// the ledger's counts.
func runDemo(ctx context.Context, out io.Writer, seed int64) error {
	wallStart := time.Now()
	d, err := newDemoRun(out, seed)
	if err != nil {
		return err
	}
	defer d.venue.Close()
	d.w.printf("tradewire demo: a scripted tour on the embedded simulated venue (seed %d)\n\n", seed)
	d.w.say("No credentials and no network: the venue runs inside this process, served over TLS + HTTP/2 " +
		"on a loopback port as the real one is, checks every " +
		"signature as the real one does, and misbehaves on cue. Its budget is " +
		fmt.Sprintf("%d requests a minute in bursts of %d; the client's token bucket is set to the same, refilling 1%% under the rate so that it never meets the limit exactly. ", demoRatePerMinute, demoBurst) +
		"The venue and the client share a simulated clock, so waits cost no wall time.")
	for i, ch := range demoChapters() {
		d.w.printf("\n== %d. %s ==\n", i+1, ch.title)
		if err := ch.run(ctx, d); err != nil {
			return fmt.Errorf("demo: chapter %d (%s): %w", i+1, ch.title, err)
		}
	}
	d.ledger()
	d.w.printf("\nsimulated time: %v\n", d.clock.Since(demoStart).Round(time.Millisecond))
	d.w.printf("%s %v\n", demoWallTimeTag, time.Since(wallStart).Round(time.Millisecond))
	return d.w.err
}

func newDemoRun(out io.Writer, seed int64) (*demoRun, error) {
	clk := skipclock.New(demoStart)
	// Served over TLS + HTTP/2 on a loopback port, as the real venue is.
	srv := brokertest.NewTLSServer(
		brokertest.WithClock(clk),
		brokertest.WithSeed(seed),
		brokertest.WithHistory(demoHistory),
		brokertest.WithRateLimit(demoRatePerMinute, demoBurst),
	)
	d := &demoRun{w: &demoWriter{w: out}, seed: seed, clock: clk, venue: srv, log: &attemptLog{}, account: srv.AccountNumber}
	var err error
	if d.client, err = d.newClient(srv, transport.WithRateLimit(demoRatePerMinute, demoBurst)); err != nil {
		srv.Close()
		return nil, err
	}
	return d, nil
}

// newClient returns a transport client for srv on the demo's clock, with
// the default retry policy, logging every attempt to d.log.
func (d *demoRun) newClient(srv *brokertest.Server, opts ...transport.Option) (*transport.Client, error) {
	signer, err := demoSigner(srv)
	if err != nil {
		return nil, err
	}
	opts = append([]transport.Option{
		transport.WithClock(d.clock),
		transport.WithHTTPClient(srv.Client()),
		transport.WithLogger(zerolog.New(d.log).Level(zerolog.DebugLevel)),
	}, opts...)
	c, err := transport.New(srv.URL, signer, opts...)
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	return c, nil
}

// ---- Chapter 1 ----

func demoSignedReads(ctx context.Context, d *demoRun) error {
	d.w.say("Every request carries x-api-key, x-timestamp and x-signature: an Ed25519 signature over " +
		"api_key + timestamp + path + METHOD + body, valid for 30 s, made afresh for each attempt.")

	var accounts struct {
		Results []struct {
			AccountNumber string      `json:"account_number"`
			BuyingPower   decimalText `json:"buying_power"`
			Currency      string      `json:"buying_power_currency"`
			FeeTier       struct {
				FeeRatio decimalText `json:"fee_ratio"`
				Volume   decimalText `json:"thirty_day_volume"`
			} `json:"fee_tier_status"`
		} `json:"results"`
	}
	if err := d.getJSON(ctx, pathAccounts, &accounts); err != nil {
		return err
	}
	if len(accounts.Results) == 0 {
		return errors.New("the venue listed no account")
	}
	acct := accounts.Results[0]
	d.w.detail("account %s: buying power %s %s, fee ratio %s, 30-day volume %s",
		acct.AccountNumber, acct.BuyingPower, acct.Currency, acct.FeeTier.FeeRatio, acct.FeeTier.Volume)

	var holdings struct {
		Results []struct {
			Asset    string      `json:"asset_code"`
			Quantity decimalText `json:"total_quantity"`
		} `json:"results"`
	}
	if err := d.getJSON(ctx, pathHoldings+"?account_number="+url.QueryEscape(d.account), &holdings); err != nil {
		return err
	}
	var held []string
	for _, h := range holdings.Results {
		held = append(held, fmt.Sprintf("%s %s", h.Asset, h.Quantity))
	}
	d.w.detail("holdings: %s", strings.Join(held, ", "))

	bid, ask, err := d.bestBidAsk(ctx)
	if err != nil {
		return err
	}
	d.bid, d.ask = bid, ask
	d.w.detail("%s: bid %s, ask %s", demoSymbol, bid, ask)

	reqs := d.venue.Ledger().Requests()
	valid := 0
	for _, r := range reqs {
		if r.SignatureValid {
			valid++
		}
	}
	d.w.say(fmt.Sprintf("The venue checked %d signatures and accepted %d. Money arrives as quoted strings or bare "+
		"numbers, even within one object; tradewire keeps it as decimal text and never passes it through float64.", len(reqs), valid))
	return nil
}

// ---- Chapter 2 ----

func demoServerErrorStorm(ctx context.Context, d *demoRun) error {
	if err := d.venue.Inject(brokertest.Fault{
		Kind: brokertest.FaultRespond, Method: http.MethodGet, Path: pathBestBidAsk, Times: 2,
		Status: http.StatusServiceUnavailable,
		Body:   `{"type":"server_error","errors":[{"detail":"Service temporarily unavailable.","attr":null}]}`,
	}); err != nil {
		return err
	}
	d.w.say("The venue is told to answer the next two market-data reads with 503 Service Unavailable.")
	d.log.take()
	before := d.clock.Now()
	resp, err := d.client.Get(ctx, pathBestBidAsk+"?symbol="+demoSymbol)
	if err != nil {
		return err
	}
	for _, ev := range d.log.take() {
		d.w.detail("%s", ev)
	}
	d.w.say(fmt.Sprintf("The GET succeeded on attempt %d, %v after the first send. A GET has no effect to duplicate, "+
		"so 429 and 500, 502, 503, 504 are retried: up to 4 attempts, waiting 0.5 s, 1 s, 2 s (doubling, capped at 8 s). "+
		"Each attempt was signed again with the clock's current time and sent the same bytes.",
		resp.Attempts, d.clock.Since(before)))
	return nil
}

// ---- Chapter 3 ----

func demoThrottle(ctx context.Context, d *demoRun) error {
	d.w.say(fmt.Sprintf("%d reads are fired back to back, more than the venue's burst of %d.", demoBurstSize, demoBurst))
	start := len(d.venue.Ledger().Requests())
	burst, err := d.burst(ctx, d.client, pathAccounts)
	if err != nil {
		return err
	}
	reqs := d.venue.Ledger().Requests()[start:]
	statuses := map[int]int{}
	for _, r := range reqs {
		statuses[r.Status]++
	}
	d.w.detail("client: %d requests, %d sent at once, %d held back by its token bucket for %v in all",
		demoBurstSize, demoBurstSize-burst.held, burst.held, burst.waited.Round(time.Millisecond))
	d.w.detail("venue: %d requests received, answered %s; 429 answers: %d", len(reqs), byStatus(statuses), statuses[http.StatusTooManyRequests])
	d.w.say("The client's bucket holds the venue's budget, so it spaced the burst out itself and the venue never had to say no.")

	// For contrast: the same burst from a client whose bucket is off,
	// against a fresh venue with the same budget.
	other := brokertest.NewTLSServer(brokertest.WithClock(d.clock), brokertest.WithSeed(d.seed),
		brokertest.WithRateLimit(demoRatePerMinute, demoBurst))
	defer other.Close()
	unthrottled, err := d.newClient(other, transport.WithRateLimit(0, 0))
	if err != nil {
		return err
	}
	if _, err := d.burst(ctx, unthrottled, pathAccounts); err != nil {
		return err
	}
	oc := other.Ledger().Counts()
	d.w.say("For contrast, the same burst from a client with its bucket off, against a second venue with the same budget:")
	d.w.detail("venue: %d requests received for the same %d reads, answered %s; 429 answers: %d (each retried after a backoff)",
		oc.Total, demoBurstSize, byStatus(oc.ByStatus), oc.Throttled)
	d.log.take()

	d.w.say("The real venue has never been seen to send Retry-After. This one is told to answer the next accounts read " +
		"with 429 and \"Retry-After: 120\".")
	if err := d.venue.Inject(brokertest.Fault{
		Kind: brokertest.FaultRespond, Method: http.MethodGet, Path: pathAccounts, Status: http.StatusTooManyRequests,
		Header: map[string]string{"Retry-After": "120"},
		Body:   `{"type":"client_error","errors":[{"detail":"Request was throttled.","attr":null}]}`,
	}); err != nil {
		return err
	}
	before := d.clock.Now()
	resp, err := d.client.Get(ctx, pathAccounts)
	if err != nil {
		return err
	}
	for _, ev := range d.log.take() {
		d.w.detail("%s", ev)
	}
	d.w.say(fmt.Sprintf("Retry-After was honoured but clamped to the 8 s cap: the read succeeded on attempt %d, %v later. "+
		"A 429 also pauses the whole client for that time, so other requests do not pile onto a venue that already said no.",
		resp.Attempts, d.clock.Since(before)))
	return nil
}

// burstResult is what one client did during a burst.
type burstResult struct {
	held   int           // requests that waited for the rate budget
	waited time.Duration // time spent waiting, retries' backoff included
}

// burst sends demoBurstSize GETs for target one after another.
func (d *demoRun) burst(ctx context.Context, c *transport.Client, target string) (burstResult, error) {
	var r burstResult
	for range demoBurstSize {
		before := d.clock.Now()
		if _, err := c.Get(ctx, target); err != nil {
			return r, err
		}
		if w := d.clock.Since(before); w > 0 {
			r.held++
			r.waited += w
		}
	}
	return r, nil
}

// ---- Chapter 4 ----

func demoUnknownOutcome(ctx context.Context, d *demoRun) error {
	bid, err := decimal.NewFromString(d.bid)
	if err != nil {
		return fmt.Errorf("bid %q: %w", d.bid, err)
	}
	price := bid.Div(decimal.NewFromInt(2)).Round(2).StringFixed(2)
	clientID := uuid.NewSHA1(uuid.NameSpaceURL, fmt.Appendf(nil, "tradewire demo seed %d chapter 4", d.seed)).String()
	type limitConfig struct {
		AssetQuantity string `json:"asset_quantity"`
		LimitPrice    string `json:"limit_price"`
		TimeInForce   string `json:"time_in_force"`
	}
	body, err := json.Marshal(struct {
		ClientOrderID string      `json:"client_order_id"`
		Side          string      `json:"side"`
		Type          string      `json:"type"`
		Symbol        string      `json:"symbol"`
		Limit         limitConfig `json:"limit_order_config"`
	}{clientID, "buy", "limit", demoSymbol, limitConfig{"0.0001", price, "gtc"}})
	if err != nil {
		return err
	}
	d.w.say(fmt.Sprintf("A limit buy of 0.0001 %s at %s, half the bid, so it rests and never fills, with client_order_id %s. "+
		"The venue is told to commit the next create and then lose its answer, replying 503 instead.", demoSymbol, price, clientID))
	if err := d.venue.Inject(brokertest.Fault{
		Kind: brokertest.FaultLoseResponse, Method: http.MethodPost, Path: pathOrders, Status: http.StatusServiceUnavailable,
	}); err != nil {
		return err
	}
	start := len(d.venue.Ledger().Requests())
	d.log.take()
	_, err = d.client.Post(ctx, pathOrders+"?account_number="+url.QueryEscape(d.account), body)
	var uo *transport.UnknownOutcomeError
	if !errors.As(err, &uo) {
		return fmt.Errorf("want an unknown outcome, got %v", err)
	}
	for _, ev := range d.log.take() {
		d.w.detail("%s", ev)
	}
	sends := 0
	for _, r := range d.venue.Ledger().Requests()[start:] {
		if r.Method == http.MethodPost {
			sends++
		}
	}
	d.w.detail("transport: %s", uo)
	d.w.detail("sends of the POST: %d", sends)
	orders := d.venue.Ledger().OrdersByClientID(clientID)
	for _, o := range orders {
		d.w.detail("ledger: order %s with client_order_id %s, state %s", o.ID, o.ClientOrderID, o.State)
	}
	d.w.say(fmt.Sprintf("The order exists exactly %s, though the client was told 503. A 5xx on a create is not a refusal: "+
		"the venue may have committed it, as it did here. So the transport never sends a POST twice; it returns "+
		"UnknownOutcomeError after one send (the CLI exits 5). Only a lookup, listing orders since just before the send "+
		"and matching client_order_id, can tell whether it took effect: chapter 7 does exactly that.", times(len(orders))))
	return nil
}

func times(n int) string {
	switch n {
	case 1:
		return "once"
	case 2:
		return "twice"
	}
	return fmt.Sprintf("%d times", n)
}

// ---- The ledger ----

func (d *demoRun) ledger() {
	l := d.venue.Ledger()
	c := l.Counts()
	d.w.printf("\n== The venue's ledger ==\n")
	d.w.say("Everything the venue received and created (the second venue of chapter 3 aside):")
	d.w.detail("requests: %d", c.Total)
	d.w.detail("by status: %s", byStatus(c.ByStatus))
	d.w.detail("401 answers (bad signatures): %d", c.Unauthorized)
	injected := 0
	for _, r := range l.Requests() {
		if r.Status == http.StatusTooManyRequests && r.Fault != "" {
			injected++
		}
	}
	d.w.detail("429 answers: %d (%d injected, %d from running out of budget)", c.Throttled, injected, c.Throttled-injected)
	d.w.detail("dropped connections: %d", c.Dropped)
	d.w.detail("orders created: %d", c.Creates)
	perID := map[string]int{}
	var ids []string
	for _, o := range l.Orders() {
		if perID[o.ClientOrderID] == 0 {
			ids = append(ids, o.ClientOrderID)
		}
		perID[o.ClientOrderID]++
	}
	for _, id := range ids {
		d.w.detail("orders with client_order_id %s: %d", id, perID[id])
	}
	if dups := l.DuplicateClientIDs(); len(dups) > 0 {
		d.w.detail("client_order_ids used twice: %s", strings.Join(dups, ", "))
	} else {
		d.w.detail("client_order_ids used twice: none")
	}
}

// ---- Helpers ----

// getJSON GETs target, prints one line on how it went, and decodes the
// answer into v.
func (d *demoRun) getJSON(ctx context.Context, target string, v any) error {
	resp, err := d.client.Get(ctx, target)
	if err != nil {
		return err
	}
	d.w.detail("GET %s -> %d (%s)", target, resp.StatusCode, attempts(resp.Attempts))
	if err := json.Unmarshal(resp.Body, v); err != nil {
		return fmt.Errorf("GET %s: decoding the answer: %w", target, err)
	}
	return nil
}

func (d *demoRun) bestBidAsk(ctx context.Context) (bid, ask string, err error) {
	var quotes struct {
		Results []struct {
			Symbol string      `json:"symbol"`
			Bid    decimalText `json:"bid"`
			Ask    decimalText `json:"ask"`
		} `json:"results"`
	}
	if err := d.getJSON(ctx, pathBestBidAsk+"?symbol="+demoSymbol, &quotes); err != nil {
		return "", "", err
	}
	if len(quotes.Results) == 0 || quotes.Results[0].Bid == "" {
		return "", "", fmt.Errorf("no quote for %s", demoSymbol)
	}
	return string(quotes.Results[0].Bid), string(quotes.Results[0].Ask), nil
}

func attempts(n int) string {
	if n == 1 {
		return "1 attempt"
	}
	return fmt.Sprintf("%d attempts", n)
}

// decimalText is a decimal as the venue sent it, quoted or bare, kept as
// text: it never passes through float64.
type decimalText string

func (t *decimalText) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case string(b) == "null":
		*t = ""
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*t = decimalText(s)
	default:
		var n json.Number
		if err := json.Unmarshal(b, &n); err != nil {
			return err
		}
		*t = decimalText(n)
	}
	return nil
}

// attemptLog collects the transport's zerolog events, one JSON object a
// line, and renders them as narration. It is safe for concurrent use.
type attemptLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *attemptLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// attemptEvent is one transport log event.
type attemptEvent struct {
	Method  string  `json:"method"`
	Path    string  `json:"path"`
	Attempt int     `json:"attempt"`
	Status  int     `json:"status"`
	Retry   bool    `json:"retry"`
	Reason  string  `json:"reason"`
	DelayMS float64 `json:"delay"` // zerolog's default duration unit
	Error   string  `json:"error"`
}

func (e attemptEvent) String() string {
	s := fmt.Sprintf("attempt %d: %s %s -> %d", e.Attempt, e.Method, e.Path, e.Status)
	if e.Status == 0 {
		s = fmt.Sprintf("attempt %d: %s %s -> no answer", e.Attempt, e.Method, e.Path)
	}
	if e.Retry {
		return s + fmt.Sprintf(", retry in %v (%s)", time.Duration(e.DelayMS*float64(time.Millisecond)), e.Reason)
	}
	if e.Status >= 200 && e.Status < 300 {
		return s
	}
	return s + fmt.Sprintf(", not retried (%s)", e.Reason)
}

// take returns the events logged since the last take, and forgets them.
func (l *attemptLog) take() []attemptEvent {
	l.mu.Lock()
	data := append([]byte(nil), l.buf.Bytes()...)
	l.buf.Reset()
	l.mu.Unlock()
	var out []attemptEvent
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		var ev attemptEvent
		if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.Attempt > 0 {
			out = append(out, ev)
		}
	}
	return out
}

// demoWriter prints the narration, wrapping prose, and keeps the first
// write error.
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
func (w *demoWriter) say(text string) {
	const width = 100
	line := ""
	for _, word := range strings.Fields(text) {
		if line != "" && len(line)+1+len(word) > width {
			w.printf("%s\n", line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += word
	}
	if line != "" {
		w.printf("%s\n", line)
	}
}

// detail prints one indented line of what happened.
func (w *demoWriter) detail(format string, args ...any) {
	w.printf("    "+format+"\n", args...)
}
