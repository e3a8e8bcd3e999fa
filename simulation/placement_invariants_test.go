package simulation

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/internal/wire"
	"github.com/tradewire/tradewire/signing"
	"github.com/tradewire/tradewire/venue"
)

// PlacementInvariants returns the invariants of a scenario with a
// Placement, checked from the venue's ledger and the intent store (a run
// without a Placement passes them):
//
//   - one-order-per-key: no client_order_id has more than one order at
//     the venue (OrdersByClientID ≤ 1, DuplicateClientIDs empty), under
//     every duplicate mode, CreateSecond included;
//   - no-intent-lost: every key a bot attempted has its intent in the
//     store; every order at the venue with a derived client_order_id (a
//     UUIDv5) has its intent; every not-placed intent has no order at the
//     venue and every acknowledged one exactly one, its OrderID;
//   - no-unknown-after-recover: the final Recover began at least 40 s
//     after the last create signature, settled everything it found, and
//     left no intent pending or unknown;
//   - create-resent-after-expiry: a Placer sent a create again only once
//     every earlier signature of it had expired (x-timestamps more than
//     signing.ValidFor apart, with a second for their truncation);
//   - replay-sends-nothing: a Place of a key already acknowledged sent
//     no request but reads of its order by id (the order afresh, and the
//     retries of that read).
func PlacementInvariants() []Invariant {
	return []Invariant{
		{Name: "one-order-per-key", Check: checkOneOrderPerKey},
		{Name: "no-intent-lost", Check: checkNoIntentLost},
		{Name: "no-unknown-after-recover", Check: checkNoUnknownAfterRecover},
		{Name: "create-resent-after-expiry", Check: checkCreateResentAfterExpiry},
		{Name: "replay-sends-nothing", Check: checkReplaySendsNothing},
	}
}

// PlacementFigures summarise a run's placement. Lost and Duplicated must
// be 0, as must Unsettled after the final Recover.
type PlacementFigures struct {
	// Places is the Place calls; Keys the distinct keys they used;
	// Reused the Places of a key attempted before (after a failure, or
	// already acknowledged).
	Places, Keys, Reused int
	// Interrupted is the Places a restart cut off; Restarts the process
	// restarts, the final one included.
	Interrupted, Restarts int
	// Acknowledged, Rejected and NotPlaced are the keys whose intent ends
	// in that state after the final Recover; Unsettled those still
	// pending or unknown.
	Acknowledged, Rejected, NotPlaced, Unsettled int
	// Recovered is the intents settled by Recover, at restarts and at the
	// end.
	Recovered int
	// Resends is the creates sent again with a client_order_id already
	// sent; Requests everything the Placers sent.
	Resends, Requests int
	// Lost is intents missing, orders at the venue without an intent, and
	// settled intents the venue contradicts; Duplicated the
	// client_order_ids with more than one order.
	Lost, Duplicated int
}

// placementProblems checks the store against the venue and the keys, and
// counts what it finds: lost and duplicated, with examples.
func placementProblems(r *Run) (lost, dup problems) {
	pr := r.Placement
	recs := map[string]idempotency.Record{}
	for _, rec := range pr.Records {
		recs[rec.ClientOrderID] = rec
	}
	byCID := map[string][]venue.OrderRecord{}
	var cids []string
	for _, o := range r.Orders {
		if len(byCID[o.ClientOrderID]) == 0 {
			cids = append(cids, o.ClientOrderID)
		}
		byCID[o.ClientOrderID] = append(byCID[o.ClientOrderID], o)
	}
	for _, cid := range cids {
		os := byCID[cid]
		if len(os) > 1 {
			dup.addf("client_order_id %s has %d orders at the venue", cid, len(os))
		}
		if derived(cid) {
			if _, ok := recs[cid]; !ok {
				lost.addf("order %s (client_order_id %s) has no intent in the store", os[0].ID, cid)
			}
		}
	}
	for _, k := range pr.Keys {
		if _, ok := recs[k.ClientOrderID]; !ok {
			lost.addf("key %s (client_order_id %s) was attempted and has no intent", k.Key, k.ClientOrderID)
		}
	}
	for _, rec := range pr.Records {
		os := byCID[rec.ClientOrderID]
		switch rec.State {
		case idempotency.NotPlaced:
			if len(os) > 0 {
				lost.addf("intent %s is not placed, the venue holds order %s", rec.ClientOrderID, os[0].ID)
			}
		case idempotency.Acknowledged:
			// More than one order is a duplicate, counted as such.
			if !slices.ContainsFunc(os, func(o venue.OrderRecord) bool { return o.ID == rec.OrderID }) {
				lost.addf("intent %s is acknowledged as order %s, which the venue does not hold", rec.ClientOrderID, rec.OrderID)
			}
		case idempotency.Rejected:
			if len(os) > 0 && (rec.OrderID == "" || os[0].ID != rec.OrderID) {
				lost.addf("intent %s is rejected, the venue holds order %s", rec.ClientOrderID, os[0].ID)
			}
		}
	}
	return lost, dup
}

// derived reports whether a client_order_id was derived from an
// idempotency key (a UUIDv5), rather than drawn at random.
func derived(cid string) bool {
	u, err := uuid.Parse(cid)
	return err == nil && u.Version() == 5
}

func checkOneOrderPerKey(r *Run) error {
	if r.Placement == nil {
		return nil
	}
	_, dup := placementProblems(r)
	return dup.err()
}

