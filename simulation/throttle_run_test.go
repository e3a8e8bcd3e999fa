package simulation

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/tradewire/tradewire/transport"
	"github.com/tradewire/tradewire/venue"
)

// The endpoint classes the venue rate-limits apart (venue.RateLimits)
// and transport's adaptive limiter learns apart.
var throttleClasses = []string{"market_data", "account_reads", "order_reads", "order_writes"}

// ThrottleLayout is a venue whose rate limits are per endpoint class and
// fluctuate, and the callers that saturate them: the throttle scenarios
// of the matrix (ThrottleLayouts).
type ThrottleLayout struct {
	// Name labels the layout in reports.
	Name string
	// Limits is the venue's buckets per class and their schedule: every
	// class in Classes needs a bucket of its own in Limits.Classes.
	Limits venue.RateLimits
	// Classes are the endpoint classes the callers saturate, Callers bots
	// each (one when 0), every bot asking again as soon as its call ends.
	Classes []string
	Callers int
	// Duration is the run's simulated length.
	Duration time.Duration
	// Outage, when set, is a stretch in which the venue answers every
	// request 503.
	Outage Window
}

// ThrottleClient is the client a throttle scenario's bots share.
type ThrottleClient string

// The clients of the throttle scenarios.
const (
	// FixedBucket is transport.Client's default: one token bucket for the
	// whole client at the venue's documented budget (100 a minute in
	// bursts of 300), and the retry budget. It is the control.
	FixedBucket ThrottleClient = "fixed"
	// AdaptiveBucket is transport.Config{Adaptive: true}: one
	// budget per endpoint class that learns the venue's rate, and the
	// retry budget.
	AdaptiveBucket ThrottleClient = "adaptive"
	// FixedNoRetryBudget is FixedBucket with the retry budget off
	// (a negative transport.Config.RetryBudget): the outage's control.
	FixedNoRetryBudget ThrottleClient = "fixed, no retry budget"
)

// options are the transport configuration of the client.
func (c ThrottleClient) options() (transport.Config, error) {
	switch c {
	case FixedBucket:
		return transport.Config{}, nil
	case AdaptiveBucket:
		return transport.Config{Adaptive: true}, nil
	case FixedNoRetryBudget:
		return transport.Config{RetryBudget: -1}, nil
	}
	return transport.Config{}, fmt.Errorf("simulation: unknown throttle client %q", c)
}

// ThrottleLayouts returns the throttle layouts of the matrix, each a run
// of its own per client:
//
//   - drop: every class has the documented budget, 100 a minute in
//     bursts of 300, as a bucket of its own; market data drops to 30 in
//     bursts of 90 at 10 min and is restored at 20 min, for a run of
//     30 min; four bots saturate market data.
//   - per-class: the classes have budgets of their own — market data 100,
//     account reads 60, order reads 45, order writes 100 (bursts three
//     times the rate) — and market data and order writes drop to 30 from
//     10 to 20 min, for a run of 30 min; one bot saturates each class.
//   - outage: the per-class budgets without drops, and from 5 to 15 min
//     of a 20-minute run the venue answers every request 503; two bots
//     saturate each class of reads (writes are never retried).
func ThrottleLayouts() []ThrottleLayout { return throttleLayouts(10 * time.Minute) }

// throttleLayouts is ThrottleLayouts with phases of p: the drops last p
// after p at full capacity and end p before the run does; the outage
// runs from p/2 to 3p/2 of a run of 2p.
func throttleLayouts(p time.Duration) []ThrottleLayout {
	limit := func(perMinute float64) venue.RateLimit {
		return venue.RateLimit{PerMinute: perMinute, Burst: int(3 * perMinute)}
	}
	step := func(class string, at time.Duration, perMinute float64) venue.RateLimit {
		l := limit(perMinute)
		l.At, l.Class = at, class
		return l
	}
	documented := map[string]venue.RateLimit{}
	for _, c := range throttleClasses {
		documented[c] = limit(100)
	}
	perClass := map[string]venue.RateLimit{
		"market_data": limit(100), "account_reads": limit(60), "order_reads": limit(45), "order_writes": limit(100),
	}
	return []ThrottleLayout{
		{Name: "drop", Classes: []string{"market_data"}, Callers: 4, Duration: 3 * p,
			Limits: venue.RateLimits{Classes: documented, Schedule: []venue.RateLimit{
				step("market_data", p, 30), step("market_data", 2*p, 100)}}},
		{Name: "per-class", Classes: throttleClasses, Duration: 3 * p,
			Limits: venue.RateLimits{Classes: perClass, Schedule: []venue.RateLimit{
				step("market_data", p, 30), step("order_writes", p, 30),
				step("market_data", 2*p, 100), step("order_writes", 2*p, 100)}}},
		{Name: "outage", Classes: throttleClasses[:3], Callers: 2, Duration: 2 * p, Outage: Window{p / 2, 3 * p / 2},
			Limits: venue.RateLimits{Classes: perClass}},
	}
}

