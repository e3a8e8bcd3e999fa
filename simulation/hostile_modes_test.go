package simulation

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/tradewire/tradewire/venue"
)

// HostileMode is a venue that does not share the client's assumptions,
// for the placement matrix: hostile settings for the whole run, and the
// faults a create draws (Placement.CreateFaults) instead of lost answers.
type HostileMode struct {
	// Name labels the mode in reports ("list-lag-20s", ...).
	Name string
	// Hostile is the venue's hostile settings (Scenario.Hostile).
	Hostile venue.Hostile
	// CreateFaults replace the lost answers CommitFaults scripts.
	CreateFaults []venue.Fault
	// PageSize, if set, is the venue's page size, small enough that a
	// lookup reads several pages.
	PageSize int
	// Wire is the wire the mode needs; "" runs on either.
	Wire Wire
	// NoResend runs the Placer with orders.Config{MaxSends: 1}: the mode
	// breaks what a re-send rests on (the orders list shows every order
	// within the wait for its signatures to expire), so no client can
	// tell "absent" from "not listed", and the right answer is an honest
	// unknown.
	NoResend bool
}

// HostileModes returns the hostile modes of the matrix:
//
//   - list-lag-20s: the orders list lags 20 s behind creates, less than
//     the Placer waits for a signature to expire, so a lookup after the
//     wait sees the order; list-lag-90s lags longer than that wait, where
//     no client can know and the right answer is an honest unknown;
//   - clock-ahead-20s, clock-behind-20s: the venue's clock is 20 s off
//     the client's, inside the 30 s signature window; clock-behind-3m and
//     clock-ahead-3m are far outside it, so a client that does not learn
//     the offset from the Date header is refused 401;
//   - omit-client-order-id (every list row) and omit-some-client-order-ids
//     (half of the orders): a lookup that cannot see an order's
//     client_order_id cannot conclude it is absent;
//   - drop-next: every list page that should link the next has null, with
//     1 row a page so that lookups span pages; drop-next-list-lag-20s on a
//     list that also lags 20 s, so that a lookup after the wait finds newer
//     orders before the one it looks for;
//   - 2xx-truncated, 2xx-other-order, 2xx-wrong-client-id: a create is
//     committed and answered 2xx with a body cut short, another order's
//     JSON, or the order under another client_order_id;
//     2xx-truncated-list-lag-90s cuts the body short on a venue whose list
//     lags 90 s;
//   - h2-refused-stream, h2-protocol-error, h2-goaway: a create is
//     committed, then its HTTP/2 stream is refused, reset with
//     PROTOCOL_ERROR, or a GOAWAY claims it unprocessed (WireTLS only).
func HostileModes() []HostileMode {
	create := func(k string) []venue.Fault { return []venue.Fault{{Kind: k}} }
	return []HostileMode{
		{Name: "list-lag-20s", Hostile: venue.Hostile{ListLag: 20 * time.Second}},
		{Name: "list-lag-90s", Hostile: venue.Hostile{ListLag: 90 * time.Second}, NoResend: true},
		{Name: "clock-ahead-20s", Hostile: venue.Hostile{ClockOffset: 20 * time.Second}},
		{Name: "clock-behind-20s", Hostile: venue.Hostile{ClockOffset: -20 * time.Second}},
		{Name: "clock-ahead-3m", Hostile: venue.Hostile{ClockOffset: 3 * time.Minute}},
		{Name: "clock-behind-3m", Hostile: venue.Hostile{ClockOffset: -3 * time.Minute}},
		{Name: "omit-client-order-id", Hostile: venue.Hostile{OmitClientOrderID: 1}},
		{Name: "omit-some-client-order-ids", Hostile: venue.Hostile{OmitClientOrderID: 0.5}},
		{Name: "drop-next", Hostile: venue.Hostile{DropNext: 1}, PageSize: 1, NoResend: true},
		{Name: "drop-next-list-lag-20s", Hostile: venue.Hostile{DropNext: 1, ListLag: 20 * time.Second}, PageSize: 1, NoResend: true},
		{Name: "2xx-truncated", CreateFaults: create("truncated_body")},
		{Name: "2xx-other-order", CreateFaults: create("other_order_body")},
		{Name: "2xx-wrong-client-id", CreateFaults: create("wrong_client_order_id")},
		{Name: "2xx-truncated-list-lag-90s", Hostile: venue.Hostile{ListLag: 90 * time.Second},
			CreateFaults: create("truncated_body"), NoResend: true},
		{Name: "h2-refused-stream", CreateFaults: create("refused_stream"), Wire: WireTLS},
		{Name: "h2-protocol-error", CreateFaults: create("protocol_error"), Wire: WireTLS},
		{Name: "h2-goaway", CreateFaults: create("goaway"), Wire: WireTLS},
	}
}

