-- seats.lua: the state of every zone of an event, or of one zone (HoldTable::states).
-- KEYS: the event keys
--! ARGV prefix event zone
-- zone: '' for every zone
-- Returns {1, {{zone, kind, capacity, free, held, paid, {id, row, state, ...}}, ...}, version}
-- where state is 0 free, 1 held, 2 paid (named zones list every seat in zone order).
-- A seat is free while in its zone's free set, paid while in the paid hash, held otherwise.
arg_count(@argc, 'seats')
local K = arg_event(@prefix, @event)
local event = ARGV[@event]
local only = ARGV[@zone]
if only ~= '' then arg_ids(@zone, @zone, 'zone id') end
check_keys(K)

local now = now_ms()
-- A hidden event (under recovery: no `id` field yet) is not read: its map would show
-- seats of orders not yet restored as free.
local ev = call('HMGET', K.event, 'spec', 'due', 'id')
if not ev[1] or not ev[3] then
  return refuse('unknown_event', 'no event ' .. event, {event})
end
sweep(K, now, ev[2])

-- The stored spec: {name, {{id, kind, capacity, {seat ids}, {rows}}, ...}}.
local zones = cjson.decode(ev[1])[2]
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
    local zf = call('HMGET', K.event, 'z:' .. id, 'p:' .. id, 'n:' .. id)
    local _, capacity = zone_of(zf[1])
    local paid = tonumber(zf[2] or '0')
    local free_key = K:free(id) -- derived: each zone's free set (same {event} slot)
    local free = call('ZCARD', free_key)
    if kind == 'general_admission' then free = free + capacity - tonumber(zf[3]) + 1 end
    local listed = {}
    if kind == 'named' then
      local ids, rows = zs[4], zs[5]
      for from = 1, #ids, 500 do
        local to = math.min(from + 499, #ids)
        local part, fields = {}, {}
        for i = from, to do
          part[#part + 1] = ids[i]
          fields[#fields + 1] = id .. ':' .. ids[i]
        end
        local in_free = call('ZMSCORE', free_key, unpack(part))
        local in_paid = call('HMGET', K.paid, unpack(fields))
        for i = from, to do
          local state = 1
          if in_free[i - from + 1] then state = 0 elseif in_paid[i - from + 1] then state = 2 end
          listed[#listed + 1] = ids[i]
          listed[#listed + 1] = rows[i]
          listed[#listed + 1] = state
        end
      end
    end
    out[#out + 1] = {id, kind, capacity, free, capacity - free - paid, paid, listed}
  end
end
local ver = call('HGET', K.event, 'ver')
return {1, out, ver and ver + 0 or 0}
