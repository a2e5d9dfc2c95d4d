-- extend.lua: moves a hold's expiry to now + ttl, capped at its creation + max_lifetime,
-- never earlier than it already is (HoldTable::extend).
-- KEYS: the event keys
--! ARGV prefix event token ttl max_lifetime log_limit
-- ttl, max_lifetime: ms
-- Returns {1, holder, zone, {seats}, expires_ms, version} or a refusal; version: the
-- event's, raised by one (field ver, written with the record).
arg_count(@argc, 'extend')
local K = arg_event(@prefix, @event)
arg_log(@log_limit, K)
local event = ARGV[@event]
local token = arg_token(@token, K)
local ttl = arg_int(@ttl, 'ttl', 1, MAX_MS)
local max_lifetime = arg_int(@max_lifetime, 'max lifetime', 1, MAX_MS)
check_keys(K)

local now = now_ms()
local hold_field = 'h:' .. token
local ev = call('HMGET', K.event, 'id', 'due', hold_field, 'ver')
if not ev[1] then return refuse('unknown_event', 'no event ' .. event, {event}) end
if sweep(K, now, ev[2]) then ev = call('HMGET', K.event, 'id', 'due', hold_field, 'ver') end
if not ev[3] then return missing_hold(K, token, now) end
local h = hold_of(ev[3])
if h.status ~= 'held' then return inactive(token, h) end
-- Capped, never refused: the hold lives at most max_lifetime from its creation. The
-- deadline only moves later, so "due" stays no later than every timer.
h.expires = math.max(h.expires, math.min(now + ttl, h.created + max_lifetime))
local version, version_at = next_version(K, ev[4])
-- Named seats stay held, with the new expiry (x:<zone>:<seat>, written with the record),
-- which the change log says; a general-admission zone's counts do not change: nothing to
-- log.
local named = sub(call('HGET', K.event, 'z:' .. h.zone), 1, 6) == 'named '
local set = {hold_field, hold_text(h), 'ver', version_at}
if named then held_fields(set, h.zone, h.flat, digits(h.expires)) end
chunked('HSET', K.event, set)
call('ZADD', K.deadlines, h.expires, token)
if named then
  local L = new_log()
  touch_all(L, h.zone, h.flat, 1, h.expires)
  write_log(K, L, version)
end
return {1, h.holder, h.zone, seats_of(h.flat), h.expires, version}