// ThrottleScenario is layout's scenario for client: its bots, Callers per
// class, each call their class's endpoint again as soon as the last call
// ended (a best bid/ask; accounts or holdings; a list of recent orders; a
// create of a resting limit order, then its cancel), on a venue with
// layout's rate limits and outage. Its invariants are DefaultInvariants
// but rate-budget: the venue throttles a client that sends at its
// documented budget when a class's capacity is under it.
func ThrottleScenario(layout ThrottleLayout, client ThrottleClient, seed int64, wire Wire) (Scenario, error) {
	opts, err := client.options()
	if err != nil {
		return Scenario{}, err
	}
	callers := max(1, layout.Callers)
	for _, c := range layout.Classes {
		if _, ok := layout.Limits.Classes[c]; !ok || !slices.Contains(throttleClasses, c) {
			return Scenario{}, fmt.Errorf("simulation: throttle layout %s: class %q has no bucket of its own", layout.Name, c)
		}
	}
	if len(layout.Classes) == 0 {
		return Scenario{}, fmt.Errorf("simulation: throttle layout %s: no class to saturate", layout.Name)
	}
	var invs []Invariant
	for _, inv := range DefaultInvariants() {
		if inv.Name != "rate-budget" {
			invs = append(invs, inv)
		}
	}
	classes := layout.Classes
	return Scenario{
		Name: "throttle/" + layout.Name + "/" + string(client), Seed: seed, Duration: layout.Duration,
		Workers: callers * len(classes),
		// The bots ask again at once: the pause between steps is 0 or 1 ns.
		Think:      time.Nanosecond,
		Steps:      []Step{{Name: "saturate", Weight: 1, Run: func(ctx context.Context, b *Bot) error { return saturate(ctx, b, classes[b.ID%len(classes)]) }}},
		Invariants: invs,
		Wire:       wire,
		RateLimits: layout.Limits,
		Outage:     layout.Outage,
		newCaller: func(e env) (Caller, error) {
			cfg := opts
			cfg.Clock, cfg.RoundTripper, cfg.AttemptTimeout = e.clock, e.transport, e.attemptTimeout
			return transport.New(e.baseURL, e.signer, cfg)
		},
	}, nil
}

// saturate makes one call of class.
func saturate(ctx context.Context, b *Bot, class string) error {
	switch class {
	case "market_data":
		b.Do(ctx, http.MethodGet, pathBBA+"?symbol=BTC-USD", nil)
	case "account_reads":
		target := pathAccounts
		if b.Rand.IntN(2) == 0 {
			target = pathHoldings + "?" + url.Values{"account_number": {b.Account}}.Encode()
		}
		b.Do(ctx, http.MethodGet, target, nil)
	case "order_reads":
		b.Do(ctx, http.MethodGet, pathOrders+"?"+url.Values{"account_number": {b.Account}, "symbol": {"BTC-USD"},
			"created_at_start": {b.Now().Add(-time.Minute).UTC().Format(time.RFC3339)}}.Encode(), nil)
	case "order_writes":
		if len(b.Orders) == 0 {
			return placeLimit(ctx, b)
		}
		// Cancel the resting order; one whose cancel was throttled or
		// failed stays to be cancelled again.
		_, err := b.Do(ctx, http.MethodPost, pathOrders+b.Orders[0]+"/cancel/", nil)
		var se *transport.StatusError
		if err == nil || (errors.As(err, &se) && se.StatusCode < 500 && se.StatusCode != http.StatusTooManyRequests) {
			b.Orders = b.Orders[1:]
		}
	default:
		return fmt.Errorf("no endpoint of class %q", class)
	}
	return nil
}

