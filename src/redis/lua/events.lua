-- events.lua: every event of the index, decoded for the client.
-- KEYS: events (hash event id -> canonical spec written by event_create.lua)
--! ARGV prefix
-- Returns {1, {{id, name, {{zone, kind, capacity, {seat ids}, {rows}}, ...}}, ...}}
arg_count(@argc, 'events')
local prefix = arg_prefix(@prefix)
if #KEYS ~= 1 or KEYS[1] ~= prefix .. ':events' then malformed('KEYS[1] should be ' .. prefix .. ':events') end
local all = call('HGETALL', KEYS[1])
local out = {}
for i = 1, #all, 2 do
  local spec = cjson.decode(all[i + 1])
  out[#out + 1] = {all[i], spec[1], spec[2]}
end
return {1, out}
