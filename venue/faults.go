package venue

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"path"
	"strings"
	"time"
)

// faultKind is a Fault's Kind: the "kind" strings of a fault plan's JSON.
type faultKind = string

// The kinds of Fault (see Fault.Kind).
const (
	faultRespond            faultKind = "respond"
	faultLoseResponse       faultKind = "lose_response"
	faultLatency            faultKind = "latency"
	faultRedirect           faultKind = "redirect"
	faultForeignNext        faultKind = "foreign_next"
	faultTruncatedBody      faultKind = "truncated_body"
	faultOtherOrderBody     faultKind = "other_order_body"
	faultWrongClientOrderID faultKind = "wrong_client_order_id"
	faultRefusedStream      faultKind = "refused_stream"
	faultProtocolError      faultKind = "protocol_error"
	faultGoAway             faultKind = "goaway"
)

// Fault is one scripted misbehaviour: the next Times requests that match
// Method and Path get Kind. The zero value matches every request once and
// is refused by Inject because it has no Kind.
type Fault struct {
	// Kind is what the fault does, one of:
	//   - "respond": answer Status with Header and Body instead of serving
	//     the request. Nothing is executed: no auth, no rate limit, no create.
	//   - "lose_response": serve the request (a create is committed), then
	//     lose the answer: Status 429, 500, 502, 503 or 504 answers that
	//     status instead, Status 0 drops the connection without any answer.
	//   - "latency": wait Delay on the venue's clock, then serve normally
	//     (or, with AfterCommit, serve first and delay only the answer).
	//   - "redirect": answer Status (default 307) with a Location on
	//     another host: Location + the request-target.
	//   - "foreign_next": serve normally but point the page's "next" link
	//     at Location (scheme and host) instead of the venue.
	//   - "truncated_body": serve the request (a create is committed) and
	//     answer its 2xx with the body cut to half its length.
	//   - "other_order_body": serve the request (a create is committed) and
	//     answer its 2xx with another order's JSON: the account's newest
	//     other order, or, when it has none, an order the venue does not hold.
	//   - "wrong_client_order_id": serve the request (a create is committed)
	//     and answer its 2xx with the new order's JSON under another
	//     client_order_id.
	//   - "refused_stream": serve the request (a create is committed), then
	//     reset its HTTP/2 stream with RST_STREAM REFUSED_STREAM, which tells
	//     the client the request was not processed: Go's HTTP/2 client
	//     replays such a request by itself. Only a TLS Server (Venue.Serve)
	//     can; elsewhere the connection is dropped, as by "lose_response"
	//     with Status 0.
	//   - "protocol_error": "refused_stream" with RST_STREAM PROTOCOL_ERROR.
	//   - "goaway": "refused_stream" with a GOAWAY whose last stream id is
	//     below the request's: the server claims it never processed it.
	// Any other value is refused by New, Inject and SetFaultPlan.
	Kind string `json:"kind"`
	// Method matches the request method; empty matches any.
	Method string `json:"method,omitempty"`
	// Path matches the URL path: a prefix, or a path.Match pattern when it
	// contains '*', '?' or '['. Empty matches any.
	Path string `json:"path,omitempty"`
	// Times is how many matching requests are affected (0 means 1).
	Times int `json:"times,omitempty"`
	// Status, Header and Body are the answer (faultRespond, faultRedirect,
	// faultLoseResponse's status).
	Status int               `json:"status,omitempty"`
	Header map[string]string `json:"headers,omitempty"`
	Body   string            `json:"body,omitempty"`
	// Delay is the latency of faultLatency, on the venue's clock. In a
	// fault plan's JSON, "delay" is a Go duration string.
	Delay time.Duration `json:"-"`
	// AfterCommit makes faultLatency serve the request first (a create is
	// committed) and delay only the answer, which is lost if the client
	// gives up waiting: a timeout after commit.
	AfterCommit bool `json:"after_commit,omitempty"`
	// Location is the foreign scheme and host, e.g. "https://evil.example",
	// for faultRedirect and faultForeignNext.
	Location string `json:"location,omitempty"`
}

