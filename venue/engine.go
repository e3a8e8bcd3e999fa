package venue

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/shopspring/decimal"
)

// Default settings used when the matching engineConfig field is zero.
const (
	defaultPageSize      = 100
	defaultRatePerMinute = 100
	defaultBurst         = 300
	defaultBuyingPower   = "100000.00"
	defaultFeeRatio      = "0.0095" // the lowest tier's (feeTiers[0])
)

// signatureWindow is how far a request's x-timestamp may be from the
// venue's own now (its clock plus Hostile.ClockOffset), in either
// direction, before the request is refused with 401, as the real venue
// refuses it.
const signatureWindow = 30 * time.Second

// Demo credentials: deterministic, public, and only good against a simulated venue.
const (
	demoAPIKey        = "rh-api-00000000-7e57-4000-8000-7261646577ed"
	demoAccountNumber = "TW0000000001"
)

// demoThirtyDayVolume is the demo account's starting 30-day volume, the
// live capture's.
const demoThirtyDayVolume = "12480.55"

// demoHoldings are the demo account's starting holdings.
func demoHoldings() map[string]decimal.Decimal {
	return map[string]decimal.Decimal{
		"BTC": decimal.RequireFromString("0.5"), "ETH": decimal.RequireFromString("4"),
		"DOGE": decimal.RequireFromString("10000"), "SOL": decimal.RequireFromString("20"),
	}
}

// demoPrivateKey returns the deterministic Ed25519 key pair whose public half
// the venue trusts for demoAPIKey when engineConfig.Accounts is empty.
func demoPrivateKey() ed25519.PrivateKey {
	seed := sha256.Sum256([]byte("tradewire brokertest demo key v1"))
	return ed25519.NewKeyFromSeed(seed[:])
}

// accountConfig configures one venue account and the API key that trades
// it. The zero value is not usable: APIKey, PublicKey and Number are
// required.
type accountConfig struct {
	Number    string            // account_number, e.g. "TW0000000001"
	APIKey    string            // value of x-api-key
	PublicKey ed25519.PublicKey // verifies x-signature
	// BuyingPower is the starting cash in USD (default defaultBuyingPower).
	BuyingPower decimal.Decimal
	// Holdings maps asset code (e.g. "BTC") to starting quantity.
	Holdings map[string]decimal.Decimal
	// ThirtyDayVolume is the 30-day volume the account starts with; it
	// counts for 30 days from the venue's start (see volume).
	ThirtyDayVolume decimal.Decimal
	// Status is the account's status: accountActive (also for ""),
	// accountSellOnly or accountDeactivated.
	Status string
	// ReadOnly makes APIKey a read-only key: creates and cancels answer 403.
	ReadOnly bool
	// FeeRatio is the fee tier at the start, set by newEngine from
	// ThirtyDayVolume; history orders carry it.
	FeeRatio decimal.Decimal
}

// engineConfig configures an engine; the Options set it. The zero value
// is usable: a real clock, seed 0, the demo account, default page size,
// the venue's documented rate limit, no faults, and duplicate
// client_order_id returning the original order.
type engineConfig struct {
	// Seed drives prices, order ids, seeded history and partial fills.
	Seed int64
	// Clock is the venue's own clock (default clockwork.NewRealClock()).
	Clock clockwork.Clock
	// PageSize is the number of results per page (default defaultPageSize).
	PageSize int
	// RatePerMinute is the sustained rate of the account-wide token bucket
	// (default defaultRatePerMinute). Negative disables it.
	RatePerMinute float64
	// Burst is the bucket size (default defaultBurst).
	Burst int
	// Limits are the per-class buckets, their schedule and Retry-After;
	// Limits.Account, where set, replaces RatePerMinute and Burst.
	Limits RateLimits
	// Accounts lists the accounts and their keys (default: the demo account).
	Accounts []accountConfig
	// History, when positive, pre-populates the first account with that many
	// orders over the 30 days before the clock's time at newEngine.
	History int
	// BulkOrders, when positive, adds that many final (filled, canceled,
	// failed) orders to the first account over the 30 days before newEngine. They
	// are generated on demand from their index and cost no memory per order.
	BulkOrders int
	// Duplicate selects what a create with a reused client_order_id does.
	Duplicate DuplicateMode
	// PublicBaseURL, if set (e.g. "https://venue.example"), is the scheme
	// and host used in pagination links instead of the request's own.
	PublicBaseURL string
	// CancelDelay is how long a cancel takes to settle (default 1s).
	CancelDelay time.Duration
	// NoPartialFills makes resting limit orders fill all at once instead of
	// in seeded chunks over several seconds.
	NoPartialFills bool
	// Faults are queued at construction, as if by inject.
	Faults []Fault
	// Mix, if set, is a probabilistic fault mix.
	Mix *Mix
	// Hostile selects the hostile modes: a clock offset, a lagging orders
	// list, list rows without client_order_id, pages without their next
	// link. The zero value is a well-behaved venue.
	Hostile Hostile
	// LedgerLimit, when positive, is how many recent requests the Ledger
	// keeps (default: all).
	LedgerLimit int
	// StreamAbort, if set, is how the HTTP/2 stream faults (faultRefusedStream,
	// faultProtocolError, faultGoAway) end a stream. Without it, or when it
	// answers false, they drop the connection like lose_response status 0.
	StreamAbort streamAbortFunc
}

