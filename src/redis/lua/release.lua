-- release.lua: held -> free (HoldTable::release). A retried release succeeds, as does
-- releasing an expired hold (its seats are free already); a confirmed hold is refused.
-- The released hold is remembered for RELEASED_MEMORY_MS: in the hash of its minute
-- (was_released), or, when it was made with an idempotency key, by its record, kept with
-- status released in the event hash until its timer (now the end of that memory) runs.
-- KEYS: the event keys
--! ARGV prefix event token log_limit
-- Returns the event's version after the release, which every release that succeeds raises
-- by one (a bare integer, above 0: a table costs a reply more to write), or a refusal.
-- Runs 9 commands: TIME, HMGET of the event hash, a second HMGET of it once the hold's
-- zone is known (the zone, its paid and held counts, the holder's counter, the version),
-- ZADD of the seats, HSET of the event hash (the zone's held count, the holder's counter,
-- the version), HDEL of it (the hold, its seats' expiries, the counter once at 0), ZREM of
-- the deadline, HSET of the minute's hash of released holds (and, once a minute, its
-- PEXPIREAT and the HSET of "rb"), and the change log's XADD (common_records.lua). With a
-- key: ZADD of the deadline instead of ZREM, the record in the HSET, and no hash of the
-- minute. A retry (released or expired before) runs TIME, HMGET and an HINCRBY of the
-- version (raise_version).
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
local blob = sub(text, pairs_at)
local flat = unpack_pairs(blob)
local n = #flat / 2
-- The zone's record and counts, the holder's counter and the version, read once and
-- written with one HSET and one HDEL (the record, unless kept, the seats' expiries, the
-- counter once at 0).
local zone_held_field, counts_field = 'c:' .. zone, 'u:' .. holder
local zf = call('HMGET', K.event, 'z:' .. zone, 'p:' .. zone, zone_held_field, counts_field, 'ver')
local zone_held = count_digits(held_before(K, zone, zf[3]) - n)
chunked('ZADD', K:free(zone), flat)
local set, gone = {zone_held_field, zone_held}, {}
put_count(set, gone, counts_field, (zf[4] and zf[4] + 0 or 0) - n - HOLD_UNIT)
local version, version_at = next_version(K, zf[5])
set[#set + 1] = 'ver'
set[#set + 1] = version_at
-- The change log's entry (common_records.lua): the zone's counts, and the seats now free
-- (a general-admission zone: its counts).
if sub(zf[1], 1, 6) == 'named ' then held_fields(gone, zone, flat) else blob = '' end
if sub(text, rest, rest) ~= '=' then
  -- No idempotency key: the record goes, the minute's hash remembers the release. "due"
  -- may now lie before every timer, which only costs the sweep that finds none.
  gone[#gone + 1] = hold_field
  call('ZREM', K.deadlines, token)
  remember_release(K, token, now, ev[4])
else
  local forget_at = now + RELEASED_MEMORY_MS
  local forget = digits(forget_at)
  call('ZADD', K.deadlines, forget, token)
  -- The record as it was, but for its status.
  set[#set + 1] = hold_field
  set[#set + 1] = 'released' .. sub(text, rest)
  if not ev[2] or forget_at < ev[2] + 0 then
    set[#set + 1] = 'due'
    set[#set + 1] = forget
  end
end
chunked('HSET', K.event, set)
chunked('HDEL', K.event, gone)
log_entry(K, version_at, zone, zone_held, zf[2] or '0', '0', '0', blob)
return version