func (f *Fault) validate() error {
	switch f.Kind {
	case faultRespond:
		if f.Status < 100 || f.Status > 599 {
			return fmt.Errorf("venue: respond fault needs a status, got %d", f.Status)
		}
	case faultLoseResponse:
		if f.Status != 0 && f.Status != 429 && f.Status != 500 && f.Status != 502 && f.Status != 503 && f.Status != 504 {
			return fmt.Errorf("venue: lose_response status must be 0 (drop), 429, 500, 502, 503 or 504, got %d", f.Status)
		}
	case faultLatency:
		if f.Delay <= 0 {
			return fmt.Errorf("venue: latency fault needs a positive delay")
		}
	case faultTruncatedBody, faultOtherOrderBody, faultWrongClientOrderID,
		faultRefusedStream, faultProtocolError, faultGoAway:
	case faultRedirect, faultForeignNext:
		if !strings.HasPrefix(f.Location, "http://") && !strings.HasPrefix(f.Location, "https://") {
			return fmt.Errorf("venue: %s fault needs an absolute http(s) location, got %q", f.Kind, f.Location)
		}
		if f.Kind == faultRedirect && f.Status != 0 && (f.Status < 300 || f.Status > 399) {
			return fmt.Errorf("venue: redirect status must be 3xx, got %d", f.Status)
		}
	default:
		return fmt.Errorf("venue: unknown fault kind %q", f.Kind)
	}
	if f.Times < 0 {
		return fmt.Errorf("venue: fault times %d is negative", f.Times)
	}
	return nil
}

func (f *Fault) matches(method, p string) bool {
	if f.Method != "" && !strings.EqualFold(f.Method, method) {
		return false
	}
	if f.Path == "" {
		return true
	}
	if strings.ContainsAny(f.Path, "*?[") {
		ok, _ := path.Match(f.Path, p)
		return ok
	}
	return strings.HasPrefix(p, f.Path)
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

func (m DuplicateMode) validate() error {
	switch m {
	case "", ReturnOriginal, Reject400, CreateSecond:
		return nil
	}
	return fmt.Errorf("venue: unknown duplicate mode %q", m)
}

// inject queues faults after those pending; each affects the next Times
// matching requests, in the order injected. It fails, adding none, if any
// fault is invalid.
func (v *engine) inject(faults ...Fault) error { return v.apply(FaultPlan{Faults: faults}) }

// pendingFaults reports how many injected fault activations are unused.
func (v *engine) pendingFaults() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	n := 0
	for _, f := range v.faults {
		n += f.Times
	}
	return n
}

func (m Mix) validate() error {
	for _, r := range []float64{m.Rate429, m.Rate5xx, m.RateLost, m.RateLatency} {
		if !(r >= 0 && r <= 1) {
			return fmt.Errorf("venue: mix rate %v is outside [0, 1]", r)
		}
	}
	if m.RateLatency > 0 && m.Latency <= 0 {
		return fmt.Errorf("venue: mix latency rate needs a positive Latency")
	}
	return nil
}

// action is what the fault machinery decided for one request.
type action struct {
	name        string
	respond     *reply
	delay       time.Duration
	delayAnswer time.Duration
	lose        bool
	loseStatus  int
	foreignNext string
	badBody     faultKind // a 2xx create answered with a bad body
	stream      faultKind // the stream ended after the commit
}

