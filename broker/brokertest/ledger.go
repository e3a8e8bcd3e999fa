package brokertest

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
	Dropped bool   // the connection was closed without an answer
	Fault   string // injected fault kinds applied, comma separated, or ""
	Created string // id of the order this request created, or ""
	// Class is the endpoint class the venue rate-limits the request's
	// method and path under (market_data, account_reads, order_reads,
	// order_writes; see RateLimits), or "" for a path of none.
	Class string
}

// OrderRecord is the Ledger's record of one order created through the API.
type OrderRecord struct {
	ID            string
	ClientOrderID string
	AccountNumber string
	Symbol        string
	Side          string
	Type          string
	State         string // state when created
	CreatedAt     time.Time
}

// Counts summarises the requests in a Ledger.
type Counts struct {
	Total        int
	ByStatus     map[int]int
	Throttled    int // 429 answers
	Unauthorized int // 401 answers
	Dropped      int // connections closed without an answer
	Creates      int // orders created
}

// Ledger records every request a Server received and every order created
// through its API, for assertions. Get a Server's with Server.Ledger; the
// zero Ledger is empty. It is safe for concurrent use.
type Ledger struct {
	mu       sync.Mutex
	requests []Request
	orders   []OrderRecord
	// added, when set, is closed at the next request recorded.
	added chan struct{}
}

func (l *Ledger) add(r Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.requests = append(l.requests, r)
	if l.added != nil {
		close(l.added)
		l.added = nil
	}
}

// Len returns how many requests the ledger holds.
func (l *Ledger) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.requests)
}

// AwaitRequests calls f with each request from index from on (in arrival
// order, from 0), waiting for the venue to record more, until f returns
// true or ctx ends. It returns the index after the last request f saw.
// Over a socket the venue may record a request its client gave up on (a
// timeout, a cancel) after the client has moved on: a harness that must
// see the ledger in the client's order waits for it here.
func (l *Ledger) AwaitRequests(ctx context.Context, from int, f func(Request) bool) (int, error) {
	for {
		l.mu.Lock()
		for from < len(l.requests) {
			r := l.requests[from]
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
	l.orders = append(l.orders, o)
}

// Requests returns a copy of every request recorded, in arrival order.
func (l *Ledger) Requests() []Request {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Request(nil), l.requests...)
}

// Orders returns a copy of every order created through the API, in order.
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
	for _, o := range l.orders {
		if o.ClientOrderID == id {
			out = append(out, o)
		}
	}
	return out
}

// DuplicateClientIDs returns the client_order_ids used by more than one
// created order. A safe client leaves it empty.
func (l *Ledger) DuplicateClientIDs() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	seen := map[string]int{}
	var out []string
	for _, o := range l.orders {
		seen[o.ClientOrderID]++
		if seen[o.ClientOrderID] == 2 {
			out = append(out, o.ClientOrderID)
		}
	}
	return out
}

// Counts summarises the ledger.
func (l *Ledger) Counts() Counts {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := Counts{Total: len(l.requests), ByStatus: map[int]int{}, Creates: len(l.orders)}
	for _, r := range l.requests {
		c.ByStatus[r.Status]++
		switch {
		case r.Dropped:
			c.Dropped++
		case r.Status == 429:
			c.Throttled++
		case r.Status == 401:
			c.Unauthorized++
		}
	}
	return c
}

// Reset forgets everything recorded so far.
func (l *Ledger) Reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.requests, l.orders = nil, nil
}
