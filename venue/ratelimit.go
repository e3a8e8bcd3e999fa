package venue

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

// RateLimits is how the venue rate-limits each account beyond the
// account-wide bucket, as the vendor describes its limits: "applied per
// endpoint and may differ among each endpoint", with values that
// "fluctuate depending on the availability of our service". The zero
// value changes nothing: every endpoint shares the one account-wide
// bucket (Account; default 100 a minute in bursts of 300) and a 429
// carries no Retry-After, as the real venue's do not.
//
// Requests fall into four endpoint classes, the same for v1 and v2 paths:
//
//	market_data    best_bid_ask, estimated_price, trading_pairs
//	account_reads  accounts, holdings
//	order_reads    GET orders/ and GET orders/{id}/
//	order_writes   POST orders/ (create) and POST orders/{id}/cancel/
//
// A request on any other path belongs to no class and always draws on
// the account-wide bucket. Ledger rows name each request's class
// (Request.Class).
type RateLimits struct {
	// Account is the account-wide bucket; zero is 100 a minute, burst
	// 300, and a PerMinute of math.Inf(1) turns it off (the classes with a
	// bucket of their own keep it).
	Account RateLimit
	// Classes gives an endpoint class (a key from the table above) a
	// bucket of its own per account; the classes it leaves out share the
	// account-wide bucket.
	Classes map[string]RateLimit
	// Schedule changes buckets over time on the venue's clock, in order of
	// At: the venue lowers and restores capacity with it.
	Schedule []RateLimit
	// RetryAfter is what a 429 from a bucket says in Retry-After: "" or
	// "off" nothing (the real venue's behaviour); "bucket" the whole
	// seconds until the bucket holds a token again, at least 1; a
	// whole-second Go duration such as "2s" that many seconds, always.
	RetryAfter string
}

// RateLimit is a token bucket: PerMinute tokens a minute, up to Burst.
// Both must be positive, but for RateLimits.Account, where a PerMinute of
// math.Inf(1) turns the account-wide bucket off.
//
// In RateLimits.Schedule a RateLimit is a step: it changes one bucket,
// Class (a key of RateLimits.Classes, or "" for the account-wide bucket),
// At after the venue's start (its now when New built it): from then on
// the bucket refills at PerMinute and holds at most Burst tokens. A lower
// Burst drops the tokens above it; a higher one leaves the tokens where
// they are, to refill at the new rate, as a venue restoring capacity
// does. At and Class mean nothing outside a Schedule.
type RateLimit struct {
	PerMinute float64
	Burst     int
	At        time.Duration
	Class     string
}

// Bucket indexes: classNone, the account-wide bucket, then one per
// endpoint class (market data, account reads, order reads, order writes).
// The venue keeps its own copy of the endpoint-class rule: it is the
// oracle the client's rule is checked against, so it shares no code with
// the client.
const (
	classNone        = 0
	classMarketData  = 1
	classAccountRead = 2
	classOrderReads  = 3
	classOrderWrites = 4
	numBuckets       = 5
)

// classNames are the classes' names in RateLimits, a schedule step and
// Request.Class, by bucket index.
var classNames = [numBuckets]string{"", "market_data", "account_reads", "order_reads", "order_writes"}

// classIndex returns the bucket index of a class name, or -1.
func classIndex(name string) int {
	for i, n := range classNames {
		if n == name {
			return i
		}
	}
	return -1
}

// classOf returns the bucket index of a request's endpoint class, v1 and
// v2 paths alike.
func classOf(method, path string) int {
	if p, ok := strings.CutPrefix(path, "/api/v1/"); ok {
		if strings.HasPrefix(path, "/api/v1/crypto/marketdata/estimated_price/") {
			return classMarketData
		}
		path = "/api/v2/" + p
	}
	for _, e := range endpointClasses {
		if !strings.HasPrefix(path, e.path) {
			continue
		}
		if e.class == classOrderReads && method != http.MethodGet && method != http.MethodHead {
			return classOrderWrites
		}
		return e.class
	}
	return classNone
}

// endpointClasses maps the venue's v2 paths to their classes; a v1 path
// is the v2 one with /api/v1/ for /api/v2/, but v1's estimated price,
// which lives under marketdata. Anything but a GET or HEAD under the
// orders path (a create, a cancel) is an order write.
var endpointClasses = [...]struct {
	path  string
	class int
}{
	{"/api/v2/crypto/marketdata/best_bid_ask/", classMarketData},
	{"/api/v2/crypto/trading/estimated_price/", classMarketData},
	{"/api/v2/crypto/trading/trading_pairs/", classMarketData},
	{"/api/v2/crypto/trading/accounts/", classAccountRead},
	{"/api/v2/crypto/trading/holdings/", classAccountRead},
	{"/api/v2/crypto/trading/orders/", classOrderReads},
}

