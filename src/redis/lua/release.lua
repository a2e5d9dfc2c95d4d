-- release.lua: held -> free, and the hold is forgotten at once (HoldTable::release):
-- a later call on it gets unknown_hold. Releasing an expired hold succeeds (its seats
-- are free already); a confirmed hold is refused.
-- KEYS: the event keys
-- ARGV: prefix, event, token
-- Returns {1} or a refusal.
-- Runs 6 commands: TIME, HMGET of the event hash, ZREM of the deadline, ZADD of the seats,
-- HINCRBY of the holder's counter, HDEL of the hold (and of the counter, once at 0).
arg_count(3, 'release')
local prefix = arg_prefix(1)
arg_ids(2, 2, 'event id')
local event = ARGV[2]
local token = arg_token(3, event)
local K = event_keys(prefix, event)
check_keys(K)

local now = now_ms()
local hold_field = 'h:' .. token
local ev = redis.call('HMGET', K.event, 'id', 'due', hold_field)
if sweep(K, now, ev[2]) then ev = redis.call('HMGET', K.event, 'id', 'due', hold_field) end
if not ev[3] then
  if not ev[1] then return refuse('unknown_hold', 'no hold ' .. token .. ' (unknown event)') end
  return refuse('unknown_hold', 'no hold ' .. token .. ' in event ' .. event)
end
local status, holder, zone, blob = string.match(ev[3], '^(%S+) (%S+) (%S+) %d+ %d+ (.*)$')
if status == 'expired' then return {1} end -- its seats are already free
if status ~= 'held' then return inactive(token, hold_of(ev[3])) end
redis.call('ZREM', K.deadlines, token)
local flat = unpack_pairs(blob)
chunked('ZADD', K:free(zone), flat)
-- Forgotten at once: a released hold is worth nothing to anyone. So is a counter at 0.
local counts_field = 'u:' .. holder
if redis.call('HINCRBY', K.event, counts_field, -(#flat / 2 + HOLD_UNIT)) == 0 then
  redis.call('HDEL', K.event, hold_field, counts_field)
else
  redis.call('HDEL', K.event, hold_field)
end
return {1}
