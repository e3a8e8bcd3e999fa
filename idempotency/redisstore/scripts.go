package redisstore

import "github.com/redis/go-redis/v9"

// An intent is one hash, KEYS[1] = tradewire:{ACCOUNT}:intent:<cid>:
//
//	rec      the idempotency.Record as JSON
//	state    the record's state, for the scripts
//	owner    the claim holder's owner id; "" when nobody holds it
//	lease    when the claim lapses, Unix ms on Redis's clock
//	signexp  when the latest signature can no longer be accepted
//	         (LastSignedAt + 30 s + skew margin, Unix ms on the writer's
//	         clock); 0 when nothing was signed
//
// KEYS[2] = tradewire:{ACCOUNT}:intents, a sorted set of client_order_ids
// by CreatedAt, for List.
//
// Both scripts read Redis's TIME for leases, so every machine agrees on
// when a claim lapses whatever its own clock says.

// createScript claims an intent. ARGV: owner, lease ms, record JSON,
// state, signexp ms, caller's now (Unix ms), index score, client_order_id.
// Replies:
//
//	{1}                               created; the caller holds the claim
//	{0, rec}                          exists; resolved, or the caller already
//	                                  held the claim (renewed)
//	{3, rec}                          exists; taken over from a lapsed claim
//	{2, rec, owner, lease, signexp}   held elsewhere (or its signatures live)
var createScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local me = ARGV[1]
local lease = now + tonumber(ARGV[2])
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('HSET', KEYS[1], 'rec', ARGV[3], 'state', ARGV[4], 'owner', me, 'lease', lease, 'signexp', ARGV[5])
  redis.call('ZADD', KEYS[2], ARGV[7], ARGV[8])
  return {1}
end
local h = redis.call('HMGET', KEYS[1], 'rec', 'state', 'owner', 'lease', 'signexp')
local rec, state, owner = h[1], h[2], h[3] or ''
local held = tonumber(h[4] or '0') or 0
local signexp = tonumber(h[5] or '0') or 0
if state == 'acknowledged' or state == 'rejected' then
  return {0, rec}
end
if owner == me then
  redis.call('HSET', KEYS[1], 'lease', lease)
  return {0, rec}
end
local busy = owner ~= '' and held > now
if not busy and (state == 'pending' or state == 'unknown') then
  -- A lapsed claim on an open intent: its owner may be stalled, not dead.
  -- Take it over only once no signature it sent can be accepted, on both
  -- Redis's clock and the caller's.
  busy = signexp > math.min(now, tonumber(ARGV[6]))
end
if busy then
  return {2, rec, owner, held, signexp}
end
redis.call('HSET', KEYS[1], 'owner', me, 'lease', lease)
return {3, rec}
`)

// updateScript replaces an intent the caller holds. ARGV: owner, lease ms,
// record JSON, state, signexp ms. A final state (acknowledged, rejected,
// not_placed) releases the claim; any other renews it. Replies: 1 done,
// -1 no such intent, {0, owner} the claim is held by owner ("" when it was
// released).
var updateScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then
  return -1
end
local me = ARGV[1]
local owner = redis.call('HGET', KEYS[1], 'owner') or ''
if owner ~= me then
  return {0, owner}
end
local state = ARGV[4]
local lease = 0
if state == 'acknowledged' or state == 'rejected' or state == 'not_placed' then
  me = ''
else
  local t = redis.call('TIME')
  lease = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[2])
end
local signexp = math.max(tonumber(redis.call('HGET', KEYS[1], 'signexp') or '0') or 0, tonumber(ARGV[5]))
redis.call('HSET', KEYS[1], 'rec', ARGV[3], 'state', state, 'owner', me, 'lease', lease, 'signexp', signexp)
return 1
`)