func (l RateLimit) validate() error {
	if !(l.PerMinute > 0) || math.IsInf(l.PerMinute, 0) || l.Burst <= 0 {
		return fmt.Errorf("%v/min burst %d: want both positive", l.PerMinute, l.Burst)
	}
	return nil
}

// retryAfter parses RateLimits.RetryAfter: mode retryOff, retryBucket or
// retryFixed with secs.
func parseRetryAfter(s string) (mode, secs int, err error) {
	switch s {
	case "", "off":
		return retryOff, 0, nil
	case "bucket":
		return retryBucket, 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 || d%time.Second != 0 {
		return 0, 0, fmt.Errorf("retry_after %q: want off, bucket or whole seconds such as 2s", s)
	}
	return retryFixed, int(d / time.Second), nil
}

const (
	retryOff = iota
	retryBucket
	retryFixed
)

// validate checks l as newEngine will use it; accountOff reports that the
// account-wide bucket is off (Account.PerMinute is math.Inf(1)).
func (l RateLimits) validate(accountOff bool) error {
	if l.Account != (RateLimit{}) {
		if err := l.Account.validate(); err != nil {
			return fmt.Errorf("venue: rate limits: account: %w", err)
		}
		accountOff = false
	}
	for name, c := range l.Classes {
		if i := classIndex(name); i <= classNone {
			return fmt.Errorf("venue: rate limits: classes: unknown class %q (want market_data, account_reads, order_reads or order_writes)", name)
		}
		if err := c.validate(); err != nil {
			return fmt.Errorf("venue: rate limits: classes[%s]: %w", name, err)
		}
	}
	for i, s := range l.Schedule {
		if s.At < 0 || (i > 0 && s.At < l.Schedule[i-1].At) {
			return fmt.Errorf("venue: rate limits: schedule[%d]: at %v: want 0 or more, in order", i, s.At)
		}
		if s.Class == "" {
			if accountOff {
				return fmt.Errorf("venue: rate limits: schedule[%d] changes the account-wide bucket, which is off", i)
			}
		} else if _, ok := l.Classes[s.Class]; !ok {
			return fmt.Errorf("venue: rate limits: schedule[%d]: class %q has no bucket of its own in classes", i, s.Class)
		}
		if err := s.validate(); err != nil {
			return fmt.Errorf("venue: rate limits: schedule[%d]: %w", i, err)
		}
	}
	if _, _, err := parseRetryAfter(l.RetryAfter); err != nil {
		return fmt.Errorf("venue: rate limits: %w", err)
	}
	return nil
}

type rateLimitJSON struct {
	PerMinute float64 `json:"per_minute"`
	Burst     int     `json:"burst"`
}

type rateStepJSON struct {
	At        string  `json:"at"`
	Class     string  `json:"class"`
	PerMinute float64 `json:"per_minute"`
	Burst     int     `json:"burst"`
}

type rateLimitsJSON struct {
	Account    *rateLimitJSON           `json:"account"`
	Classes    map[string]rateLimitJSON `json:"classes"`
	Schedule   []rateStepJSON           `json:"schedule"`
	RetryAfter string                   `json:"retry_after"`
}

// ParseRateLimits reads the JSON form of RateLimits, the file the CLI's
// sim serve --rate-limits flag takes (see the package doc). Unknown
// fields are an error, and so is anything New would refuse, but for a
// schedule step on the account-wide bucket, which only New can check
// against an account-wide bucket that is off.
func ParseRateLimits(data []byte) (RateLimits, error) {
	var j rateLimitsJSON
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return RateLimits{}, fmt.Errorf("venue: rate limits: %w", err)
	}
	l := RateLimits{RetryAfter: j.RetryAfter}
	if j.Account != nil {
		l.Account = RateLimit{PerMinute: j.Account.PerMinute, Burst: j.Account.Burst}
		if err := l.Account.validate(); err != nil {
			return RateLimits{}, fmt.Errorf("venue: rate limits: account: %w", err)
		}
	}
	if len(j.Classes) > 0 {
		l.Classes = map[string]RateLimit{}
		for k, c := range j.Classes {
			l.Classes[k] = RateLimit{PerMinute: c.PerMinute, Burst: c.Burst}
		}
	}
	for i, s := range j.Schedule {
		at, err := time.ParseDuration(s.At)
		if err != nil {
			return RateLimits{}, fmt.Errorf("venue: rate limits: schedule[%d].at: %w", i, err)
		}
		l.Schedule = append(l.Schedule, RateLimit{At: at, Class: s.Class, PerMinute: s.PerMinute, Burst: s.Burst})
	}
	if err := l.validate(false); err != nil {
		return RateLimits{}, err
	}
	return l, nil
}