// engine is the simulated Robinhood Crypto Trading API, v1 and v2, behind a Venue,
// served as an http.Handler. All state advances lazily on requests, from
// the injected clock: there are no background goroutines or timers. An
// engine is safe for concurrent use. Create one with newEngine.
type engine struct {
	date     dateCache
	clock    clockwork.Clock
	seed     uint64
	pageSize int
	limits   *limiter // guarded by mu
	baseURL  string
	cancelD  time.Duration
	partial  bool
	start    time.Time
	pairs    []*pair
	hist     []*pair // the pairs seeded history trades
	bySymbol map[string]*pair
	ledger   *Ledger

	mu        sync.Mutex
	accounts  []*account
	byKey     map[string]*account
	byNumber  map[string]*account
	orders    []*order // sorted by (created, seq) ascending
	byID      map[string]*order
	byClient  map[string][]*order // key account|client_order_id
	due       dueQueue            // open orders by the instant they next may act (due.go)
	seq       int64
	faults    []*Fault
	mix       *Mix
	mixRNG    *rand.Rand
	duplicate DuplicateMode
	bulk      bulkSpec
	hostile   Hostile
	// hostileRNG draws DropNext; seeded from the seed.
	hostileRNG *rand.Rand

	offset atomic.Int64 // Hostile.ClockOffset, read without mu
	abort  streamAbortFunc
}

type account struct {
	accountConfig
	cash     decimal.Decimal
	holdings map[string]decimal.Decimal
	volume   volume
	buckets  [numBuckets]tokenBucket // guarded by the engine's mu
	// resCash and resAssets are what the account's open orders hold: the
	// cash of its buys, the assets of its sells (engine.hold keeps them).
	resCash   decimal.Decimal
	resAssets map[string]decimal.Decimal
}

