-- release.lua: held -> free (HoldTable::release). A retried release succeeds, as does
-- releasing an expired hold (its seats are free already); a confirmed hold is refused.
-- The released hold is remembered for RELEASED_MEMORY_MS: in the hash of its minute
-- (was_released), or, when it was made with an idempotency key, by its record, kept with
-- status released in the event hash until its timer (now the end of that memory) runs.
-- KEYS: the event keys
--! ARGV prefix event token log_limit
-- Returns the event's version after the release, which every release that succeeds raises
-- by one (a bare integer, above 0: a table costs a reply more to write), or a refusal.
-- Runs 12 commands: TIME, HMGET of the event hash, ZADD of the seats, HDEL of their held
-- expiries, the change log's HMGET, ZCARD and XADD (write_log), HINCRBY of the
-- holder's counter, ZREM of the deadline, HDEL of the hold (and of the counter, once at 0),
-- HSET of the minute's hash of released holds (and, once a minute, its PEXPIREAT and the
-- HSET of "rb"), HINCRBY of the version (raise_version: no write of the event hash here
-- could carry it). With a key: ZADD of the deadline and HSET of the record instead of
-- ZREM, HDEL and that HSET. A retry (released or expired before) runs TIME, HMGET and the
-- HINCRBY.
arg_count(@argc, 'release')
local K = arg_event(@prefix, @event)
arg_log(@log_limit, K)
local event = ARGV[@event]
local token = arg_token(@token, K)
check_keys(K)

local now = now_ms()
local hold_field = 'h:' .. token
local ev = call('HMGET', K.event, 'id', 'due', hold_field, 'rb')
if not ev[1] then return refuse('unknown_event', 'no event ' .. event, {event}) end
if sweep(K, now, ev[2]) then ev = call('HMGET', K.event, 'id', 'due', hold_field, 'rb') end
local text = ev[3]
if not text then
  if was_released(K, token, now) then return raise_version(K) end -- a retry
  return refuse('unknown_hold', 'no hold ' .. token .. ' in event ' .. event)
end
local status, rest, holder, zone, pairs_at = hold_head(text)
if status == 'expired' or status == 'released' then return raise_version(K) end
if status ~= 'held' then return inactive(token, hold_of(text)) end
local flat = unpack_pairs(sub(text, pairs_at))
chunked('ZADD', K:free(zone), flat)
clear_held(K, zone, flat)
-- The change log: the seats now free.
local L = new_log()
touch_all(L, zone, flat, 0)
local function logged(version)
  write_log(K, L, version)
  return version
end
if sub(text, rest, rest) ~= '=' then
  -- No idempotency key: the record goes (with the holder's counter once back at 0), the
  -- minute's hash remembers the release. "due" may now lie before every timer, which only
  -- costs the sweep that finds none.
  call('ZREM', K.deadlines, token)
  count_holds(K, 'u:' .. holder, -#flat / 2, -1, hold_field)
  remember_release(K, token, now, ev[4])
  return logged(raise_version(K))
end
count_holds(K, 'u:' .. holder, -#flat / 2, -1)
local forget_at = now + RELEASED_MEMORY_MS
local forget = digits(forget_at)
call('ZADD', K.deadlines, forget, token)
-- The record as it was, but for its status.
local record = 'released' .. sub(text, rest)
if ev[2] and forget_at >= ev[2] + 0 then
  call('HSET', K.event, hold_field, record)
else
  call('HSET', K.event, hold_field, record, 'due', forget)
end
return logged(raise_version(K))