func checkNoIntentLost(r *Run) error {
	if r.Placement == nil {
		return nil
	}
	lost, _ := placementProblems(r)
	return lost.err()
}

// finalRecoverAfter is how long after the last create signature the final
// Recover must begin: a signature's validity and the Placer's skew margin.
const finalRecoverAfter = 40 * time.Second

func checkNoUnknownAfterRecover(r *Run) error {
	pr := r.Placement
	if pr == nil {
		return nil
	}
	var p problems
	switch {
	case pr.FinalRecover.IsZero():
		p.addf("the final Recover never ran")
	case pr.FinalRecover.Sub(pr.LastSend) < finalRecoverAfter:
		p.addf("the final Recover began %v after the last create signature, under %v", pr.FinalRecover.Sub(pr.LastSend), finalRecoverAfter)
	}
	// On the venue's clock too: a client that signs with the venue's time
	// (or a venue that is behind) moves when its signatures expire there.
	if !pr.FinalRecover.IsZero() {
		venueAt := pr.FinalRecover.Add(r.Scenario.Hostile.ClockOffset)
		for _, e := range r.Events {
			if e.Op == 0 || e.Method != http.MethodPost || e.ClientOrderID == "" {
				continue
			}
			if ts, ok := unixSeconds(e.Timestamp); ok && venueAt.Sub(ts) < finalRecoverAfter {
				p.addf("the final Recover began %v on the venue's clock after a create's x-timestamp %s, under %v", venueAt.Sub(ts), e.Timestamp, finalRecoverAfter)
				break
			}
		}
	}
	if n := len(pr.Final.Unresolved) + len(pr.Final.InProgress); n > 0 {
		p.addf("the final Recover left %d intent(s) unresolved or in progress", n)
	}
	for _, rec := range pr.Records {
		if rec.State.Open() {
			p.addf("intent %s (key %s) is still %s after the final Recover", rec.ClientOrderID, rec.Key, rec.State)
		}
	}
	return p.err()
}

func checkCreateResentAfterExpiry(r *Run) error {
	if r.Placement == nil {
		return nil
	}
	var p problems
	last := map[string]time.Time{}
	for _, e := range r.Events {
		if e.Op == 0 || e.Method != http.MethodPost || e.ClientOrderID == "" {
			continue
		}
		ts, ok := unixSeconds(e.Timestamp)
		if !ok {
			continue
		}
		if prev, seen := last[e.ClientOrderID]; seen && ts.Sub(prev) <= signing.ValidFor+time.Second {
			p.addf("client_order_id %s was sent again %v after an earlier signature (x-timestamp %d → %d)",
				e.ClientOrderID, ts.Sub(prev), prev.Unix(), ts.Unix())
		}
		last[e.ClientOrderID] = ts
	}
	return p.err()
}

func checkReplaySendsNothing(r *Run) error {
	if r.Placement == nil {
		return nil
	}
	var p problems
	sent := map[int]int{}
	for _, e := range r.Events {
		path, _, _ := strings.Cut(e.Target, "?")
		if e.Op == 0 || (e.Method == http.MethodGet && strings.HasPrefix(path, wire.PathOrders) && len(path) > len(wire.PathOrders)) {
			continue // the order read afresh by id, retries included
		}
		sent[e.Op]++
	}
	for _, op := range r.Placement.Ops {
		if op.Op == "place" && op.Before == idempotency.Acknowledged && sent[op.ID] > 0 {
			p.addf("Place %d of acknowledged key %s sent %d request(s)", op.ID, op.Key, sent[op.ID])
		}
	}
	return p.err()
}

func placementFigures(r *Run) PlacementFigures {
	pr := r.Placement
	f := PlacementFigures{Keys: len(pr.Keys), Restarts: pr.Restarts}
	for _, op := range pr.Ops {
		switch op.Op {
		case "place":
			f.Places++
			if op.Outcome == "interrupted" {
				f.Interrupted++
			}
		default:
			f.Recovered += op.Settled
		}
	}
	f.Reused = f.Places - f.Keys
	for _, rec := range pr.Records {
		switch {
		case rec.State == idempotency.Acknowledged:
			f.Acknowledged++
		case rec.State == idempotency.Rejected:
			f.Rejected++
		case rec.State == idempotency.NotPlaced:
			f.NotPlaced++
		case rec.State.Open():
			f.Unsettled++
		}
	}
	sent := map[string]bool{}
	for _, e := range r.Events {
		if e.Op == 0 {
			continue
		}
		f.Requests++
		if e.Method == http.MethodPost && e.ClientOrderID != "" {
			if sent[e.ClientOrderID] {
				f.Resends++
			}
			sent[e.ClientOrderID] = true
		}
	}
	lost, dup := placementProblems(r)
	f.Lost, f.Duplicated = lost.n, dup.n
	return f
}

// String prints the figures on one line.
func (f PlacementFigures) String() string {
	return fmt.Sprintf("places %d on %d keys (%d reused, %d interrupted by %d restarts); acknowledged %d, rejected %d, not placed %d, unsettled %d; recovered %d; resends %d; lost %d, duplicated %d",
		f.Places, f.Keys, f.Reused, f.Interrupted, f.Restarts, f.Acknowledged, f.Rejected, f.NotPlaced, f.Unsettled,
		f.Recovered, f.Resends, f.Lost, f.Duplicated)
}