// newEngine validates cfg and returns an engine.
func newEngine(cfg engineConfig) (*engine, error) {
	v := &engine{
		clock:     cfg.Clock,
		seed:      uint64(cfg.Seed),
		pageSize:  cfg.PageSize,
		baseURL:   strings.TrimRight(cfg.PublicBaseURL, "/"),
		cancelD:   cfg.CancelDelay,
		partial:   !cfg.NoPartialFills,
		pairs:     defaultPairs(),
		bySymbol:  map[string]*pair{},
		ledger:    &Ledger{limit: cfg.LedgerLimit},
		byKey:     map[string]*account{},
		byNumber:  map[string]*account{},
		byID:      map[string]*order{},
		byClient:  map[string][]*order{},
		duplicate: cfg.Duplicate,
		hostile:   cfg.Hostile,
		abort:     cfg.StreamAbort,
	}
	v.hostileRNG = rand.New(rand.NewPCG(uint64(cfg.Seed), 0x686f7374696c65))
	if err := cfg.Hostile.validate(); err != nil {
		return nil, err
	}
	v.offset.Store(int64(cfg.Hostile.ClockOffset))
	if v.clock == nil {
		v.clock = clockwork.NewRealClock()
	}
	if v.pageSize == 0 {
		v.pageSize = defaultPageSize
	}
	if v.pageSize < 0 {
		return nil, fmt.Errorf("venue: PageSize %d is negative", cfg.PageSize)
	}
	if cfg.Burst < 0 {
		return nil, fmt.Errorf("venue: Burst %d is negative", cfg.Burst)
	}
	shared := bucketSpec{on: cfg.RatePerMinute >= 0, rate: cfg.RatePerMinute / 60, burst: float64(cfg.Burst)}
	if cfg.RatePerMinute == 0 {
		shared.rate = defaultRatePerMinute / 60.0
	}
	if cfg.Burst == 0 {
		shared.burst = defaultBurst
	}
	if cfg.Limits.Account != (RateLimit{}) {
		shared = specOf(cfg.Limits.Account)
	}
	if err := cfg.Limits.validate(!shared.on); err != nil {
		return nil, err
	}
	if v.cancelD == 0 {
		v.cancelD = time.Second
	}
	if err := v.duplicate.validate(); err != nil {
		return nil, err
	}
	for _, p := range v.pairs {
		v.bySymbol[p.symbol] = p
		if p.core {
			v.hist = append(v.hist, p)
		}
	}
	v.start = v.now().Truncate(time.Microsecond)
	v.limits = newLimiter(shared, cfg.Limits, v.start)
	accts := cfg.Accounts
	if len(accts) == 0 {
		accts = []accountConfig{{
			Number: demoAccountNumber, APIKey: demoAPIKey,
			PublicKey: demoPrivateKey().Public().(ed25519.PublicKey),
			Holdings:  demoHoldings(), ThirtyDayVolume: decimal.RequireFromString(demoThirtyDayVolume),
		}}
	}
	for i, a := range accts {
		if a.Number == "" || a.APIKey == "" || len(a.PublicKey) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("venue: Accounts[%d] needs Number, APIKey and a %d-byte PublicKey", i, ed25519.PublicKeySize)
		}
		if v.byKey[a.APIKey] != nil || v.byNumber[a.Number] != nil {
			return nil, fmt.Errorf("venue: Accounts[%d] repeats an API key or account number", i)
		}
		if a.BuyingPower.IsZero() {
			a.BuyingPower = decimal.RequireFromString(defaultBuyingPower)
		}
		if a.Status == "" {
			a.Status = accountActive
		}
		if !accountStatuses[a.Status] {
			return nil, fmt.Errorf("venue: Accounts[%d] status %q: want active, sell_only or deactivated", i, a.Status)
		}
		if a.ThirtyDayVolume.IsNegative() {
			return nil, fmt.Errorf("venue: Accounts[%d] 30-day volume %s is negative", i, a.ThirtyDayVolume)
		}
		a.FeeRatio = feeTiers[tierAt(a.ThirtyDayVolume)].ratio
		ac := &account{accountConfig: a, cash: a.BuyingPower, holdings: map[string]decimal.Decimal{}, resAssets: map[string]decimal.Decimal{},
			volume: volume{carried: a.ThirtyDayVolume, until: v.start.Add(historyWindow)}}
		v.limits.fill(ac, v.start)
		for k, q := range a.Holdings {
			ac.holdings[k] = q
		}
		v.accounts = append(v.accounts, ac)
		v.byKey[a.APIKey] = ac
		v.byNumber[a.Number] = ac
	}
	if err := v.apply(FaultPlan{Faults: cfg.Faults, Mix: cfg.Mix}); err != nil {
		return nil, err
	}
	if cfg.History < 0 || cfg.BulkOrders < 0 {
		return nil, errors.New("venue: History and BulkOrders must not be negative")
	}
	v.seedHistory(v.accounts[0], cfg.History)
	if cfg.BulkOrders > 0 {
		v.bulk = newBulk(v.accounts[0].Number, cfg.BulkOrders, v.start)
	}
	return v, nil
}

// symbols returns the symbols the venue lists, sorted.
func (v *engine) symbols() []string {
	out := make([]string, len(v.pairs))
	for i, p := range v.pairs {
		out[i] = p.symbol
	}
	return out
}

// quote returns the venue's best bid and ask for symbol at its clock's now.
func (v *engine) quote(symbol string) (bid, ask decimal.Decimal, err error) {
	p := v.bySymbol[symbol]
	if p == nil {
		return bid, ask, fmt.Errorf("venue: unknown symbol %q", symbol)
	}
	bid, ask = p.quoteAt(v.seed, v.now())
	return bid, ask, nil
}

// quoteAt is quote at an arbitrary time; prices are a pure function of the
// seed, the symbol and the whole second.
func (v *engine) quoteAt(symbol string, t time.Time) (bid, ask decimal.Decimal, err error) {
	p := v.bySymbol[symbol]
	if p == nil {
		return bid, ask, fmt.Errorf("venue: unknown symbol %q", symbol)
	}
	bid, ask = p.quoteAt(v.seed, t)
	return bid, ask, nil
}

