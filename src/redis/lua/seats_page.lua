-- seats_page.lua: one piece of an event's seat map, after the sweep every call runs: the
-- counts of one zone and the states of up to 1,000 of its seats, at the event's version,
-- which it answers. RedisBackend reads a map in such pieces, and brings them to one
-- version with the change log (codecs/seat_map.hpp), so that no call on a large venue is
-- long. A seat is free while in its zone's free set, paid while in the paid hash, held
-- otherwise (until the expiry in its field x:<zone>:<seat> of the event hash:
-- common_records.lua). The counts are counted from the zone's sets (zone_counts_now), not
-- taken from the held count the writes keep (c:<zone>), so that the conformance suite,
-- which checks the change log's counts against a map, checks that count as well.
-- KEYS: the event keys
--! ARGV prefix event log_limit zone seats...
-- seats: seat ids of the zone, in any number up to 1,000 (none: the counts alone)
-- Returns {1, version, free, held, paid, {state, expires_ms, ...}, history} with one state
-- per seat asked (0 free, 1 held, 2 paid; expires_ms when held, else 0) and the event's
-- history (field h, '0' on an event stored before histories), or unknown_event (also while
-- hidden) or unknown_zone.
local K = arg_event(@prefix, @event)
arg_log(@log_limit, K)
local event, zone = ARGV[@event], ARGV[@zone]
local n = #ARGV - @argc
if n < 0 then malformed('seats_page: expected ' .. @argc .. ' ARGV or more, got ' .. #ARGV) end
if n > 1000 then malformed('more than 1,000 seats asked') end
arg_ids(@zone, #ARGV, 'zone id,seat id')
check_keys(K)

local now = now_ms()
local zone_field = 'z:' .. zone
local ev = call('HMGET', K.event, 'id', 'due', zone_field, 'ver', 'h')
if not ev[1] then return refuse('unknown_event', 'no event ' .. event, {event}) end
if sweep(K, now, ev[2]) then ev = call('HMGET', K.event, 'id', 'due', zone_field, 'ver', 'h') end
if not ev[3] then return refuse('unknown_zone', 'event ' .. event .. ' has no zone ' .. zone, {zone}) end
local free, held, paid = zone_counts_now(K, zone)
local states = {}
if n > 0 then
  local ids, fields, held_at = {unpack(ARGV, @seats, #ARGV)}, {}, {}
  for i = 1, n do
    fields[i] = zone .. ':' .. ids[i]
    held_at[i] = 'x:' .. fields[i]
  end
  local in_free = call('ZMSCORE', K:free(zone), unpack(ids))
  local in_paid = call('HMGET', K.paid, unpack(fields))
  local expiries = call('HMGET', K.event, unpack(held_at))
  for i = 1, n do
    if in_free[i] then
      states[2 * i - 1], states[2 * i] = 0, 0
    elseif in_paid[i] then
      states[2 * i - 1], states[2 * i] = 2, 0
    else
      states[2 * i - 1], states[2 * i] = 1, tonumber(expiries[i] or '0')
    end
  end
end
return {1, ev[4] and ev[4] + 0 or 0, free, held, paid, states, ev[5] or '0'}
