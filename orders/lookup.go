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
	// ErrLookupIncomplete when the list could not be read whole, or is
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
func (l listing) incomplete() bool { return errors.Is(l.err, ErrLookupIncomplete) }

// find reads the account's orders created since since, for symbol ("" for
// every symbol), over every page, and returns those whose client_order_id
// is in want. Each row is decoded once, however many ids are wanted, and
// the read stops as soon as every one is found; an id listed twice keeps
// its first row. A symbol the venue refuses to list is dropped from the
// filter.
//
// A row found is an answer whatever else the read meets. Without one, a
// read that could not see every order says so (listing.err matches
// ErrLookupIncomplete), never "not found": a row that does not decode or
// lacks a client_order_id, a page that does not decode, a foreign or
// repeated next link, the page cap, or a next link that vanished — a last
// page holding as many rows as every full page before it. (A list whose
// size is an exact multiple of the page size looks the same and is taken
// as incomplete too; a single full page without next cannot be told from
// a complete one.)
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

func (p *Placer) read(ctx context.Context, g pages.Getter, symbol string, since time.Time, want map[string]bool) listing {
	q := url.Values{}
	q.Set("account_number", p.account)
	q.Set("created_at_start", since.UTC().Format(time.RFC3339))
	if symbol != "" {
		q.Set("symbol", symbol)
	}
	l := listing{found: map[string]sighting{}}
	var blind error // why the read may have missed an order, if it did
	err := pages.Walk(ctx, g, ordersPath+"?"+q.Encode(), p.pageCap, func(page int, _ string, rows []json.RawMessage) (bool, error) {
		for i, raw := range rows {
			o, err := p.codec.Facts(raw)
			if err != nil {
				blind = fmt.Errorf("%w: page %d row %d does not decode: %v", ErrLookupIncomplete, page, i+1, err)
				continue
			}
			if o.ClientOrderID == "" {
				blind = fmt.Errorf("%w: page %d row %d (order %q) has no client_order_id", ErrLookupIncomplete, page, i+1, o.ID)
				continue
			}
			if _, seen := l.found[o.ClientOrderID]; want[o.ClientOrderID] && !seen {
				l.found[o.ClientOrderID] = sighting{facts: o, raw: raw}
				if len(l.found) == len(want) {
					return false, nil
				}
			}
		}
		return true, nil
	})
	switch {
	case len(l.found) == len(want):
	case err == nil:
		l.err = blind
	case pages.Own(err): // the read could not see every order
		l.err = fmt.Errorf("%w: %v", ErrLookupIncomplete, err)
	default:
		l.err = err // the venue's answer or the transport's
	}
	return l
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
