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

// adaptiveLua is package internal/adaptive's schedule in Lua; every
// constant comes from Go as an argument. A class's hash holds its GCRA
// arrival time (tat, ms), its last cut (empty, ms), the tokens granted
// since (granted), the rate it holds at until its probe (hold, a second;
// 0: nothing) and the probe's time (probe, ms).
const adaptiveLua = `
redis.replicate_commands()
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
end
local ceiling, burst = tonumber(ARGV[2]), tonumber(ARGV[3])
local measure, every, window = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local floor, ttl = tonumber(ARGV[7]), tonumber(ARGV[8])
-- tolerance is how far ahead of now the GCRA's arrival time may run at
-- rate r: the burst, scaled by the rate, of intervals at r.
local function tolerance(r)
  local b = burst * r / ceiling
  if b < 1 then b = 1 end
  return b * 1000 / r
end
local now = now_ms()
local h = redis.call('HMGET', KEYS[1], 'tat', 'empty', 'granted', 'hold', 'probe')
local empty = tonumber(h[2])
local granted = tonumber(h[3]) or 0
local hold = tonumber(h[4]) or 0
local probe = tonumber(h[5]) or 0
local held = empty and now < probe
local r = ceiling
if held then r = hold end
`

// adaptiveTake spends one token of a class (KEYS[1]) unless the fleet is
// paused (KEYS[2]). ARGV[1] is unused. It returns {allowed, µs to wait,
// Redis's time in µs}.
var adaptiveTake = redis.NewScript(adaptiveLua + `
local pause = redis.call('PTTL', KEYS[2])
if pause > 0 then
  return {0, pause * 1000, math.floor(now * 1000)}
end
if r == 0 then
  return {0, math.ceil((probe - now) * 1000), math.floor(now * 1000)}
end
local tat = tonumber(h[1]) or now
if tat < now then tat = now end
local new_tat = tat + 1000 / r
local ahead = new_tat - now
local tol = tolerance(r)
if ahead > tol then
  local wait = ahead - tol
  if held and wait > probe - now then wait = probe - now end
  return {0, math.ceil(wait * 1000), math.floor(now * 1000)}
end
redis.call('HSET', KEYS[1], 'tat', tostring(new_tat))
redis.call('HINCRBY', KEYS[1], 'granted', 1)
redis.call('PEXPIRE', KEYS[1], ttl)
return {1, 0, math.floor(now * 1000)}
`)

// adaptiveCut cuts a class (KEYS[1]) for a 429 to a request granted at
// ARGV[1] (µs, Redis's time), unless the class was cut since: one
// congestion, one cut. It empties the class's bucket and sets its hold
// (adaptive.Hold) and probe. It returns 1 when it cut.
var adaptiveCut = redis.NewScript(adaptiveLua + `
local g = tonumber(ARGV[1]) / 1000
if empty and g <= empty then
  return 0
end
local nh, np = 0, now + measure * 1000
if empty then
  local secs = (now - empty) / 1000
  if secs >= measure and secs <= window then
    nh = (granted - 2) / secs
    if nh < ceiling * floor then nh = ceiling * floor end
    if nh > ceiling then nh = ceiling end
    np = now + every * 1000
  end
end
local tat = np + tolerance(ceiling)
if nh > 0 then tat = now + tolerance(nh) end
redis.call('HSET', KEYS[1], 'tat', tostring(tat), 'empty', tostring(now), 'granted', 0,
  'hold', tostring(nh), 'probe', tostring(np))
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
	return []any{first, b.ceiling, b.burst, adaptive.Measure.Seconds(), adaptive.Every.Seconds(), adaptive.Window.Seconds(),
		adaptive.Floor, adaptiveTTL.Milliseconds()}
}

// WaitFor implements transport's per-class Limiter: with Config.Adaptive it takes
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
		d := b.pause.Left(b.clock.Now())
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

// Answered implements transport's per-class Limiter: with
// Config.Adaptive, a 429 to a request granted since its class was last cut, by any process,
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