// bucketSpec is a bucket's current rate (tokens a second) and capacity;
// a bucket that is not on lets everything through.
type bucketSpec struct {
	on    bool
	rate  float64
	burst float64
}

func specOf(l RateLimit) bucketSpec {
	return bucketSpec{on: true, rate: l.PerMinute / 60, burst: float64(l.Burst)}
}

// tokenBucket is one account's bucket state: tokens as of last.
type tokenBucket struct {
	tokens float64
	last   time.Time
}

// refill adds the tokens s earns from last to t.
func (b *tokenBucket) refill(s bucketSpec, t time.Time) {
	if el := t.Sub(b.last).Seconds(); el > 0 {
		b.tokens = min(s.burst, b.tokens+el*s.rate)
		b.last = t
	}
}

type rateStep struct {
	at     time.Time
	bucket int
	spec   bucketSpec
}

// limiter is the venue's rate limiting: the buckets' specs, which
// classes have their own, and the schedule still to come. The engine's
// mu guards it.
type limiter struct {
	spec  [numBuckets]bucketSpec
	own   [numBuckets]bool // own[classNone] is always true
	steps []rateStep
	next  int // index of the first step not yet applied
	retry int // retryOff, retryBucket, retryFixed
	secs  int // with retryFixed
}

// newLimiter builds the limiter for an account-wide bucket (off when
// !account.on), l's classes and its schedule from start. l is validated.
func newLimiter(account bucketSpec, l RateLimits, start time.Time) *limiter {
	lim := &limiter{}
	lim.spec[classNone], lim.own[classNone] = account, true
	for name, c := range l.Classes {
		i := classIndex(name)
		lim.spec[i], lim.own[i] = specOf(c), true
	}
	for _, s := range l.Schedule {
		lim.steps = append(lim.steps, rateStep{at: start.Add(s.At), bucket: classIndex(s.Class), spec: specOf(s)})
	}
	sort.SliceStable(lim.steps, func(i, j int) bool { return lim.steps[i].at.Before(lim.steps[j].at) })
	lim.retry, lim.secs, _ = parseRetryAfter(l.RetryAfter)
	return lim
}

// fill starts an account's buckets full at t.
func (lim *limiter) fill(a *account, t time.Time) {
	for i := range a.buckets {
		a.buckets[i] = tokenBucket{tokens: lim.spec[i].burst, last: t}
	}
}

// advance applies the schedule's steps due by now to every account: each
// bucket earns its tokens up to the step's time at the old rate, then
// takes the new rate and capacity.
func (lim *limiter) advance(accounts []*account, now time.Time) {
	for lim.next < len(lim.steps) && !lim.steps[lim.next].at.After(now) {
		st := lim.steps[lim.next]
		for _, a := range accounts {
			b := &a.buckets[st.bucket]
			b.refill(lim.spec[st.bucket], st.at)
			b.tokens = min(b.tokens, st.spec.burst)
		}
		lim.spec[st.bucket] = st.spec
		lim.next++
	}
}

// throttle takes one token from the bucket of the request's class (its
// own, or the account-wide one), or answers 429. Caller holds mu.
func (v *engine) throttle(a *account, class int, now time.Time) *reply {
	lim := v.limits
	lim.advance(v.accounts, now)
	if !lim.own[class] {
		class = classNone
	}
	s := lim.spec[class]
	if !s.on {
		return nil
	}
	b := &a.buckets[class]
	b.refill(s, now)
	if b.tokens >= 1 {
		b.tokens--
		return nil
	}
	rep := errReply(http.StatusTooManyRequests, "client_error", "Request was throttled.", "")
	switch lim.retry {
	case retryBucket:
		secs := max(1, int(math.Ceil((1-b.tokens)/s.rate)))
		rep.header = http.Header{"Retry-After": {strconv.Itoa(secs)}}
	case retryFixed:
		rep.header = http.Header{"Retry-After": {strconv.Itoa(lim.secs)}}
	}
	return rep
}