// hostileMix is the fault mix of the hostile runs: 429s and 5xx before
// the commit and answers lost after it, and no latency, so that they run
// over TLS in lockstep too.
var hostileMix = venue.Mix{Rate429: 0.03, Rate5xx: 0.03, RateLost: 0.03}

// HostileScenario is the placement scenario of a hostile mode: the
// hostile venue, which creates a second order for a reused
// client_order_id, over wire (the mode's own when it needs one), for d
// with a restart about every restartEvery; a fifth of the creates draw the
// mode's create faults (or, without any, an answer lost after the
// commit). Its invariants are the defaults, the placement invariants and
// HostileInvariants.
func HostileScenario(m HostileMode, seed int64, wire Wire, d, restartEvery time.Duration) Scenario {
	if m.Wire != "" {
		wire = m.Wire
	}
	inv := append(append(DefaultInvariants(), PlacementInvariants()...), HostileInvariants()...)
	if m.NoResend || m.Hostile.OmitClientOrderID > 0 {
		// Where the venue's list cannot be trusted (re-sends forbidden),
		// or hides the client_order_ids a lookup matches on, an intent
		// the lookups never find stays unknown: that is the true answer,
		// not a failure to settle.
		inv = slices.DeleteFunc(inv, func(i Invariant) bool { return i.Name == "no-unknown-after-recover" })
	}
	return Scenario{Name: "hostile/" + m.Name, Seed: seed, Mix: hostileMix, Duration: d, Wire: wire,
		Hostile: m.Hostile, PageSize: m.PageSize, Invariants: inv,
		Placement: &Placement{Duplicate: venue.CreateSecond, CommitFaults: 0.2, CreateFaults: m.CreateFaults,
			RestartEvery: restartEvery, NoResend: m.NoResend}}
}

// HostileInvariants returns what a placement must keep on a hostile venue
// besides PlacementInvariants:
//
//   - answers-true: no Place answered not placed or rejected for a key the
//     venue then held a live order for (created before the answer; a
//     rejected key's own failed order aside);
//   - wire-sends-once: the venue received no write again beneath the
//     client (Event.Replayed): nothing below the transport replays one.
//     (net/http may re-send a GET on a connection that died first; the
//     ledger marks it, and a read has no effect to duplicate.)
func HostileInvariants() []Invariant {
	return []Invariant{
		{Name: "answers-true", Check: checkAnswersTrue},
		{Name: "wire-sends-once", Check: checkWireSendsOnce},
	}
}

// falseAnswers lists the Places that answered not placed or rejected
// while the venue held an order for the key.
func falseAnswers(r *Run) problems {
	var p problems
	if r.Placement == nil {
		return p
	}
	off := r.Scenario.Hostile.ClockOffset
	byCID := map[string][]venue.OrderRecord{}
	for _, o := range r.Orders {
		byCID[o.ClientOrderID] = append(byCID[o.ClientOrderID], o)
	}
	for _, op := range r.Placement.Ops {
		if op.Op != "place" || (op.Outcome != "not_placed" && op.Outcome != "rejected") {
			continue
		}
		for _, o := range byCID[op.ClientOrderID] {
			// Venue times are on the venue's clock: back to the client's.
			if o.CreatedAt.Add(-off).After(op.End) || (op.Outcome == "rejected" && o.State == "failed") {
				continue
			}
			p.addf("Place %d of key %s answered %s; the venue holds order %s (%s) for client_order_id %s",
				op.ID, op.Key, op.Outcome, o.ID, o.State, op.ClientOrderID)
			break
		}
	}
	return p
}

