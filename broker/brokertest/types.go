package brokertest

import (
	"context"
	"time"

	"github.com/tradewire/tradewire/internal/venue"
)

// FaultKind names what an injected Fault does to a matching request. Its
// values are the "kind" strings of a fault plan's JSON.
type FaultKind string

// The kinds of Fault.
const (
	// FaultRespond answers Status with Header and Body instead of serving
	// the request. Nothing is executed: no auth, no rate limit, no create.
	FaultRespond FaultKind = "respond"
	// FaultLoseResponse serves the request (a create is committed) and then
	// loses the answer: Status 429, 500, 502, 503 or 504 answers that status
	// instead, Status 0 drops the connection without any answer.
	FaultLoseResponse FaultKind = "lose_response"
	// FaultLatency waits Delay on the venue's clock, then serves normally
	// (or, with AfterCommit, serves first and delays only the answer).
	FaultLatency FaultKind = "latency"
	// FaultRedirect answers Status (default 307) with a Location on
	// another host: Location + the request-target.
	FaultRedirect FaultKind = "redirect"
	// FaultForeignNext serves normally but points the page's "next" link
	// at Location (scheme and host) instead of the venue.
	FaultForeignNext FaultKind = "foreign_next"

	// FaultTruncatedBody serves the request (a create is committed) and
	// answers its 2xx with the body cut to half its length.
	FaultTruncatedBody FaultKind = "truncated_body"
	// FaultOtherOrderBody serves the request (a create is committed) and
	// answers its 2xx with another order's JSON: the account's newest other
	// order, or, when it has none, an order the venue does not hold.
	FaultOtherOrderBody FaultKind = "other_order_body"
	// FaultWrongClientOrderID serves the request (a create is committed)
	// and answers its 2xx with the new order's JSON under another
	// client_order_id.
	FaultWrongClientOrderID FaultKind = "wrong_client_order_id"

	// FaultRefusedStream serves the request (a create is committed), then
	// resets its HTTP/2 stream with RST_STREAM REFUSED_STREAM, which tells
	// the client the request was not processed: Go's HTTP/2 client replays
	// such a request by itself. Only a NewTLSServer can; elsewhere the
	// connection is dropped, as by FaultLoseResponse with Status 0.
	FaultRefusedStream FaultKind = "refused_stream"
	// FaultProtocolError is FaultRefusedStream with RST_STREAM PROTOCOL_ERROR.
	FaultProtocolError FaultKind = "protocol_error"
	// FaultGoAway is FaultRefusedStream with a GOAWAY whose last stream id
	// is below the request's: the server claims it never processed it.
	FaultGoAway FaultKind = "goaway"
)

// Fault is one scripted misbehaviour: the next Times requests that match
// Method and Path get Kind. The zero value matches every request once and
// is refused by Inject because it has no Kind.
type Fault struct {
	Kind FaultKind `json:"kind"`
	// Method matches the request method; empty matches any.
	Method string `json:"method,omitempty"`
	// Path matches the URL path: a prefix, or a path.Match pattern when it
	// contains '*', '?' or '['. Empty matches any.
	Path string `json:"path,omitempty"`
	// Times is how many matching requests are affected (0 means 1).
	Times int `json:"times,omitempty"`
	// Status, Header and Body are the answer (FaultRespond, FaultRedirect,
	// FaultLoseResponse's status).
	Status int               `json:"status,omitempty"`
	Header map[string]string `json:"headers,omitempty"`
	Body   string            `json:"body,omitempty"`
	// Delay is the latency of FaultLatency, on the venue's clock. In a
	// fault plan's JSON, "delay" is a Go duration string.
	Delay time.Duration `json:"-"`
	// AfterCommit makes FaultLatency serve the request first (a create is
	// committed) and delay only the answer, which is lost if the client
	// gives up waiting: a timeout after commit.
	AfterCommit bool `json:"after_commit,omitempty"`
	// Location is the foreign scheme and host, e.g. "https://evil.example",
	// for FaultRedirect and FaultForeignNext.
	Location string `json:"location,omitempty"`
}

// Mix is a probabilistic fault mix for simulation runs, driven by an RNG
// seeded with Seed. Each rate is a probability in [0, 1] per request; they
// are tried in the order 429, 5xx, lost response, latency. The zero value
// injects nothing.
type Mix struct {
	Seed        int64   `json:"seed"`
	Rate429     float64 `json:"rate_429,omitempty"`
	Rate5xx     float64 `json:"rate_5xx,omitempty"`
	RateLost    float64 `json:"rate_lost,omitempty"`
	RateLatency float64 `json:"rate_latency,omitempty"`
	// Latency is the delay of a latency draw. In a fault plan's JSON,
	// "latency" is a Go duration string.
	Latency time.Duration `json:"-"`
}

// DuplicateMode selects what a create with an already-used client_order_id
// does. The real venue's behaviour is undocumented; a client must be safe
// under all three. Its values are a fault plan's "duplicate" strings.
type DuplicateMode string

// The duplicate modes.
const (
	// ReturnOriginal (the default, also the zero value "") answers 200
	// with the original order and creates nothing.
	ReturnOriginal DuplicateMode = "return_original"
	// Reject400 answers 400 validation_error on client_order_id.
	Reject400 DuplicateMode = "reject"
	// CreateSecond naively creates a second order: the dangerous one.
	CreateSecond DuplicateMode = "create_second"
)