// reply is an answer computed under the lock and written after it.
type reply struct {
	status int
	header http.Header
	body   []byte
	text   bool // text/plain rather than JSON
	v1     bool // an answer in v1's shapes (v1.go)
}

// ServeHTTP answers one request as the venue would, after applying any
// injected fault that matches it, and records it in the Ledger.
func (v *engine) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	target := r.RequestURI
	if target == "" {
		target = r.URL.RequestURI()
	}
	rec := Request{
		Time: v.now(), Method: r.Method, Target: target,
		APIKey: r.Header.Get("x-api-key"), Timestamp: r.Header.Get("x-timestamp"),
	}
	// The headers are judged before the body is read: a request refused on
	// them is answered without reading its body, and a body is read only
	// up to maxBody.
	acct, authReply := v.checkHeaders(r, rec.Time)
	var body []byte
	if authReply == nil {
		body, authReply = readBody(r)
	}
	class := classOf(r.Method, r.URL.Path)
	rec.Class = classNames[class]

	v.mu.Lock()
	act := v.matchFault(r.Method, r.URL.Path, target)
	v.mu.Unlock()
	rec.Fault = act.name

	if act.delay > 0 {
		select {
		case <-r.Context().Done():
			rec.Dropped = true
			v.ledger.add(rec)
			return
		case <-v.clock.After(act.delay):
		}
	}
	if act.respond != nil {
		rec.Status = act.respond.status
		v.ledger.add(rec)
		v.write(w, act.respond)
		return
	}

	now := v.now()
	// Authentication is judged on arrival; injected latency delays the answer.
	if authReply == nil {
		authReply = verifySignature(acct, r, target, body)
	}
	rec.SignatureValid = authReply == nil
	var rep *reply
	var created *order
	if authReply != nil {
		rep = authReply
	} else {
		v.mu.Lock()
		rep = v.throttle(acct, class, now)
		if rep == nil {
			rep, created = v.route(r, acct, body, now, act.foreignNext)
		}
		if created != nil && act.badBody != "" && rep.status/100 == 2 {
			v.badBody(act.badBody, rep, created, now)
		}
		v.mu.Unlock()
	}
	if created != nil {
		v.ledger.addOrder(created.record())
		rec.Created = created.id
	}
	if act.stream != "" {
		// The create is committed; the stream ends without an answer.
		rec.Dropped = true
		v.ledger.add(rec)
		if v.abort != nil && v.abort(r, act.stream) {
			return
		}
		panic(http.ErrAbortHandler)
	}
	if act.lose {
		if act.loseStatus == 0 {
			rec.Dropped = true
			v.ledger.add(rec)
			// Close the connection without an answer: net/http closes it, the
			// in-memory transport turns it into io.ErrUnexpectedEOF.
			panic(http.ErrAbortHandler)
		}
		if act.loseStatus == http.StatusTooManyRequests {
			rep = errReply(act.loseStatus, "client_error", "Request was throttled.", "")
		} else {
			rep = errReply(act.loseStatus, "server_error", "A server error occurred.", "")
		}
	}
	if act.delayAnswer > 0 {
		select {
		case <-r.Context().Done():
			rec.Dropped = true
			v.ledger.add(rec)
			return
		case <-v.clock.After(act.delayAnswer):
		}
	}
	rec.Status = rep.status
	v.ledger.add(rec)
	v.write(w, rep)
}

// write sends rep, with a Date header from the venue's own clock on every
// answer, whatever the server underneath would set.
func (v *engine) write(w http.ResponseWriter, rep *reply) {
	for k, vs := range rep.header {
		for _, s := range vs {
			w.Header().Add(k, s)
		}
	}
	if w.Header().Get("Date") == "" {
		w.Header()["Date"] = []string{v.date.format(v.now())}
	}
	if w.Header().Get("Content-Type") == "" {
		if rep.text {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		} else if len(rep.body) > 0 {
			w.Header().Set("Content-Type", "application/json")
		}
	}
	w.WriteHeader(rep.status)
	w.Write(rep.body)
}

// dateCache holds the Date header of the last second answered: answers
// within one second share it rather than each printing the time. It is
// safe for concurrent use.
type dateCache struct {
	mu   sync.Mutex
	unix int64
	text string
}

