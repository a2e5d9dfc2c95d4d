-- lock_fence.lua: raises a group's fencing counter to at least a given value (never
-- lowers it): after the server lost its data, fencing tokens go on from what the
-- application's records hold.
-- KEYS: fence:{group}
--! ARGV at_least
-- Returns {1, counter}.
arg_count(@argc, 'lock_fence')
if #KEYS ~= 1 or not find(KEYS[1], ':fence:{[^{}]*}$') then malformed('KEYS[1] is not a fence key') end
local at_least = arg_int(@at_least, 'fencing token', 0, MAX_MS)
local current = tonumber(call('GET', KEYS[1]) or '0')
if current >= at_least then return {1, current} end
call('SET', KEYS[1], at_least)
return {1, at_least}