// Hostile is the venue's hostile modes, each off at its zero value; the
// zero Hostile is a well-behaved venue. The orders list's lag, omissions
// and dropped links apply to GET .../orders/ only: GET .../orders/{id}/
// always shows the order as it is now, with its client_order_id.
type Hostile struct {
	// ClockOffset moves the venue's own notion of now from its clock:
	// now = clock + ClockOffset, positive when the venue is ahead. It
	// governs the 30 s signature window, every timestamp the venue writes
	// (created_at, updated_at, best_bid_ask), the prices, and the Date
	// header it sets on every answer.
	ClockOffset time.Duration
	// ListLag hides orders created less than ListLag ago (on the venue's
	// clock) from the orders list.
	ListLag time.Duration
	// OmitClientOrderID is the fraction, in [0, 1], of the orders whose
	// list rows lack the client_order_id field; 1 is every row. Which
	// orders are chosen is a function of the seed and the order's id, so
	// an order that lacks it lacks it on every list.
	OmitClientOrderID float64
	// DropNext is the probability, in [0, 1], that a page of the orders
	// list that should carry a "next" link carries null instead; 1 is
	// every such page. The draws come from an RNG seeded with the seed.
	DropNext float64
}

// FaultPlan is the JSON fault file the CLI loads with --faults FILE (see
// the package documentation for the format), as LoadFaultPlan and
// ParseFaultPlan decode it. The zero value changes nothing.
type FaultPlan struct {
	Faults    []Fault
	Mix       *Mix // nil: no mix
	Duplicate DuplicateMode
	// Hostile, if set, replaces the venue's hostile modes.
	Hostile *Hostile
}

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
// zero Ledger is empty and records nothing. It is safe for concurrent use.
type Ledger struct {
	l *venue.Ledger
}

func (l *Ledger) venue() *venue.Ledger {
	if l == nil || l.l == nil {
		return &venue.Ledger{}
	}
	return l.l
}

// Len returns how many requests the ledger holds.
func (l *Ledger) Len() int { return l.venue().Len() }

// AwaitRequests calls f with each request from index from on (in arrival
// order, from 0), waiting for the venue to record more, until f returns
// true or ctx ends. It returns the index after the last request f saw.
// Over a socket the venue may record a request its client gave up on (a
// timeout, a cancel) after the client has moved on: a harness that must
// see the ledger in the client's order waits for it here.
func (l *Ledger) AwaitRequests(ctx context.Context, from int, f func(Request) bool) (int, error) {
	return l.venue().AwaitRequests(ctx, from, func(r venue.Request) bool { return f(Request(r)) })
}

// Requests returns a copy of every request recorded, in arrival order.
func (l *Ledger) Requests() []Request { return requests(l.venue().Requests()) }

// Orders returns a copy of every order created through the API, in order.
func (l *Ledger) Orders() []OrderRecord { return orderRecords(l.venue().Orders()) }

// OrdersByClientID returns every order created with client_order_id id.
// A client that is safe against lost responses leaves exactly one.
func (l *Ledger) OrdersByClientID(id string) []OrderRecord {
	return orderRecords(l.venue().OrdersByClientID(id))
}

// DuplicateClientIDs returns the client_order_ids used by more than one
// created order. A safe client leaves it empty.
func (l *Ledger) DuplicateClientIDs() []string { return l.venue().DuplicateClientIDs() }

// Counts summarises the ledger.
func (l *Ledger) Counts() Counts { return Counts(l.venue().Counts()) }

// Reset forgets everything recorded so far.
func (l *Ledger) Reset() { l.venue().Reset() }

func requests(in []venue.Request) []Request {
	if in == nil {
		return nil
	}
	out := make([]Request, len(in))
	for i, r := range in {
		out[i] = Request(r)
	}
	return out
}

func orderRecords(in []venue.OrderRecord) []OrderRecord {
	if in == nil {
		return nil
	}
	out := make([]OrderRecord, len(in))
	for i, o := range in {
		out[i] = OrderRecord(o)
	}
	return out
}

// The conversions at the boundary with the venue engine.

func (f Fault) venue() venue.Fault {
	return venue.Fault{Kind: venue.FaultKind(f.Kind), Method: f.Method, Path: f.Path, Times: f.Times,
		Status: f.Status, Header: f.Header, Body: f.Body, Delay: f.Delay, AfterCommit: f.AfterCommit, Location: f.Location}
}

func faultFromVenue(f venue.Fault) Fault {
	return Fault{Kind: FaultKind(f.Kind), Method: f.Method, Path: f.Path, Times: f.Times,
		Status: f.Status, Header: f.Header, Body: f.Body, Delay: f.Delay, AfterCommit: f.AfterCommit, Location: f.Location}
}

func venueFaults(fs []Fault) []venue.Fault {
	if fs == nil {
		return nil
	}
	out := make([]venue.Fault, len(fs))
	for i, f := range fs {
		out[i] = f.venue()
	}
	return out
}

func (p FaultPlan) venue() venue.FaultPlan {
	vp := venue.FaultPlan{Faults: venueFaults(p.Faults), Duplicate: venue.DuplicateMode(p.Duplicate)}
	if p.Mix != nil {
		m := venue.Mix(*p.Mix)
		vp.Mix = &m
	}
	if p.Hostile != nil {
		h := venue.Hostile(*p.Hostile)
		vp.Hostile = &h
	}
	return vp
}

func planFromVenue(vp venue.FaultPlan) FaultPlan {
	p := FaultPlan{Duplicate: DuplicateMode(vp.Duplicate)}
	if vp.Faults != nil {
		p.Faults = make([]Fault, len(vp.Faults))
		for i, f := range vp.Faults {
			p.Faults[i] = faultFromVenue(f)
		}
	}
	if vp.Mix != nil {
		m := Mix(*vp.Mix)
		p.Mix = &m
	}
	if vp.Hostile != nil {
		h := Hostile(*vp.Hostile)
		p.Hostile = &h
	}
	return p
}
