-- release.lua: held -> free (HoldTable::release). The released hold is remembered for
-- RELEASED_MEMORY_MS (its deadline becomes the end of that memory), so a retried release
-- succeeds; so does releasing an expired hold (its seats are free already); a confirmed
-- hold is refused.
-- KEYS: the event keys
-- ARGV: prefix, event, token
-- Returns 1 (a bare integer: a table costs a reply more to write) or a refusal.
-- Runs 6 commands: TIME, HMGET of the event hash, ZADD of the deadline, ZADD of the seats,
-- HINCRBY of the holder's counter, HSET of the hold (and HDEL of the counter, once at 0).
arg_count(3, 'release')
local K = arg_event(1)
local event = ARGV[2]
local token = arg_token(3, K)
check_keys(K)

local now = now_ms()
local hold_field = 'h:' .. token
local ev = redis.call('HMGET', K.event, 'id', 'due', hold_field)
if sweep(K, now, ev[2]) then ev = redis.call('HMGET', K.event, 'id', 'due', hold_field) end
if not ev[1] then return refuse('unknown_event', 'no event ' .. event, {event}) end
local text = ev[3]
if not text then return refuse('unknown_hold', 'no hold ' .. token .. ' in event ' .. event) end
local status, rest, holder, zone, pairs_at = hold_head(text)
if status == 'expired' or status == 'released' then return 1 end
if status ~= 'held' then return inactive(token, hold_of(text)) end
local forget_at = now + RELEASED_MEMORY_MS
local forget = digits(forget_at)
redis.call('ZADD', K.deadlines, forget, token)
local flat = unpack_pairs(string.sub(text, pairs_at))
chunked('ZADD', K:free(zone), flat)
count_holds(K, 'u:' .. holder, -#flat / 2, -1)
-- The record as it was, but for its status.
local record = 'released' .. string.sub(text, rest)
if ev[2] and forget_at >= ev[2] + 0 then
  redis.call('HSET', K.event, hold_field, record)
else
  redis.call('HSET', K.event, hold_field, record, 'due', forget)
end
return 1
