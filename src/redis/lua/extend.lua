-- extend.lua: moves a hold's expiry to now + ttl, capped at its creation + max_lifetime,
-- never earlier than it already is (HoldTable::extend).
-- KEYS: the event keys, then hold:<token>
-- ARGV: prefix, event, token, ttl_ms, max_lifetime_ms
-- Returns {1, holder, zone, {seats}, expires_ms} or a refusal.
arg_count(5, 'extend')
local prefix, event = arg_prefix(1), arg_id(2, 'event')
local token = arg_token(3, event)
local ttl = arg_int(4, 'ttl', 1, MAX_MS)
local max_lifetime = arg_int(5, 'max lifetime', 1, MAX_MS)
local K = event_keys(prefix, event)
local hold_key = K:hold(token)
check_keys(K, {hold_key})

local now = now_ms()
if redis.call('EXISTS', K.event) == 0 then
  return refuse('unknown_hold', 'no hold ' .. token .. ' (unknown event)')
end
sweep(K, now)

local h = redis.call('HMGET', hold_key, 'holder', 'zone', 'seats', 'status', 'order', 'created', 'expires')
if not h[1] then
  return refuse('unknown_hold', 'no hold ' .. token .. ' in event ' .. event)
end
if h[4] ~= 'held' then return inactive(token, h[4], h[5], split(h[3])) end
-- Capped, never refused: the hold lives at most max_lifetime from its creation.
local expires = math.max(tonumber(h[7]), math.min(now + ttl, tonumber(h[6]) + max_lifetime))
redis.call('HSET', hold_key, 'expires', expires)
redis.call('ZADD', K.deadlines, expires, token)
return {1, h[1], h[2], split(h[3]), expires}
