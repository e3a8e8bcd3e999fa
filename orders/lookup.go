package orders

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/tradewire/tradewire/idempotency"
	"github.com/tradewire/tradewire/internal/pages"
	"github.com/tradewire/tradewire/transport"
)

// sighting is an order a read of the list found: its facts, and its JSON
// as listed.
type sighting struct {
	facts Facts
	raw   []byte
}

// listing is what one read of the orders list learned about the
// client_order_ids it looked for.
type listing struct {
	// found holds the orders it found, by client_order_id: each is an
	// answer, however the rest of the read went.
	found map[string]sighting
	// asOf is when the read began.
	asOf readTime
	// err is nil when the read saw every order of its window. Otherwise
	// an id it did not find is not known to be absent: err matches
	// errLookupIncomplete when the list could not be read whole, or is
	// the venue's or the transport's failure.
	err error
}

// readTime is when a read of the orders list began, in two frames that
// are never mixed: on the venue's clock (at the latest), and on this
// Placer's clock.
type readTime struct {
	venue, local time.Time
}

// incomplete reports whether the read failed because the list could not
// be read whole (rather than because the venue or the transport failed).
func (l listing) incomplete() bool { return errors.Is(l.err, errLookupIncomplete) }

// venuePageSize is the size of the orders list's full page as the venue
// is seen to serve it (and brokertest by default). A single page holding
// that many rows without a next link is confirmed as a longer list's last
// page is.
const venuePageSize = 100

// find reads the account's orders created since since, for symbol ("" for
// every symbol), over every page, and returns those whose client_order_id
// is in want. Each row is decoded once, however many ids are wanted, and
// the read stops as soon as every one is found live (not failed). A
// symbol the venue refuses to list is dropped from the filter.
//
// An id listed in several rows is answered by a live row if any shows
// one: the venue may hold a second order for a reused client_order_id,
// and a failed copy must not hide a live one. A failed row is an answer
// only from a read that saw every order; an order id shown both failed
// and not failed is no answer (the list contradicts itself).
//
// A live row found is an answer whatever else the read meets. Without
// one, a read that could not see every order says so (listing.err matches
// errLookupIncomplete), never "not found": a row that does not decode or
// lacks a client_order_id, an order id listed twice (the pages shifted
// under the read), a page that does not decode, a foreign or repeated
// next link, or the page cap. A last page without a next link that holds
// as many rows as every full page before it (or a single page of
// venuePageSize rows) may have lost its link, or end a list whose size is
// a multiple of the page size: one more read, of the orders created no
// later than the oldest row seen, tells them apart (one page, or as many
// as hold the rows sharing that row's creation time). The list is
// incomplete only if that read shows an order not yet seen.
func (p *Placer) find(ctx context.Context, symbol string, since time.Time, want map[string]bool) listing {
	start := p.clock.Now()
	g := &datedGetter{Client: p.tc}
	l := p.read(ctx, g, symbol, since, want)
	var status *transport.StatusError
	if symbol != "" && errors.As(l.err, &status) && status.StatusCode == http.StatusBadRequest && hasField(status, "symbol") {
		// The venue does not list that symbol (any more): list them all.
		l = p.read(ctx, g, "", since, want)
	}
	// The start on this clock, with the offset as the read itself left
	// it; or the Date of its first answer, if earlier: a step of this
	// clock moves the one and not the other, a Date stamped late (by a
	// proxy holding the answer) the other and not the one.
	off, _ := p.tc.ClockOffset()
	l.asOf = readTime{venue: start.Add(off), local: start}
	if g.dated && g.date.Before(l.asOf.venue) {
		l.asOf.venue = g.date
	}
	return l
}

// datedGetter reads pages through the transport and keeps the Date of the
// first answer: the venue's clock when it began serving the read.
type datedGetter struct {
	*transport.Client
	date  time.Time
	dated bool
	seen  bool
}

func (g *datedGetter) Get(ctx context.Context, target string) (*transport.Response, error) {
	r, err := g.Client.Get(ctx, target)
	if err == nil && !g.seen {
		g.seen = true
		g.date, g.dated = r.Date()
	}
	return r, err
}

// responseBody is the body of an answer, for pages.Walk.
func responseBody(r *transport.Response) []byte { return r.Body }

// reading is one read of the list in progress.
type reading struct {
	p      *Placer
	want   map[string]bool
	found  map[string]sighting        // the copy chosen so far, by client_order_id
	states map[string]map[string]bool // by wanted client_order_id: each order id listed, and whether failed
	torn   map[string]string          // wanted client_order_ids with an order id listed failed and not: that id
	seen   map[string]bool            // every order id listed
	blind  error                      // why the read may have missed an order, if it did
	pages  int                        // pages read
	last   []json.RawMessage          // the last page's rows
}

// visit reads one page's rows. confirming reads the confirming read's
// rows: there a row already seen is expected, and a row not seen means
// the list was cut short. It returns false once every wanted id is found
// live.
func (r *reading) visit(page int, rows []json.RawMessage, confirming bool) bool {
	for i, raw := range rows {
		o, err := r.p.codec.Facts(raw)
		if err != nil {
			r.blind = fmt.Errorf("%w: page %d row %d does not decode: %v", errLookupIncomplete, page, i+1, err)
			continue
		}
		switch {
		case confirming && r.seen[o.ID]:
			continue
		case confirming:
			r.blind = fmt.Errorf("%w: the list's last page had no next link, and orders created before its last row (such as %s) were not on it", errLookupIncomplete, o.ID)
		case r.seen[o.ID]:
			r.blind = fmt.Errorf("%w: page %d row %d lists order %s again: the pages shifted while they were read", errLookupIncomplete, page, i+1, o.ID)
		}
		r.seen[o.ID] = true
		if o.ClientOrderID == "" {
			r.blind = fmt.Errorf("%w: page %d row %d (order %q) has no client_order_id", errLookupIncomplete, page, i+1, o.ID)
			continue
		}
		if r.want[o.ClientOrderID] {
			r.note(o, raw)
		}
	}
	return !r.allLive()
}

