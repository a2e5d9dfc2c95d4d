-- version.lua: the event's version (HoldTable::version), after the sweep every call runs:
-- a hold due to expire raises it first, as it would for any other call.
-- KEYS: the event keys
--! ARGV prefix event log_limit
-- Returns {1, version} or unknown_event (as well for an event hidden by begin_recovery).
-- Runs 2 commands (TIME, HMGET of the event hash) while no timer is due.
arg_count(@argc, 'version')
local K = arg_event(@prefix, @event)
arg_log(@log_limit, K)
local event = ARGV[@event]
check_keys(K)

local now = now_ms()
local ev = call('HMGET', K.event, 'id', 'due', 'ver')
if not ev[1] then return refuse('unknown_event', 'no event ' .. event, {event}) end
if sweep(K, now, ev[2]) then ev = call('HMGET', K.event, 'id', 'due', 'ver') end
return {1, ev[3] and ev[3] + 0 or 0}
