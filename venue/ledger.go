package venue

import (
	"context"
	"sync"
	"time"
)

// Request is the Ledger's record of one request the venue received.
type Request struct {
	Time      time.Time // venue clock when it arrived
	Method    string
	Target    string // request-target as received: path and raw query
	APIKey    string // x-api-key as sent
	Timestamp string // x-timestamp as sent
	// SignatureValid reports that the headers were present, the key known,
	// the timestamp in the window and the signature good.
	SignatureValid bool
	// Status is the status answered; 0 when the connection was dropped.
	Status  int
	Dropped bool // the connection was closed without an answer
	// Fault is the injected fault kinds applied, comma separated, or "";
	// or "refused_unserved" for an HTTP/2 stream a TLS Server refused
	// before the venue saw it (one beyond Config.MaxConcurrentStreams, or
	// on a connection going away): Dropped, with no status, signature or
	// effect.
	Fault   string
	Created string // id of the order this request created, or ""
	// Class is the endpoint class the venue rate-limits the request's
	// method and path under (market_data, account_reads, order_reads,
	// order_writes; see RateLimits), or "" for a path of none.
	Class string
}

// OrderRecord is the Ledger's record of one order created through the
// API or placed by Venue.PlaceExternal.
type OrderRecord struct {
	ID            string
	ClientOrderID string
	AccountNumber string
	Symbol        string
	Side          string
	Type          string
	State         string // state when created
	CreatedAt     time.Time
	// External reports an order placed by Venue.PlaceExternal, as if by
	// another tool, rather than through the API.
	External bool
}

// Counts summarises the requests in a Ledger.
type Counts struct {
	Total        int
	ByStatus     map[int]int
	Throttled    int // 429 answers
	Unauthorized int // 401 answers
	Dropped      int // connections closed without an answer
	Creates      int // orders created through the API
}

// Ledger records the requests a Venue received and every order created
// through its API or placed by Venue.PlaceExternal, for assertions. Get a Venue's with Venue.Ledger; the
// zero Ledger is empty and keeps every request. It is safe for concurrent
// use.
//
// What it answers about orders (Orders, OrdersByClientID,
// DuplicateClientIDs) and its Counts are exact over everything recorded
// since the last Reset, each answered from an index or a running count,
// not a scan. The requests themselves it keeps all of, unless the Venue
// has a Config.LedgerLimit n: then it keeps the n most recent (a ring,
// for a long-running venue such as tradewire sim serve) while Len, Counts
// and the order records still count them all.
type Ledger struct {
	mu sync.Mutex
	// limit, when positive, is how many requests the ring keeps.
	limit int
	// requests holds the requests from index first (of all recorded) on;
	// with a limit, as a ring of at most limit from head.
	requests []Request
	head     int
	first    int
	counts   Counts
	orders   []OrderRecord
	byClient map[string][]int // client_order_id → indexes into orders
	dups     []string         // client_order_ids of more than one order, in the order they became so
	// added, when set, is closed at the next request recorded.
	added chan struct{}
	// observe, when set (before the venue serves), is called with each
	// request recorded, after the lock is released: the venue's metrics.
	observe func(Request)
}

func (l *Ledger) add(r Request) {
	if l.observe != nil {
		defer l.observe(r)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.limit <= 0 || len(l.requests) < l.limit:
		l.requests = append(l.requests, r)
	default:
		l.requests[l.head] = r
		l.head = (l.head + 1) % l.limit
		l.first++
	}
	c := &l.counts
	c.Total++
	if c.ByStatus == nil {
		c.ByStatus = map[int]int{}
	}
	c.ByStatus[r.Status]++
	switch {
	case r.Dropped:
		c.Dropped++
	case r.Status == 429:
		c.Throttled++
	case r.Status == 401:
		c.Unauthorized++
	}
	if l.added != nil {
		close(l.added)
		l.added = nil
	}
}

// at returns recorded request i (of all); first <= i < first+len(requests).
func (l *Ledger) at(i int) Request {
	j := i - l.first
	if l.limit > 0 && len(l.requests) == l.limit {
		j = (l.head + j) % l.limit
	}
	return l.requests[j]
}

// len returns how many requests the ledger has recorded, kept or not.
func (l *Ledger) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.first + len(l.requests)
}

// AwaitRequests calls f with each request from index from on (in arrival
// order, from 0), waiting for the venue to record more, until f returns
// true or ctx ends. It returns the index after the last request f saw.
// Over a socket the venue may record a request its client gave up on (a
// timeout, a cancel) after the client has moved on: a harness that must
// see the ledger in the client's order waits for it here. With
// a Config.LedgerLimit, requests no longer kept are passed over.
func (l *Ledger) AwaitRequests(ctx context.Context, from int, f func(Request) bool) (int, error) {
	for {
		l.mu.Lock()
		from = max(from, l.first)
		for from < l.first+len(l.requests) {
			r := l.at(from)
			from++
			if f(r) {
				l.mu.Unlock()
				return from, nil
			}
		}
		if l.added == nil {
			l.added = make(chan struct{})
		}
		ch := l.added
		l.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return from, ctx.Err()
		}
	}
}

func (l *Ledger) addOrder(o OrderRecord) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byClient == nil {
		l.byClient = map[string][]int{}
	}
	l.byClient[o.ClientOrderID] = append(l.byClient[o.ClientOrderID], len(l.orders))
	if len(l.byClient[o.ClientOrderID]) == 2 {
		l.dups = append(l.dups, o.ClientOrderID)
	}
	l.orders = append(l.orders, o)
	if !o.External {
		l.counts.Creates++
	}
}

// Requests returns a copy of the requests kept, in arrival order: every
// request recorded, or with a Config.LedgerLimit n the n most recent.
func (l *Ledger) Requests() []Request {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.requests) == 0 {
		return nil
	}
	out := make([]Request, 0, len(l.requests))
	out = append(out, l.requests[l.head:]...)
	return append(out, l.requests[:l.head]...)
}

// Orders returns a copy of every order created through the API or
// placed by Venue.PlaceExternal, in order.
func (l *Ledger) Orders() []OrderRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]OrderRecord(nil), l.orders...)
}

// OrdersByClientID returns every order created with client_order_id id.
// A client that is safe against lost responses leaves exactly one.
func (l *Ledger) OrdersByClientID(id string) []OrderRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []OrderRecord
	for _, i := range l.byClient[id] {
		out = append(out, l.orders[i])
	}
	return out
}

// DuplicateClientIDs returns the client_order_ids used by more than one
// created order, in the order each was used a second time. A safe client
// leaves it empty.
func (l *Ledger) DuplicateClientIDs() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.dups...)
}

// Counts summarises every request and create recorded.
func (l *Ledger) Counts() Counts {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.counts
	c.ByStatus = make(map[int]int, len(l.counts.ByStatus))
	for k, n := range l.counts.ByStatus {
		c.ByStatus[k] = n
	}
	return c
}