// format prints t as a Date header (http.TimeFormat, to the second).
func (d *dateCache) format(t time.Time) string {
	sec := t.Unix()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.text == "" || d.unix != sec {
		d.unix, d.text = sec, t.UTC().Format(http.TimeFormat)
	}
	return d.text
}

// maxBody is the largest request body the venue reads: a create is a few
// hundred bytes. A larger one is answered 413 without being read further.
const maxBody = 64 << 10

// readBody reads r's body, up to maxBody bytes. A body declared or found
// larger is refused with 413, one not received whole (the server's read
// timeout, a reset stream) with 408 or 400.
func readBody(r *http.Request) ([]byte, *reply) {
	if r.ContentLength > maxBody {
		return nil, tooLarge()
	}
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return nil, nil
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	var ne net.Error
	switch {
	case len(body) > maxBody:
		return nil, tooLarge()
	case errors.As(err, &ne) && ne.Timeout():
		return nil, errReply(http.StatusRequestTimeout, "client_error", "The request body was not received in time.", "")
	case err != nil:
		return nil, errReply(http.StatusBadRequest, "client_error", "The request body could not be read.", "")
	}
	return body, nil
}

func tooLarge() *reply {
	return errReply(http.StatusRequestEntityTooLarge, "client_error", "Request body exceeds "+strconv.Itoa(maxBody)+" bytes.", "")
}

// checkHeaders checks what authentication can judge without the body:
// the three headers present, the key known, the timestamp within the
// window at now and the signature well formed.
func (v *engine) checkHeaders(r *http.Request, now time.Time) (*account, *reply) {
	key, ts, sig := r.Header.Get("x-api-key"), r.Header.Get("x-timestamp"), r.Header.Get("x-signature")
	var missing []string
	for _, h := range [][2]string{{"x-api-key", key}, {"x-signature", sig}, {"x-timestamp", ts}} {
		if h[1] == "" {
			missing = append(missing, h[0])
		}
	}
	if len(missing) > 0 {
		return nil, &reply{status: http.StatusBadRequest, text: true,
			body: []byte("Request missing required headers: " + strings.Join(missing, ", "))}
	}
	v.mu.Lock()
	acct := v.byKey[key]
	v.mu.Unlock()
	if acct == nil {
		return nil, errReply(http.StatusUnauthorized, "client_error", "Invalid API key.", "")
	}
	secs, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return nil, errReply(http.StatusUnauthorized, "client_error", "Invalid timestamp.", "")
	}
	if d := now.Sub(time.Unix(secs, 0)); d > signatureWindow || d < -signatureWindow {
		return nil, errReply(http.StatusUnauthorized, "client_error", "Timestamp is outside the allowed window.", "")
	}
	raw, err := base64.StdEncoding.DecodeString(sig)
	if err != nil || len(raw) != ed25519.SignatureSize {
		return nil, errReply(http.StatusUnauthorized, "client_error", "Invalid signature.", "")
	}
	return acct, nil
}

// verifySignature checks r's signature, which checkHeaders found well
// formed, by acct's key over the target and body.
func verifySignature(acct *account, r *http.Request, target string, body []byte) *reply {
	key, ts := r.Header.Get("x-api-key"), r.Header.Get("x-timestamp")
	raw, _ := base64.StdEncoding.DecodeString(r.Header.Get("x-signature"))
	msg := make([]byte, 0, len(key)+len(ts)+len(target)+len(r.Method)+len(body))
	msg = append(append(append(append(append(msg, key...), ts...), target...), r.Method...), body...)
	if !ed25519.Verify(acct.PublicKey, msg, raw) {
		return errReply(http.StatusUnauthorized, "client_error", "Invalid signature.", "")
	}
	return nil
}

// insertOrder adds o to the sorted order list and the indexes and, while
// it is open, to the due queue and its account's reserved sums. Caller
// holds mu.
func (v *engine) insertOrder(o *order) {
	n := len(v.orders)
	if n == 0 || !o.less(v.orders[n-1]) {
		v.orders = append(v.orders, o)
	} else {
		i := sort.Search(n, func(i int) bool { return o.less(v.orders[i]) })
		v.orders = append(v.orders, nil)
		copy(v.orders[i+1:], v.orders[i:])
		v.orders[i] = o
	}
	v.byID[o.id] = o
	k := o.account + "|" + o.clientID
	v.byClient[k] = append(v.byClient[k], o)
	o.dueIdx = -1
	v.settle(o)
}

// Account statuses, as the vendor's spec enumerates them (Account.status).
const (
	accountActive      = "active"
	accountSellOnly    = "sell_only"
	accountDeactivated = "deactivated"
)