// ClassPhase is what one endpoint class drew in one phase of its
// capacity, counted from the venue's ledger (Request.Time, Request.Class
// and Status).
type ClassPhase struct {
	Class    string
	From, To time.Duration // after the run's start
	Capacity venue.RateLimit
	// Change is how the phase began: "start", "drop" (a lower rate than
	// the phase before), "restore" (a higher one), or "after outage".
	Change string
	// Transition is the 429s in the phase's first minute, Probing those
	// after it: the transition to the new capacity, and the limiter's
	// probing of a steady one.
	Transition, Probing int
	// Served is the requests the venue's bucket admitted (any answer but
	// a 429 or a fault's); Share is Served over the capacity's rate over
	// the phase, SteadyShare the same after the phase's first minute.
	Served             int
	Share, SteadyShare float64
	// Recovered, on a restore, is how long after it the first 30-second
	// window began in which the venue admitted at least 90 % of the
	// capacity's rate; -1 if none did.
	Recovered time.Duration
}

// Throttled is the phase's 429s, transition and probing.
func (p ClassPhase) Throttled() int { return p.Transition + p.Probing }

// OutageFigures is what a scenario's outage drew, counted from the
// venue's ledger and the client's calls.
type OutageFigures struct {
	Window
	// Calls is the calls that began in the outage; Requests the requests
	// the venue received in it; Retries those that were not a call's first
	// attempt.
	Calls, Requests, Retries int
	// AttemptsBound is the retries the calls could have made without a
	// retry budget: every GET call its retry policy's attempts.
	AttemptsBound int
	// OutOfBudget is the calls that ended with transport.ErrRetryBudget.
	OutOfBudget int
}

// ThrottleFigures is a throttle run's figures (Run.ThrottleFigures): per
// class and phase, and of the outage (nil without one).
type ThrottleFigures struct {
	Phases []ClassPhase
	Outage *OutageFigures
}

// recoveryWindow is the span over which a restored class's throughput is
// judged, and recoveryShare the share of the capacity it must reach.
const (
	recoveryWindow = 30 * time.Second
	recoveryShare  = 0.9
)

// ThrottleFigures computes the run's throttle figures from its ledger,
// for the classes that have a bucket of their own in its
// Scenario.RateLimits and were called, and of its Scenario.Outage.
func (r *Run) ThrottleFigures() ThrottleFigures {
	sc := r.Scenario
	end := sc.Duration
	byClass := map[string][]Event{}
	for _, e := range r.Events {
		byClass[e.Class] = append(byClass[e.Class], e)
	}
	var f ThrottleFigures
	for _, class := range throttleClasses {
		evs := byClass[class]
		lim, own := sc.RateLimits.Classes[class]
		if !own || len(evs) == 0 {
			continue
		}
		for _, ph := range classPhases(class, lim, sc.RateLimits.Schedule, sc.Outage, end) {
			f.Phases = append(f.Phases, measurePhase(ph, evs, sc.Start))
		}
	}
	if sc.Outage != (Window{}) {
		f.Outage = measureOutage(r)
	}
	return f
}

// classPhases cuts [0, end) into the stretches of one capacity of class,
// leaving the outage out.
func classPhases(class string, lim venue.RateLimit, schedule []venue.RateLimit, outage Window, end time.Duration) []ClassPhase {
	type cut struct {
		at     time.Duration
		lim    venue.RateLimit
		change string
	}
	cuts := []cut{{0, lim, "start"}}
	for _, st := range schedule {
		if st.Class != class || st.At >= end {
			continue
		}
		change := "restore"
		if st.PerMinute < cuts[len(cuts)-1].lim.PerMinute {
			change = "drop"
		}
		cuts = append(cuts, cut{st.At, venue.RateLimit{PerMinute: st.PerMinute, Burst: st.Burst}, change})
	}
	if outage != (Window{}) {
		var out []cut
		for i, c := range cuts {
			next := end
			if i+1 < len(cuts) {
				next = cuts[i+1].at
			}
			switch {
			case c.at < outage.From && next > outage.From:
				out = append(out, c, cut{outage.From, c.lim, "outage"})
				if next > outage.To {
					out = append(out, cut{outage.To, c.lim, "after outage"})
				}
			case outage.contains(c.at) && next > outage.To:
				out = append(out, cut{c.at, c.lim, "outage"}, cut{outage.To, c.lim, "after outage"})
			case outage.contains(c.at):
				out = append(out, cut{c.at, c.lim, "outage"})
			default:
				out = append(out, c)
			}
		}
		cuts = out
	}
	var phases []ClassPhase
	for i, c := range cuts {
		to := end
		if i+1 < len(cuts) {
			to = cuts[i+1].at
		}
		if c.change == "outage" || to <= c.at {
			continue
		}
		phases = append(phases, ClassPhase{Class: class, From: c.at, To: to, Capacity: c.lim, Change: c.change, Recovered: -1})
	}
	return phases
}

