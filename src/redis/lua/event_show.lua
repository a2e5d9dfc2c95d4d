-- event_show.lua: shows an event that begin_recovery stored hidden (HoldTable::end_recovery):
-- writes its `id` field, from when on calls on it work, and raises its version above
-- `at_least` (the highest version the caller saw, or its records hold): max(ver, at_least)
-- + 1. On a shown event it only raises the version. Showing a hidden event starts its
-- change log afresh at the new version (field lr) and gives the event a new history (field
-- h, `history`: the caller draws it): a reader from before the recovery, maybe of another
-- data, gets changes_trimmed whatever its version, and reads the seats again.
-- KEYS: event:{e}
--! ARGV prefix event at_least history
-- Returns {1, spec_json, version} (the spec for the events index) or unknown_event.
arg_count(@argc, 'event_show')
local K = arg_event(@prefix, @event)
local event = ARGV[@event]
-- A version stays an integer a double holds exactly (Lua's numbers) after it is raised.
local at_least = arg_int(@at_least, 'version at least', 0, 2 ^ 53 - 2)
local history = arg_history(@history)
if #KEYS ~= 1 or KEYS[1] ~= K.event then malformed('KEYS[1] should be ' .. K.event) end
local ev = call('HMGET', K.event, 'spec', 'ver', 'id')
if not ev[1] then return refuse('unknown_event', 'no event ' .. event, {event}) end
local version = math.max(ev[2] and ev[2] + 0 or 0, at_least) + 1
if ev[3] then
  call('HSET', K.event, 'id', event, 'ver', digits(version))
else
  call('DEL', K.log)
  call('HSET', K.event, 'id', event, 'ver', digits(version), 'lr', digits(version), 'h', history)
end
return {1, ev[1], version}
