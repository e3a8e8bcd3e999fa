package redisbudget

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/jonboulle/clockwork"
	"github.com/redis/go-redis/v9"
	"github.com/rs/zerolog"

	"github.com/tradewire/tradewire/internal/adaptive"
	"github.com/tradewire/tradewire/internal/wire"
	"github.com/tradewire/tradewire/transport"
)

// defaultMaxPause is what a zero Config.MaxPause stands for.
const defaultMaxPause = time.Minute

var accountShape = regexp.MustCompile(`^[A-Za-z0-9]{1,64}$`)

// unavailableError is a Redis failure: nothing may be sent. It matches
// transport.ErrUnavailable, so a caller treats a budget it cannot reach
// like a venue it cannot reach: try again later.
type unavailableError struct {
	msg string
	err error
}

func (e *unavailableError) Error() string        { return e.msg + ": " + e.err.Error() }
func (e *unavailableError) Unwrap() error        { return e.err }
func (e *unavailableError) Is(target error) bool { return target == transport.ErrUnavailable }

func unavailable(err error, format string, args ...any) error {
	return &unavailableError{msg: fmt.Sprintf(format, args...), err: err}
}

// extendPause sets KEYS[1] to expire in ARGV[1] ms unless it already
// lives that long: a pause is never shortened. PTTL is -2 for no key and
// -1 for a key without expiry (set by hand); both are replaced.
var extendPause = redis.NewScript(`
local ms = tonumber(ARGV[1])
local left = redis.call('PTTL', KEYS[1])
if left >= ms then
  return 0
end
redis.call('SET', KEYS[1], '1', 'PX', ms)
return 1
`)

// Budget is a transport.Limiter kept in Redis and shared by every process
// that uses the same account and Redis. It is safe for concurrent use;
// the zero value is not usable: construct one with New.
type Budget struct {
	rdb      redis.UniversalClient
	limiter  *redis_rate.Limiter
	limit    redis_rate.Limit
	off      bool // throttle off: pauses only
	account  string
	budget   string // redis_rate key (redis_rate prefixes "rate:")
	pauseKey string
	clock    clockwork.Clock
	log      zerolog.Logger
	maxPause time.Duration
	// adaptive learns per endpoint class (Config.Adaptive), each class kept
	// under classPrefix, with ceiling and burst (requests a second, and
	// at that rate) from adaptive.Headroom.
	adaptive       bool
	classPrefix    string
	ceiling, burst float64

	pause adaptive.Pause // local pause, on clock

	mu sync.Mutex
	// offset is Redis's clock minus clock, as the last adaptive grant saw.
	offset time.Duration
}

var _ interface {
	transport.Limiter
	WaitFor(ctx context.Context, method, path string) error
	Answered(method, path string, grantedAt time.Time, status int)
} = (*Budget)(nil)

// Config configures a Budget. Every process on the account must use the
// same RatePerMinute, Burst and Adaptive. The zero Config is the venue's
// budget on the real clock.
type Config struct {
	// RatePerMinute and Burst are the shared budget: RatePerMinute
	// requests a minute sustained, bursts of Burst, kept to with the same
	// headroom as transport's in-process bucket. Zero means the venue's
	// 100 a minute and 300; a negative RatePerMinute turns throttling off
	// (pauses still apply).
	RatePerMinute float64
	Burst         int
	// Adaptive makes the budget learn the venue's rate per endpoint class,
	// as transport's Config.Adaptive does in one process, with what it
	// learns kept in Redis beside each class's GCRA state, so the fleet
	// shares it: a 429 seen by any process cuts the class for all of them,
	// the tokens any of them takes count toward the measurement of the
	// venue's rate, and the hold and the probe after it run on Redis's
	// clock. Each class starts at the budget above, its ceiling.
	Adaptive bool
	// Clock times waits (the budget itself is computed on Redis's
	// clock). Nil means the real clock.
	Clock clockwork.Clock
	// Logger hears of failed pause writes. The zero Logger logs nothing.
	Logger zerolog.Logger
	// MaxPause bounds one Pause, whatever delay it is asked for. Zero
	// means a minute.
	MaxPause time.Duration
}

// New returns a Budget for accountNumber kept in rdb, after checking with
// PING that Redis answers: an unreachable Redis is an error here (matching
// transport.ErrUnavailable), not a silent fallback. rdb stays the
// caller's to close.
func New(ctx context.Context, rdb redis.UniversalClient, accountNumber string, cfg Config) (*Budget, error) {
	if rdb == nil {
		return nil, errors.New("redisbudget: a Redis client is required")
	}
	if !accountShape.MatchString(accountNumber) {
		return nil, fmt.Errorf("redisbudget: account number %q: want 1 to 64 letters and digits", accountNumber)
	}
	if cfg.Clock == nil {
		cfg.Clock = clockwork.NewRealClock()
	}
	perMinute, burst, maxPause, err := adaptive.SharedSettings("redisbudget", cfg.RatePerMinute, cfg.Burst, cfg.MaxPause, defaultMaxPause)
	if err != nil {
		return nil, err
	}
	cfg.Burst, cfg.MaxPause = burst, maxPause
	if err := rdb.Ping(ctx).Err(); err != nil {
		return nil, unavailable(err, "redisbudget: Redis does not answer PING")
	}
	ns := "tradewire:{" + accountNumber + "}:"
	ceiling, burst := adaptive.Headroom(perMinute, cfg.Burst)
	return &Budget{
		adaptive: cfg.Adaptive, classPrefix: ns + "class:", ceiling: ceiling / 60, burst: float64(burst),
		rdb: rdb, limiter: redis_rate.NewLimiter(rdb),
		// The rate is kept to a thousandth of a request a minute (the
		// GCRA's emission interval is Period/Rate); rate and burst keep
		// adaptive.Headroom under the venue's, like the in-process bucket.
		limit:    gcraLimit(perMinute, cfg.Burst),
		off:      perMinute == 0,
		account:  accountNumber,
		budget:   ns + "budget",
		pauseKey: ns + "pause",
		clock:    cfg.Clock, log: cfg.Logger, maxPause: cfg.MaxPause,
	}, nil
}

