-- event_show.lua: shows an event that begin_recovery stored hidden (HoldTable::end_recovery):
-- writes its `id` field, from when on calls on it work. A no-op on a shown event.
-- KEYS: event:{e}
-- ARGV: prefix, event
-- Returns {1, spec_json} (for the events index) or unknown_event.
arg_count(2, 'event_show')
local K = arg_event(1)
local event = ARGV[2]
if #KEYS ~= 1 or KEYS[1] ~= K.event then malformed('KEYS[1] should be ' .. K.event) end
local spec = call('HGET', K.event, 'spec')
if not spec then return refuse('unknown_event', 'no event ' .. event, {event}) end
call('HSET', K.event, 'id', event)
return {1, spec}