// note records a row of a wanted client_order_id.
func (r *reading) note(o Facts, raw []byte) {
	cid := o.ClientOrderID
	ids := r.states[cid]
	if ids == nil {
		ids = map[string]bool{}
		r.states[cid] = ids
	}
	if failed, ok := ids[o.ID]; ok && failed != o.Failed {
		r.torn[cid] = o.ID
	}
	ids[o.ID] = o.Failed
	if cur, ok := r.found[cid]; !ok || (cur.facts.Failed && !o.Failed) {
		r.found[cid] = sighting{facts: o, raw: raw}
	}
}

// allLive reports whether every wanted id has a live row, none of them
// contradicted.
func (r *reading) allLive() bool {
	if len(r.found) < len(r.want) || len(r.torn) > 0 {
		return false
	}
	for _, s := range r.found {
		if s.facts.Failed {
			return false
		}
	}
	return true
}

func (p *Placer) read(ctx context.Context, g pages.Getter[*transport.Response], symbol string, since time.Time, want map[string]bool) listing {
	q := url.Values{}
	q.Set("account_number", p.account)
	q.Set("created_at_start", since.UTC().Format(time.RFC3339))
	if symbol != "" {
		q.Set("symbol", symbol)
	}
	r := &reading{p: p, want: want, found: map[string]sighting{}, states: map[string]map[string]bool{},
		torn: map[string]string{}, seen: map[string]bool{}}
	stopped := false
	err := pages.Walk(ctx, g, responseBody, ordersPath+"?"+q.Encode(), p.pageCap, func(page int, _ string, rows []json.RawMessage) (bool, error) {
		r.pages, r.last = page, rows
		more := r.visit(page, rows, false)
		stopped = !more
		return more, nil
	})
	if !stopped && (errors.Is(err, pages.ErrVanished) || (err == nil && r.pages == 1 && len(r.last) >= venuePageSize)) {
		err = p.confirmEnd(ctx, q, r)
	}
	l := listing{found: r.found}
	complete := err == nil && r.blind == nil
	for cid, s := range r.found {
		switch id, torn := r.torn[cid]; {
		case torn:
			delete(l.found, cid)
			r.blind = fmt.Errorf("%w: order %s (client_order_id %s) is listed both failed and not failed", errLookupIncomplete, id, cid)
		case s.facts.Failed && !complete:
			// A live copy may be on what the read could not see.
			delete(l.found, cid)
		}
	}
	switch {
	case len(l.found) == len(want):
	case err == nil:
		l.err = r.blind
	case pages.Own(err): // the read could not see every order
		l.err = fmt.Errorf("%w: %v", errLookupIncomplete, err)
	default:
		l.err = err // the venue's answer or the transport's
	}
	return l
}

// confirmEnd reads the orders created no later than the oldest row of
// the last page: a list that ended there shows only rows already seen
// (one page, unless more than a page of them share that creation time).
// It stops at the first row not seen before, which makes r blind, and
// returns the read's failure.
func (p *Placer) confirmEnd(ctx context.Context, q url.Values, r *reading) error {
	var oldest time.Time
	for _, raw := range r.last {
		var row struct {
			CreatedAt time.Time `json:"created_at"`
		}
		if err := json.Unmarshal(raw, &row); err != nil || row.CreatedAt.IsZero() {
			return fmt.Errorf("%w: the last page has no next link, and its rows' created_at cannot bound a read that confirms its end", errLookupIncomplete)
		}
		if oldest.IsZero() || row.CreatedAt.Before(oldest) {
			oldest = row.CreatedAt
		}
	}
	q.Set("created_at_end", oldest.UTC().Format(time.RFC3339Nano))
	blind := r.blind
	r.blind = nil
	err := pages.Walk(ctx, p.tc, responseBody, ordersPath+"?"+q.Encode(), p.pageCap, func(page int, _ string, rows []json.RawMessage) (bool, error) {
		r.visit(page, rows, true)
		return r.blind == nil, nil
	})
	if r.blind == nil {
		r.blind = blind
	}
	if err != nil && pages.Own(err) {
		return fmt.Errorf("%w: the last page has no next link, and the read that confirms its end: %v", errLookupIncomplete, err)
	}
	return err
}

// lookup looks one intent's order up: the orders created since since, for
// its symbol. It returns the order's facts and JSON when found, nil when
// a read that saw every order did not find it, and otherwise the reason
// it could not tell; and when the read began.
func (p *Placer) lookup(ctx context.Context, rec *idempotency.Record, since time.Time) (*Facts, []byte, readTime, error) {
	l := p.find(ctx, rec.Symbol, since, map[string]bool{rec.ClientOrderID: true})
	if s, ok := l.found[rec.ClientOrderID]; ok {
		return &s.facts, s.raw, l.asOf, nil
	}
	return nil, nil, l.asOf, l.err
}
