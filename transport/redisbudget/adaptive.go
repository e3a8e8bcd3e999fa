package redisbudget

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tradewire/tradewire/internal/adaptive"
	"github.com/tradewire/tradewire/internal/wire"
)

// WithAdaptive makes the budget learn the venue's rate per endpoint class,
// as transport.NewAdaptiveLimiter does in one process, with what it learns
// kept in Redis beside each class's GCRA state, so the fleet shares it: a
// 429 seen by any process cuts the class's rate for all of them, and the
// rate grows back for all of them on Redis's clock. Each class starts at
// WithRateLimit's budget, its ceiling. Every process on the account must
// give it alike.
func WithAdaptive() Option { return func(c *config) { c.adaptive = true } }

// adaptiveLua is the cubic of package internal/adaptive in Lua; every
// constant comes from Go as an argument.
const adaptiveLua = `
redis.replicate_commands()
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
end
local ceiling, burst = tonumber(ARGV[2]), tonumber(ARGV[3])
local beta, plateau, probe = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local floor, tau, ttl = tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9])
local function rate(wmax, secs)
  local c = ceiling / (probe * probe * probe)
  local p = wmax * plateau
  local d = secs - ((p - wmax * beta) / c) ^ (1 / 3)
  local r = p + c * d * d * d
  if r < ceiling * floor then r = ceiling * floor end
  if r > ceiling then r = ceiling end
  return r
end
-- tolerance is how far ahead of now the GCRA's arrival time may run at
-- rate r: the burst, scaled by the rate, of intervals at r.
local function tolerance(r)
  local b = burst * r / ceiling
  if b < 1 then b = 1 end
  return b * 1000 / r
end
local now = now_ms()
local h = redis.call('HMGET', KEYS[1], 'tat', 'wmax', 'cut', 'sent', 'sent_at')
local cut = tonumber(h[3])
local r = ceiling
if cut then r = rate(tonumber(h[2]), (now - cut) / 1000) end
local sent = tonumber(h[4]) or 0
local sent_at = tonumber(h[5]) or now
if now > sent_at then
  sent = sent * math.exp(-(now - sent_at) / 1000 / tau)
  sent_at = now
end
`

// adaptiveTake spends one token of a class (KEYS[1]) unless the fleet is
// paused (KEYS[2]). ARGV[1] is unused. It returns {allowed, µs to wait,
// Redis's time in µs}.
var adaptiveTake = redis.NewScript(adaptiveLua + `
local pause = redis.call('PTTL', KEYS[2])
if pause > 0 then
  return {0, pause * 1000, math.floor(now * 1000)}
end
local tat = tonumber(h[1]) or now
if tat < now then tat = now end
local new_tat = tat + 1000 / r
local ahead = new_tat - now
local tol = tolerance(r)
if ahead > tol then
  return {0, math.ceil((ahead - tol) * 1000), math.floor(now * 1000)}
end
redis.call('HSET', KEYS[1], 'tat', tostring(new_tat), 'sent', tostring(sent + 1 / tau), 'sent_at', tostring(sent_at))
redis.call('PEXPIRE', KEYS[1], ttl)
return {1, 0, math.floor(now * 1000)}
`)

// adaptiveCut cuts a class (KEYS[1]) for a 429 to a request granted at
// ARGV[1] (µs, Redis's time), unless the class was cut since: one
// congestion, one cut. It empties the class's bucket. It returns 1 when
// it cut.
var adaptiveCut = redis.NewScript(adaptiveLua + `
local granted = tonumber(ARGV[1]) / 1000
if cut and granted <= cut then
  return 0
end
local x = r
if sent < x * beta then x = sent end
if x < ceiling * floor then x = ceiling * floor end
local nr = rate(x, 0)
redis.call('HSET', KEYS[1], 'wmax', tostring(x), 'cut', tostring(now), 'tat', tostring(now + tolerance(nr)),
  'sent', tostring(sent), 'sent_at', tostring(sent_at))
redis.call('PEXPIRE', KEYS[1], ttl)
return 1
`)

// adaptiveTTL is how long a class's state outlives its last use.
const adaptiveTTL = time.Hour

// classKey is the Redis key of a class's state.
func (b *Budget) classKey(c wire.Class) string {
	return b.classPrefix + strconv.Itoa(int(c))
}

func (b *Budget) adaptiveArgs(first any) []any {
	return []any{first, b.ceiling, b.burst, adaptive.Beta, adaptive.Plateau, adaptive.Probe.Seconds(),
		adaptive.Floor, adaptive.Tau.Seconds(), adaptiveTTL.Milliseconds()}
}

// WaitFor implements transport.AdaptiveLimiter: with WithAdaptive it takes
// one token of the request's endpoint class, first sleeping out any
// fleet-wide pause; without, it is Wait. Errors are as Wait's.
func (b *Budget) WaitFor(ctx context.Context, method, path string) error {
	if !b.adaptive || b.off {
		return b.Wait(ctx)
	}
	return b.waitClass(ctx, wire.ClassOf(method, path))
}

func (b *Budget) waitClass(ctx context.Context, c wire.Class) error {
	keys := []string{b.classKey(c), b.pauseKey}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		b.mu.Lock()
		d := b.pausedUntil.Sub(b.clock.Now())
		b.mu.Unlock()
		if d <= 0 {
			res, err := adaptiveTake.Run(ctx, b.rdb, keys, b.adaptiveArgs(0)...).Int64Slice()
			if err != nil || len(res) != 3 {
				return unavailable(fmt.Errorf("%v (reply %v)", err, res), "redisbudget: taking a token for account %s", b.account)
			}
			b.mu.Lock()
			b.offset = time.UnixMicro(res[2]).Sub(b.clock.Now())
			b.mu.Unlock()
			if res[0] == 1 {
				return nil
			}
			d = max(time.Duration(res[1])*time.Microsecond, time.Millisecond)
		}
		if err := b.sleep(ctx, d); err != nil {
			return err
		}
	}
}

// Answered implements transport.AdaptiveLimiter: with WithAdaptive, a 429
// to a request granted since its class was last cut, by any process,
// cuts the class for the fleet. A failure to reach Redis is logged; the
// 429's Pause still holds this process.
func (b *Budget) Answered(method, path string, grantedAt time.Time, status int) {
	if !b.adaptive || b.off || status != 429 {
		return
	}
	b.mu.Lock()
	granted := grantedAt.Add(b.offset).UnixMicro()
	b.mu.Unlock()
	c := wire.ClassOf(method, path)
	// Answered has no context: go-redis's own timeouts bound the call.
	if err := adaptiveCut.Run(context.Background(), b.rdb, []string{b.classKey(c)}, b.adaptiveArgs(granted)...).Err(); err != nil {
		b.log.Error().Str("account", b.account).Str("class", c.String()).Str("error", err.Error()).Msg("redisbudget: the fleet's rate was not cut")
	}
}