func checkAnswersTrue(r *Run) error {
	p := falseAnswers(r)
	return p.err()
}

func checkWireSendsOnce(r *Run) error {
	var p problems
	for _, e := range r.Events {
		// net/http may re-send a GET on a connection that died before the
		// answer: a read has no effect to duplicate. A write, never.
		if e.Replayed && e.Method != http.MethodGet {
			p.addf("%s %s @%s (call %d, op %d) reached the venue again beneath the client", e.Method, e.Target, e.Timestamp, e.Call, e.Op)
		}
	}
	return p.err()
}

// HostileFigures are a hostile run's ledger row: what the Places answered
// and what the venue holds.
type HostileFigures struct {
	// Places is the Place calls, Keys the keys they used.
	Places, Keys int
	// Acknowledged, Unknown, NotPlaced, Rejected, InProgress and
	// Interrupted count the Places by answer (unknown: the outcome may
	// have taken effect).
	Acknowledged, Unknown, NotPlaced, Rejected, InProgress, Interrupted int
	// FalseAnswers is the Places that answered not placed or rejected
	// while the venue held an order for the key.
	FalseAnswers int
	// Lost and Duplicated are PlacementFigures'; ExtraOrders the orders
	// beyond the first of every client_order_id.
	Lost, Duplicated, ExtraOrders int
	// Replayed is the requests the venue received again beneath the
	// client.
	Replayed int
}

// Hostile returns the run's ledger row (zero without a Placement).
func (r *Run) Hostile() HostileFigures {
	if r.hostile != nil {
		return *r.hostile
	}
	pr := r.Placement
	if pr == nil {
		return HostileFigures{}
	}
	f := HostileFigures{Keys: len(pr.Keys), Lost: pr.Figures.Lost, Duplicated: pr.Figures.Duplicated}
	for _, op := range pr.Ops {
		if op.Op != "place" {
			continue
		}
		f.Places++
		switch op.Outcome {
		case "acknowledged":
			f.Acknowledged++
		case "not_placed":
			f.NotPlaced++
		case "rejected", "invalid":
			f.Rejected++
		case "in_progress":
			f.InProgress++
		case "interrupted":
			f.Interrupted++
		default:
			f.Unknown++
		}
	}
	fa := falseAnswers(r)
	f.FalseAnswers = fa.n
	n := map[string]int{}
	for _, o := range r.Orders {
		if n[o.ClientOrderID]++; n[o.ClientOrderID] > 1 {
			f.ExtraOrders++
		}
	}
	for _, e := range r.Events {
		if e.Replayed {
			f.Replayed++
		}
	}
	return f
}

// WriteHostileTable prints the ledger of every hostile run (a scenario
// with a Placement): one row per run, the Places by answer, the false
// answers, and what the venue holds.
func WriteHostileTable(w io.Writer, runs []*Run) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "hostile mode\twire\tseed\tattempted (places/keys)\tacknowledged\tunknown\tnot placed\trejected\tin progress\tinterrupted\tfalse answers\tlost\tduplicated (extra orders)\treplayed beneath\tinvariants\t")
	for _, r := range runs {
		if r.Placement == nil {
			continue
		}
		f := r.Hostile()
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d/%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d (%d)\t%d\t%s\t\n",
			r.Scenario.Name, r.Scenario.Wire, strconv.FormatInt(r.Scenario.Seed, 10), f.Places, f.Keys, f.Acknowledged,
			f.Unknown, f.NotPlaced, f.Rejected, f.InProgress, f.Interrupted, f.FalseAnswers, f.Lost, f.Duplicated,
			f.ExtraOrders, f.Replayed, verdict(r))
	}
	return tw.Flush()
}
