package redisstore

import "github.com/redis/go-redis/v9"

// An intent is one hash, tradewire:{ACCOUNT}:intent:<cid>:
//
//	rec      the idempotency.Record as JSON
//	state    the record's state, for the scripts
//	owner    the claim holder's owner id; "" when nobody holds it
//	lease    when the claim lapses, Unix ms on Redis's clock
//	signexp  when the latest signature can no longer be accepted
//	         (LastSignedAt + 30 s + skew margin, Unix ms on the writer's
//	         clock); 0 when nothing was signed
//
// tradewire:{ACCOUNT}:intents is a sorted set of client_order_ids by
// CreatedAt, for List; tradewire:{ACCOUNT}:open holds the open ones
// (pending, unknown) by CreatedAt, for List of open states (Recover at
// start-up), and tradewire:{ACCOUNT}:settled the settled ones by when
// they are due for deletion (settled + retention, on Redis's clock). The
// scripts that write keep all three, and each write deletes up to 16
// intents due for deletion that no holder has claimed (index and purge):
// an open intent is never deleted.
//
// tradewire:{ACCOUNT}:generation is a hash, written once by the first
// Store on an account (generationScript):
//
//	id   a random id; a Redis that lost it (wiped, restarted without its
//	     data, failed over to a replica that never had it) lost intents too
//	seq  a counter every claim or update increments; a Store that sees it
//	     lower than it was before is talking to a Redis that went back in
//	     time (an older snapshot, a lagging replica)
//
// Both claim scripts first check the generation (guard): a missing or
// different id, or a seq below the caller's last, refuses with {-9, id} or
// {-8, seq} and writes nothing. Every other reply ends with the seq after
// the call.
//
// Both scripts read Redis's TIME for leases, so every machine agrees on
// when a claim lapses whatever its own clock says.

// guard is the head of both claim scripts. G is the generation key,
// ARGV[1] the Store's generation id, ARGV[2] the highest seq it has seen.
const guard = `
local gen = redis.call('HMGET', G, 'id', 'seq')
if gen[1] ~= ARGV[1] then
  return {-9, gen[1] or ''}
end
local seq = tonumber(gen[2] or '0') or 0
if seq < tonumber(ARGV[2]) then
  return {-8, seq}
end
local function wrote()
  seq = redis.call('HINCRBY', G, 'seq', 1)
end
`

// index and purge are helpers of the writing scripts, which define O
// (the open set), S (the settled set), I (the intents set), P (the intent
// key prefix) and RET (the retention, ms) first.
const index = `
local function index(id, state, score, now)
  if state == 'pending' or state == 'unknown' then
    redis.call('ZADD', O, score, id)
    redis.call('ZREM', S, id)
  else
    redis.call('ZREM', O, id)
    redis.call('ZADD', S, now + RET, id)
  end
end
local function purge(now)
  local due = redis.call('ZRANGEBYSCORE', S, '-inf', now, 'LIMIT', 0, 16)
  for _, id in ipairs(due) do
    local h = redis.call('HMGET', P .. id, 'state', 'owner', 'lease')
    local st, owner, held = h[1], h[2] or '', tonumber(h[3] or '0') or 0
    if st == 'pending' or st == 'unknown' then
      redis.call('ZREM', S, id)
    elseif owner == '' or held <= now then
      redis.call('DEL', P .. id)
      redis.call('ZREM', S, id)
      redis.call('ZREM', I, id)
    end
  end
end
`

// indexScript builds the open and settled sets of an account whose
// intents were written before they existed, once (the generation hash's
// indexed field says it is done). KEYS: generation, intents, open,
// settled. ARGV: intent key prefix, retention ms. Reply: {how many
// intents it indexed}.
var indexScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], 'indexed') then
  return {0}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ids = redis.call('ZRANGE', KEYS[2], 0, -1, 'WITHSCORES')
for i = 1, #ids, 2 do
  local st = redis.call('HGET', ARGV[1] .. ids[i], 'state')
  if st == 'pending' or st == 'unknown' then
    redis.call('ZADD', KEYS[3], ids[i + 1], ids[i])
  elseif st then
    redis.call('ZADD', KEYS[4], now + tonumber(ARGV[2]), ids[i])
  else
    redis.call('ZREM', KEYS[2], ids[i])
  end
