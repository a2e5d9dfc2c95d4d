-- seats.lua: the state of every zone of an event, or of one zone (HoldTable::states).
-- KEYS: the event keys
-- ARGV: prefix, event, zone ('' for every zone)
-- Returns {1, {{zone, kind, capacity, free, held, paid, {id, row, state, ...}}, ...}}
-- where state is 0 free, 1 held, 2 paid (named zones list every seat in zone order).
arg_count(3, 'seats')
local prefix, event = arg_prefix(1), arg_id(2, 'event')
local only = ARGV[3]
if only ~= '' then only = arg_id(3, 'zone') end
local K = event_keys(prefix, event)
check_keys(K)

local now = now_ms()
local spec = redis.call('HGET', K.event, 'spec')
if not spec then
  return refuse('unknown_event', 'no event ' .. event, {event})
end
sweep(K, now)

-- The stored spec: {name, {{id, kind, capacity, {seat ids}, {rows}}, ...}}.
local zones = cjson.decode(spec)[2]
if only ~= '' then
  local found = false
  for _, zs in ipairs(zones) do found = found or zs[1] == only end
  if not found then
    return refuse('unknown_zone', 'event ' .. event .. ' has no zone ' .. only, {only})
  end
end

local out = {}
for _, zs in ipairs(zones) do
  local id, kind = zs[1], zs[2]
  if only == '' or only == id then
    -- Derived keys of each zone (same {event} slot).
    local z = redis.call('HMGET', K:zone(id), 'capacity', 'next', 'held', 'paid')
    local capacity, held, paid = tonumber(z[1]), tonumber(z[3]), tonumber(z[4])
    local free = redis.call('ZCARD', K:free(id))
    if kind == 'general_admission' then free = free + capacity - tonumber(z[2]) + 1 end
    local listed = {}
    if kind == 'named' then
      local ids, rows = zs[4], zs[5]
      for from = 1, #ids, 500 do
        local to = math.min(from + 499, #ids)
        local fields = {}
        for i = from, to do fields[#fields + 1] = id .. ':' .. ids[i] end
        local in_held = redis.call('HMGET', K.held, unpack(fields))
        local in_paid = redis.call('HMGET', K.paid, unpack(fields))
        for i = from, to do
          local state = 0
          if in_paid[i - from + 1] then state = 2 elseif in_held[i - from + 1] then state = 1 end
          listed[#listed + 1] = ids[i]
          listed[#listed + 1] = rows[i]
          listed[#listed + 1] = state
        end
      end
    end
    out[#out + 1] = {id, kind, capacity, free, held, paid, listed}
  end
end
return {1, out}