// Wait takes one request from the shared budget (with Config.Adaptive, from
// a class of its own, apart from the venue's endpoints), first sleeping out any
// fleet-wide pause, then waiting on the clock while the budget is spent.
// It never starts a wait that would end after ctx's deadline: it returns
// at once with an error wrapping context.DeadlineExceeded instead. A Redis
// failure is returned as an error matching transport.ErrUnavailable:
// nothing may be sent then.
func (b *Budget) Wait(ctx context.Context) error {
	if b.adaptive && !b.off {
		return b.waitClass(ctx, wire.ClassOther)
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		d, err := b.pauseLeft(ctx)
		if err != nil {
			return err
		}
		if d <= 0 && !b.off {
			res, err := b.limiter.Allow(ctx, b.budget, b.limit)
			if err != nil {
				return unavailable(err, "redisbudget: taking a token for account %s", b.account)
			}
			if res.Allowed > 0 {
				return nil
			}
			d = max(res.RetryAfter, time.Millisecond)
		}
		if d <= 0 {
			return nil
		}
		if err := b.sleep(ctx, d); err != nil {
			return err
		}
	}
}

// pauseLeft is how long the fleet (or this process) must still hold back.
func (b *Budget) pauseLeft(ctx context.Context) (time.Duration, error) {
	if local := b.pause.Left(b.clock.Now()); local > 0 {
		return local, nil
	}
	ms, err := b.rdb.PTTL(ctx, b.pauseKey).Result()
	if err != nil {
		return 0, unavailable(err, "redisbudget: reading the pause for account %s", b.account)
	}
	// go-redis reports PTTL's -1 (no expiry) and -2 (no key) as negative
	// durations; neither is a pause.
	return max(ms, 0), nil
}

func (b *Budget) sleep(ctx context.Context, d time.Duration) error {
	return adaptive.WaitToken(ctx, b.clock, b.clock.Now(), d, "redisbudget")
}

// Pause holds back every process on the account for d (clamped to the
// maximum pause), unless a longer pause is already in force: it never
// shortens one. It pauses this process even if the write to Redis fails;
// that failure is logged.
func (b *Budget) Pause(d time.Duration) {
	d = min(d, b.maxPause)
	if !b.pause.Extend(b.clock.Now(), d) {
		return
	}
	ms := max(1, d.Milliseconds())
	// Pause has no context: go-redis's own dial, read and write timeouts
	// bound the call.
	if err := extendPause.Run(context.Background(), b.rdb, []string{b.pauseKey}, ms).Err(); err != nil {
		b.log.Error().Str("account", b.account).Dur("pause", d).Str("error", err.Error()).Msg("redisbudget: the fleet-wide pause was not written")
	}
}

// Tokens returns the tokens left in the account's shared budget, read
// on Redis's clock: the burst when none was taken lately, down to 0
// while the fleet spends faster than the rate. ok is false when the
// budget does not throttle (a negative RatePerMinute) or keeps one
// bucket per endpoint class (Config.Adaptive). A Redis failure is an
// error matching transport.ErrUnavailable.
func (b *Budget) Tokens(ctx context.Context) (n float64, ok bool, err error) {
	if b.off || b.adaptive {
		return 0, false, nil
	}
	v, err := tokensLeft.Run(ctx, b.rdb, []string{"rate:" + b.budget}, b.limit.Burst, b.limit.Rate, b.limit.Period.Seconds()).Text()
	if err != nil {
		return 0, false, unavailable(err, "redisbudget: reading the tokens of account %s", b.account)
	}
	n, err = strconv.ParseFloat(v, 64)
	if err != nil {
		return 0, false, fmt.Errorf("redisbudget: reading the tokens of account %s: %q: %w", b.account, v, err)
	}
	return n, true, nil
}

// tokensLeft reads the tokens left in redis_rate's GCRA at KEYS[1] (its
// key, "rate:" and the budget's name) for burst ARGV[1], rate ARGV[2]
// and period ARGV[3] (seconds), as its own script computes them, without
// spending one.
var tokensLeft = redis.NewScript(`
local emission = tonumber(ARGV[3]) / tonumber(ARGV[2])
local now = redis.call("TIME")
now = (now[1] - 1483228800) + (now[2] / 1000000)
local tat = redis.call("GET", KEYS[1])
local ahead = 0
if tat then
  ahead = math.max(tonumber(tat) - now, 0)
end
return tostring((emission * tonumber(ARGV[1]) - ahead) / emission)
`)

// gcraLimit is the shared bucket for a venue allowing perMinute requests a
// minute in bursts of burst: adaptive.Headroom under it.
func gcraLimit(perMinute float64, burst int) redis_rate.Limit {
	rate, n := adaptive.Headroom(perMinute, burst)
	return redis_rate.Limit{Rate: int(math.Round(rate * 1000)), Period: 1000 * time.Minute, Burst: n}
}
