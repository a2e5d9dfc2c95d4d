-- expired.lua: up to `limit` expired holds of one event not yet acknowledged and not
-- delivered during the last `redeliver_after` ms; each is due again after that.
-- KEYS: the event keys
-- ARGV: prefix, event, limit, redeliver_after_ms
-- Returns {1, {{token, holder, zone, {seats}, expired_at_ms}, ...}}
arg_count(4, 'expired')
local prefix, event = arg_prefix(1), arg_id(2, 'event')
local limit = arg_int(3, 'limit', 1, MAX_PLACES)
local redeliver_after = arg_int(4, 'redeliver after', 0, MAX_MS)
local K = event_keys(prefix, event)
check_keys(K)

local now = now_ms()
if redis.call('EXISTS', K.event) == 0 then return {1, {}} end
sweep(K, now)

local out = {}
local due = redis.call('ZRANGEBYSCORE', K.expired, '-inf', now, 'LIMIT', 0, limit)
for _, token in ipairs(due) do
  local hold_key = K:hold(token) -- derived: the expired hold's record
  local h = redis.call('HMGET', hold_key, 'holder', 'zone', 'seats', 'expires')
  if h[1] then
    out[#out + 1] = {token, h[1], h[2], split(h[3]), tonumber(h[4])}
    redis.call('ZADD', K.expired, 'XX', now + redeliver_after, token)
  else
    redis.call('ZREM', K.expired, token) -- nothing left to report
  end
end
return {1, out}