var accountStatuses = map[string]bool{accountActive: true, accountSellOnly: true, accountDeactivated: true}

// Refusals of writes by the account's key or status. The vendor names the
// statuses and a 403 for a key without trade scope, but no answer for
// either; the venue answers:
//   - a read-only key: 403 client_error "You do not have permission to
//     perform this action." (attr null) on every create and cancel, the
//     answer it gives for another account's number;
//   - a deactivated account: 403 client_error "Account is deactivated."
//     (attr null) on every create; its reads and cancels work;
//   - a sell_only account: 400 validation_error "Account is sell only."
//     on attr side, for a buy; its sells work.
const (
	detailNoPermission = "You do not have permission to perform this action."
	detailDeactivated  = "Account is deactivated."
	detailSellOnly     = "Account is sell only."
)

// refuseWrite is the 403 a's key or status gives a create (create true)
// or a cancel, or nil.
func (a *account) refuseWrite(create bool) *reply {
	switch {
	case a.ReadOnly:
		return errReply(http.StatusForbidden, "client_error", detailNoPermission, "")
	case create && a.Status == accountDeactivated:
		return errReply(http.StatusForbidden, "client_error", detailDeactivated, "")
	}
	return nil
}

// refuseSide is the refusal a's status gives an order on side, or nil.
func (a *account) refuseSide(side string) *fieldErr {
	if a.Status == accountSellOnly && side == "buy" {
		return &fieldErr{detailSellOnly, "side"}
	}
	return nil
}

// feeTier is one step of the venue's fee schedule: ratio applies while
// the account's 30-day volume is at least threshold.
type feeTier struct{ threshold, ratio decimal.Decimal }

// feeTiers is the fee schedule, by ascending threshold. The first tier and
// the second's step match the live capture (fee_ratio 0.0095 at a volume of
// 12480.55; next_fee_tier_ratio 0.0085 at next_fee_tier_threshold 50000).
var feeTiers = []feeTier{
	{decimal.Zero, decimal.RequireFromString(defaultFeeRatio)},
	{decimal.RequireFromString("50000"), decimal.RequireFromString("0.0085")},
	{decimal.RequireFromString("250000"), decimal.RequireFromString("0.006")},
	{decimal.RequireFromString("1000000"), decimal.RequireFromString("0.004")},
}

// tierAt is the index of the fee tier in force at 30-day volume vol.
func tierAt(vol decimal.Decimal) int {
	i := 0
	for i+1 < len(feeTiers) && !vol.LessThan(feeTiers[i+1].threshold) {
		i++
	}
	return i
}

// volume is an account's trailing 30-day volume: the filled notional of
// its orders, counted by UTC day (the day of a fill and the 29 before it
// count), plus the volume it started with, which counts until 30 days
// after the venue's start.
type volume struct {
	carried decimal.Decimal
	until   time.Time
	days    map[int64]decimal.Decimal // UTC day number → filled notional
}

func dayNumber(t time.Time) int64 { return floorDiv(t.Unix(), 86400) }

// add counts notional filled at t, dropping days that no longer count.
func (vol *volume) add(t time.Time, notional decimal.Decimal) {
	if vol.days == nil {
		vol.days = map[int64]decimal.Decimal{}
	}
	d := dayNumber(t)
	vol.days[d] = vol.days[d].Add(notional)
	for k := range vol.days {
		if k <= d-30 {
			delete(vol.days, k)
		}
	}
}

// at is the 30-day volume at t.
func (vol *volume) at(t time.Time) decimal.Decimal {
	sum := decimal.Zero
	if t.Before(vol.until) {
		sum = vol.carried
	}
	d := dayNumber(t)
	for k, n := range vol.days {
		if k > d-30 && k <= d {
			sum = sum.Add(n)
		}
	}
	return sum
}

// feeRatioAt is the ratio of the fee tier a is in at t.
func (a *account) feeRatioAt(t time.Time) decimal.Decimal {
	return feeTiers[tierAt(a.volume.at(t))].ratio
}

// fillFeeRatio is the ratio a fill of o at t is charged: its account's
// tier at t (the order's own ratio if the account is unknown).
func (v *engine) fillFeeRatio(o *order, t time.Time) decimal.Decimal {
	if a := v.byNumber[o.account]; a != nil {
		return a.feeRatioAt(t)
	}
	return o.feeRatio
}