// matchFault consumes the first scripted fault matching the request (and
// any latency fault before it), then consults the mix. Caller holds mu.
func (v *engine) matchFault(method, p, target string) action {
	var act action
	for i := 0; i < len(v.faults); i++ {
		f := v.faults[i]
		if !f.matches(method, p) {
			continue
		}
		f.Times--
		if f.Times <= 0 {
			v.faults = append(v.faults[:i], v.faults[i+1:]...)
			i--
		}
		if act.name != "" {
			act.name += ","
		}
		act.name += string(f.Kind)
		switch f.Kind {
		case faultLatency:
			if f.AfterCommit {
				act.delayAnswer += f.Delay
			} else {
				act.delay += f.Delay
			}
			continue // latency combines with a later fault
		case faultRespond:
			h := http.Header{}
			for k, s := range f.Header {
				h.Set(k, s)
			}
			act.respond = &reply{status: f.Status, header: h, body: []byte(f.Body)}
			if f.Body != "" && !json.Valid([]byte(f.Body)) && h.Get("Content-Type") == "" {
				act.respond.text = true
			}
		case faultRedirect:
			st := f.Status
			if st == 0 {
				st = http.StatusTemporaryRedirect
			}
			act.respond = &reply{status: st, header: http.Header{"Location": {strings.TrimRight(f.Location, "/") + target}}}
		case faultLoseResponse:
			act.lose, act.loseStatus = true, f.Status
		case faultForeignNext:
			act.foreignNext = strings.TrimRight(f.Location, "/")
		case faultTruncatedBody, faultOtherOrderBody, faultWrongClientOrderID:
			act.badBody = f.Kind
		case faultRefusedStream, faultProtocolError, faultGoAway:
			act.stream = f.Kind
		}
		return act
	}
	if m := v.mix; m != nil {
		x := v.mixRNG.Float64()
		switch {
		case x < m.Rate429:
			act.name = "mix_429"
			act.respond = errReply(http.StatusTooManyRequests, "client_error", "Request was throttled.", "")
		case x < m.Rate429+m.Rate5xx:
			act.name = "mix_5xx"
			act.respond = errReply(http.StatusServiceUnavailable, "server_error", "Service temporarily unavailable.", "")
		case x < m.Rate429+m.Rate5xx+m.RateLost:
			act.name = "mix_lost"
			act.lose = true
			if v.mixRNG.IntN(2) == 0 {
				act.loseStatus = http.StatusInternalServerError
			}
		case x < m.Rate429+m.Rate5xx+m.RateLost+m.RateLatency:
			act.name = "mix_latency"
			act.delay = m.Latency
		}
	}
	return act
}

// FaultPlan is everything the venue does wrong, in one value: scripted
// faults, a seeded random mix, what a reused client_order_id does, and the
// hostile modes. Config.Faults sets it up from the start and
// Venue.SetFaultPlan changes a running Venue by it; ParseFaultPlan reads
// the JSON form the CLI's --faults FILE takes (see the package
// documentation). What a plan leaves unset is left as it is: the zero
// value changes nothing.
type FaultPlan struct {
	// Faults are queued after any still pending, each for the next Times
	// requests that match it (see Fault).
	Faults []Fault
	// Mix, if set, replaces the random fault mix; a zero Mix removes it.
	Mix *Mix
	// Duplicate, if set, replaces what a create with a reused
	// client_order_id does (at first ReturnOriginal).
	Duplicate DuplicateMode
	// Hostile, if set, replaces every hostile mode; a zero Hostile is a
	// well-behaved venue again.
	Hostile *Hostile
}

type faultJSON struct {
	Fault
	Delay string `json:"delay,omitempty"`
}

type mixJSON struct {
	Mix
	Latency string `json:"latency,omitempty"`
}

type hostileJSON struct {
	ClockOffset       string  `json:"clock_offset,omitempty"`
	ListLag           string  `json:"list_lag,omitempty"`
	OmitClientOrderID float64 `json:"omit_client_order_id,omitempty"`
	DropNext          float64 `json:"drop_next,omitempty"`
}

type planJSON struct {
	Faults    []faultJSON   `json:"faults"`
	Mix       *mixJSON      `json:"mix,omitempty"`
	Duplicate DuplicateMode `json:"duplicate,omitempty"`
	Hostile   *hostileJSON  `json:"hostile,omitempty"`
}