end
redis.call('HSET', KEYS[1], 'indexed', 1)
return {#ids / 2}
`)

// generationScript reads the account's generation, or writes it when the
// account has none and no intents. KEYS: generation, intents index. ARGV:
// a fresh id. Replies: {0, id, seq} found, {1, id, 0} written, {-1, n}
// none but n intents exist.
var generationScript = redis.NewScript(`
local gen = redis.call('HMGET', KEYS[1], 'id', 'seq')
if gen[1] then
  return {0, gen[1], tonumber(gen[2] or '0') or 0}
end
local n = redis.call('ZCARD', KEYS[2])
if n > 0 then
  return {-1, n}
end
redis.call('HSET', KEYS[1], 'id', ARGV[1], 'seq', 0)
return {1, ARGV[1], 0}
`)

// createScript claims an intent. KEYS: intent, intents index, generation,
// open, settled. ARGV: generation id, last seq, owner, lease ms, record
// JSON, state, signexp ms, caller's now (Unix ms), index score,
// client_order_id, intent key prefix, retention ms.
// Replies, besides guard's:
//
//	{1, seq}                               created; the caller holds the claim
//	{0, rec, seq}                          exists; resolved, or the caller
//	                                       already held the claim (renewed)
//	{3, rec, seq}                          exists; taken over from a released
//	                                       or lapsed claim
//	{2, rec, owner, lease, signexp, seq}   held elsewhere (or its signatures live)
var createScript = redis.NewScript(`local G, O, S, I, P, RET = KEYS[3], KEYS[4], KEYS[5], KEYS[2], ARGV[11], tonumber(ARGV[12])` + guard + index + `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local me = ARGV[3]
local lease = now + tonumber(ARGV[4])
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('HSET', KEYS[1], 'rec', ARGV[5], 'state', ARGV[6], 'owner', me, 'lease', lease, 'signexp', ARGV[7])
  redis.call('ZADD', KEYS[2], ARGV[9], ARGV[10])
  index(ARGV[10], ARGV[6], ARGV[9], now)
  wrote()
  purge(now)
  return {1, seq}
end
local h = redis.call('HMGET', KEYS[1], 'rec', 'state', 'owner', 'lease', 'signexp')
local rec, state, owner = h[1], h[2], h[3] or ''
local held = tonumber(h[4] or '0') or 0
local signexp = tonumber(h[5] or '0') or 0
if state == 'acknowledged' or state == 'rejected' then
  return {0, rec, seq}
end
if owner == me then
  redis.call('HSET', KEYS[1], 'lease', lease)
  wrote()
  return {0, rec, seq}
end
local busy = owner ~= '' and held > now
if not busy and owner ~= '' and (state == 'pending' or state == 'unknown') then
  -- A lapsed claim on an open intent: its owner may be stalled, not dead.
  -- (A released one was given up: its owner sends nothing more.)
  -- Take it over only once no signature it sent can be accepted, on both
  -- Redis's clock and the caller's.
  busy = signexp > math.min(now, tonumber(ARGV[8]))
end
if busy then
  return {2, rec, owner, held, signexp, seq}
end
redis.call('HSET', KEYS[1], 'owner', me, 'lease', lease)
wrote()
return {3, rec, seq}
`)

// updateScript replaces intents the caller holds, in one script (one
// durable write). KEYS: generation, open, settled, intents index, then
// each intent. ARGV: generation id, last seq, lease ms, intent key prefix,
// retention ms, then for each intent six: owner, record JSON, state,
// signexp ms, index score, client_order_id. A final state (acknowledged,
// rejected, not_placed) releases the claim; any other renews it. Replies,
// besides guard's: for each intent a code and an owner ({1, ""} done,
// {-1, ""} no such intent, {0, owner} the claim is held by owner, "" when
// it was released), then the seq.
var updateScript = redis.NewScript(`local G, O, S, I, P, RET = KEYS[1], KEYS[2], KEYS[3], KEYS[4], ARGV[4], tonumber(ARGV[5])` + guard + index + `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local out = {}
local any = false
for i = 5, #KEYS do
  local k, b = KEYS[i], 6 + (i - 5) * 6
  local me, state = ARGV[b], ARGV[b + 2]
  if redis.call('EXISTS', k) == 0 then
    out[#out + 1] = -1
    out[#out + 1] = ''
  else
    local owner = redis.call('HGET', k, 'owner') or ''
    if owner ~= me then
      out[#out + 1] = 0
      out[#out + 1] = owner
    else
      local lease = 0
      if state == 'acknowledged' or state == 'rejected' or state == 'not_placed' then
        me = ''
      else
        lease = now + tonumber(ARGV[3])
      end
      local signexp = math.max(tonumber(redis.call('HGET', k, 'signexp') or '0') or 0, tonumber(ARGV[b + 3]))
      redis.call('HSET', k, 'rec', ARGV[b + 1], 'state', state, 'owner', me, 'lease', lease, 'signexp', signexp)
      index(ARGV[b + 5], state, ARGV[b + 4], now)
      any = true
      out[#out + 1] = 1
      out[#out + 1] = ''
    end
  end
end
if any then
  wrote()
  purge(now)
end
out[#out + 1] = seq
return out
`)

// releaseScript drops the caller's claim on an intent, leaving its record.
// KEYS: intent, generation. ARGV: generation id, last seq, owner.
// Replies, besides guard's: {1, seq} released, {0, seq} not held by the
// caller.
var releaseScript = redis.NewScript(`local G = KEYS[2]` + guard + `
if (redis.call('HGET', KEYS[1], 'owner') or '') ~= ARGV[3] then
  return {0, seq}
end
redis.call('HSET', KEYS[1], 'owner', '', 'lease', 0)
wrote()
return {1, seq}
`)