// measurePhase counts ph's figures from evs, the class's events in order.
func measurePhase(ph ClassPhase, evs []Event, start time.Time) ClassPhase {
	var admitted []time.Duration
	steady := 0
	for _, e := range evs {
		at := e.Time.Sub(start)
		if at < ph.From || at >= ph.To {
			continue
		}
		switch {
		case e.Status == http.StatusTooManyRequests && !injected429(e):
			if at < ph.From+time.Minute {
				ph.Transition++
			} else {
				ph.Probing++
			}
		case e.Fault == "" && !e.Dropped && e.Status != http.StatusTooManyRequests:
			ph.Served++
			admitted = append(admitted, at)
			if at >= ph.From+time.Minute {
				steady++
			}
		}
	}
	rate := ph.Capacity.PerMinute // a minute
	if m := (ph.To - ph.From).Minutes(); m > 0 {
		ph.Share = float64(ph.Served) / (rate * m)
	}
	if m := (ph.To - ph.From - time.Minute).Minutes(); m > 0 {
		ph.SteadyShare = float64(steady) / (rate * m)
	}
	if ph.Change == "restore" {
		need := recoveryShare * rate * recoveryWindow.Minutes()
		j := 0
		for s := ph.From; s+recoveryWindow <= ph.To; s += time.Second {
			for j < len(admitted) && admitted[j] < s {
				j++
			}
			n := 0
			for k := j; k < len(admitted) && admitted[k] < s+recoveryWindow; k++ {
				n++
			}
			if float64(n) >= need {
				ph.Recovered = s - ph.From
				break
			}
		}
	}
	return ph
}

// measureOutage counts the outage's calls, requests and retries.
func measureOutage(r *Run) *OutageFigures {
	sc := r.Scenario
	o := &OutageFigures{Window: sc.Outage}
	attempts := defaultMaxAttempts
	in := func(t time.Time) bool { return sc.Outage.contains(t.Sub(sc.Start)) }
	for _, c := range r.Calls {
		if !in(c.Start) {
			continue
		}
		o.Calls++
		if c.Method == http.MethodGet {
			o.AttemptsBound += attempts - 1
		}
		if errors.Is(c.Err, transport.ErrRetryBudget) {
			o.OutOfBudget++
		}
	}
	for _, c := range r.Calls {
		for i, e := range r.Attempts(c.ID) {
			if in(e.Time) && i > 0 {
				o.Retries++
			}
		}
	}
	for _, e := range r.Events {
		if in(e.Time) {
			o.Requests++
		}
	}
	return o
}

// WriteThrottleTable prints the throttle runs' figures: one row per run,
// endpoint class and phase of its capacity, then one per outage.
func WriteThrottleTable(w io.Writer, runs []*Run) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tclass\tphase\tcapacity\tchange\t429s\t(transition+probing)\tadmitted\tthroughput\t(after 1st min)\trecovered\t")
	var outages []*Run
	for _, r := range runs {
		f := r.ThrottleFigures()
		for _, p := range f.Phases {
			rec := ""
			if p.Change == "restore" {
				rec = "never"
				if p.Recovered >= 0 {
					rec = p.Recovered.String()
				}
			}
			fmt.Fprintf(tw, "%s\t%s\t%s-%s min\t%.0f/min+%d\t%s\t%d\t(%d+%d)\t%d\t%.1f%%\t(%.1f%%)\t%s\t\n",
				r.Scenario.Name, p.Class, minutes(p.From), minutes(p.To), p.Capacity.PerMinute, p.Capacity.Burst, p.Change,
				p.Throttled(), p.Transition, p.Probing, p.Served, 100*p.Share, 100*p.SteadyShare, rec)
		}
		if f.Outage != nil {
			outages = append(outages, r)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(outages) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\toutage\tcalls\trequests\tretries\tattempts bound\tout of retry budget\t")
	for _, r := range outages {
		o := r.ThrottleFigures().Outage
		fmt.Fprintf(tw, "%s\t%s-%s min\t%d\t%d\t%d\t%d\t%d\t\n", r.Scenario.Name, minutes(o.From), minutes(o.To),
			o.Calls, o.Requests, o.Retries, o.AttemptsBound, o.OutOfBudget)
	}
	return tw.Flush()
}

// minutes prints d in minutes, to a tenth where it is not whole.
func minutes(d time.Duration) string {
	return strconv.FormatFloat(d.Minutes(), 'f', -1, 64)
}