// ParseFaultPlan decodes and validates a JSON fault plan. Unknown fields
// are an error, so a typo cannot silently disable a fault.
func ParseFaultPlan(data []byte) (FaultPlan, error) {
	var pj planJSON
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&pj); err != nil {
		return FaultPlan{}, fmt.Errorf("venue: fault plan: %w", err)
	}
	var plan FaultPlan
	for i, fj := range pj.Faults {
		f := fj.Fault
		if fj.Delay != "" {
			d, err := time.ParseDuration(fj.Delay)
			if err != nil {
				return FaultPlan{}, fmt.Errorf("venue: fault plan: faults[%d].delay: %w", i, err)
			}
			f.Delay = d
		}
		if err := f.validate(); err != nil {
			return FaultPlan{}, fmt.Errorf("venue: fault plan: faults[%d]: %w", i, err)
		}
		plan.Faults = append(plan.Faults, f)
	}
	if pj.Mix != nil {
		m := pj.Mix.Mix
		if pj.Mix.Latency != "" {
			d, err := time.ParseDuration(pj.Mix.Latency)
			if err != nil {
				return FaultPlan{}, fmt.Errorf("venue: fault plan: mix.latency: %w", err)
			}
			m.Latency = d
		}
		plan.Mix = &m
	}
	if err := pj.Duplicate.validate(); err != nil {
		return FaultPlan{}, err
	}
	plan.Duplicate = pj.Duplicate
	if hj := pj.Hostile; hj != nil {
		h := Hostile{OmitClientOrderID: hj.OmitClientOrderID, DropNext: hj.DropNext}
		for _, d := range []struct {
			name, s string
			dst     *time.Duration
		}{{"clock_offset", hj.ClockOffset, &h.ClockOffset}, {"list_lag", hj.ListLag, &h.ListLag}} {
			if d.s == "" {
				continue
			}
			x, err := time.ParseDuration(d.s)
			if err != nil {
				return FaultPlan{}, fmt.Errorf("venue: fault plan: hostile.%s: %w", d.name, err)
			}
			*d.dst = x
		}
		if err := h.validate(); err != nil {
			return FaultPlan{}, fmt.Errorf("venue: fault plan: %w", err)
		}
		plan.Hostile = &h
	}
	return plan, nil
}

// apply changes the venue by p, as Venue.SetFaultPlan documents: the
// faults are queued after those pending, and the mix, duplicate mode and
// hostile modes the plan sets replace the venue's. It fails, changing
// nothing, if any part of p is invalid.
func (v *engine) apply(p FaultPlan) error {
	faults := make([]*Fault, 0, len(p.Faults))
	for i := range p.Faults {
		f := p.Faults[i]
		if err := f.validate(); err != nil {
			return err
		}
		if f.Times == 0 {
			f.Times = 1
		}
		faults = append(faults, &f)
	}
	if p.Mix != nil {
		if err := p.Mix.validate(); err != nil {
			return err
		}
	}
	if err := p.Duplicate.validate(); err != nil {
		return err
	}
	if p.Hostile != nil {
		if err := p.Hostile.validate(); err != nil {
			return err
		}
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.faults = append(v.faults, faults...)
	if m := p.Mix; m != nil {
		if *m == (Mix{}) {
			v.mix, v.mixRNG = nil, nil
		} else {
			mix := *m
			v.mix = &mix
			v.mixRNG = rand.New(rand.NewPCG(uint64(mix.Seed), 0x7261646577697265))
		}
	}
	if p.Duplicate != "" {
		v.duplicate = p.Duplicate
	}
	if h := p.Hostile; h != nil {
		// The offset moves the venue's time from the next request on; the
		// start of the seeded history does not move.
		v.hostile = *h
		v.offset.Store(int64(h.ClockOffset))
	}
	return nil
}
