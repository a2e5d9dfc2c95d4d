-- event_create.lua: stores an event's inventory (HoldTable::create_event). The same spec
-- again succeeds; another spec under the same id is refused. With a last argument
-- 'hidden' (HoldTable::begin_recovery) a new event is stored without its `id` field:
-- every call on it answers unknown_event until event_show.lua writes it. With
-- 'hide_existing' instead, an existing event (of the same spec) is hidden too, as it
-- stands, and its version raised by one (a rollback detected: Recovery::rolled_back).
-- A new event's version is 0 (no field ver); its history (field h) is `history`, which
-- the caller draws.
-- KEYS: event:{e}, then for each zone: free:<zone>, seats:<zone>
--! ARGV prefix event history name zone_count zones...
-- then from @zones, for each zone:
--       id, kind (named|general_admission), n (seats or capacity),
--       and for named zones n pairs of seat id, row ('' when the zone has no rows),
--       then optionally 'hidden' or 'hide_existing'
-- Returns {1, spec_json, created (0|1), shown (0|1), rolled_back (0|1)}: the canonical
-- spec, for the events index, whether this call stored the event, whether it is shown,
-- and whether this call hid an existing event.
local K = arg_event(@prefix, @event)
local event = ARGV[@event]
local history = arg_history(@history)
local name = ARGV[@name]
if type(name) ~= 'string' or #name > 256 then malformed('event name (ARGV[@name])') end
local zone_count = arg_int(@zone_count, 'zone count', 1, 10000)

-- Every argument is read and checked before anything is written.
local zones, expected_keys, seen_zones = {}, {K.event}, {}
local i = @zones
for _ = 1, zone_count do
  arg_ids(i, i, 'zone id')
  local id = ARGV[i]
  if seen_zones[id] then malformed('zone ' .. id .. ' defined twice') end
  seen_zones[id] = true
  local kind = ARGV[i + 1]
  local n = arg_int(i + 2, 'seat count or capacity', 1, MAX_PLACES)
  i = i + 3
  local zone = {id, kind, 0, {}, {}}
  if kind == 'general_admission' then
    zone[3] = n
  elseif kind == 'named' then
    local ids, rows, seen = zone[4], zone[5], {}
    for _ = 1, n do
      arg_ids(i, i, 'seat id')
      local seat, row = ARGV[i], ARGV[i + 1]
      if row ~= '' then arg_ids(i + 1, i + 1, 'row id') end
      if seen[seat] then malformed('seat ' .. seat .. ' defined twice in zone ' .. id) end
      seen[seat] = true
      ids[#ids + 1] = seat
      rows[#rows + 1] = row
      i = i + 2
    end
  else
    malformed('zone kind (ARGV[' .. (i - 2) .. '])')
  end
  zones[#zones + 1] = zone
  expected_keys[#expected_keys + 1] = K:free(id)
  expected_keys[#expected_keys + 1] = K:seats(id)
end
local hide_existing = #ARGV == i and ARGV[i] == 'hide_existing'
local hidden = hide_existing or (#ARGV == i and ARGV[i] == 'hidden')
if #ARGV ~= i - 1 and not hidden then malformed('expected ' .. (i - 1) .. ' ARGV, got ' .. #ARGV) end
if #KEYS ~= #expected_keys then malformed('expected ' .. #expected_keys .. ' KEYS, got ' .. #KEYS) end
for k, key in ipairs(expected_keys) do
  if KEYS[k] ~= key then malformed('KEYS[' .. k .. '] should be ' .. key) end
end

-- Arrays only: cjson writes them in a fixed order, so equal specs encode equally.
local spec = cjson.encode({name, zones})
local existing = call('HMGET', K.event, 'spec', 'id')
if existing[1] then
  if existing[1] ~= spec then
    return refuse('event_exists', 'event ' .. event .. ' already exists with another inventory')
  end
  if not hide_existing then return {1, spec, 0, existing[2] and 1 or 0, 0} end
  -- Hidden as it stands (again, when hidden already: each call is one step).
  call('HDEL', K.event, 'id')
  raise_version(K)
  return {1, spec, 0, 0, 1}
end

-- Each zone's record is a field of the event hash (common.lua); the seat index and the
-- free set are keys of their own.
local fields = {'spec', spec, 'h', history}
if not hidden then
  fields[5] = 'id'
  fields[6] = event
end
for _, zone in ipairs(zones) do
  local id, kind = zone[1], zone[2]
  fields[#fields + 1] = 'z:' .. id
  if kind == 'general_admission' then
    -- Places are numbered 1..capacity; those from `next` on were never taken, so the
    -- free set only holds released places and stays small.
    fields[#fields + 1] = kind .. ' ' .. zone[3] .. ' 0'
    fields[#fields + 1] = 'n:' .. id
    fields[#fields + 1] = 1
  else
    local ids, rows = zone[4], zone[5]
    local with_rows = '0'
    local index, free = {}, {}
    for s, seat in ipairs(ids) do
      if rows[s] ~= '' then with_rows = '1' end
      index[#index + 1] = seat
      index[#index + 1] = (s - 1) .. ' ' .. rows[s]
      free[#free + 1] = s - 1
      free[#free + 1] = seat
    end
    fields[#fields + 1] = kind .. ' ' .. #ids .. ' ' .. with_rows
    chunked('HSET', K:seats(id), index)
    chunked('ZADD', K:free(id), free)
  end
end
chunked('HSET', K.event, fields)
return {1, spec, 1, hidden and 0 or 1, 0}
