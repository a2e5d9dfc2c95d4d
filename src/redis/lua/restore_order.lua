-- restore_order.lua: marks an order's seats paid again after the storage lost them
-- (HoldTable restore): the order, and its hold as confirmed, so that a retried confirm
-- finds it. Idempotent; works on a hidden event (under recovery) as on a shown one.
-- KEYS: the event keys, then free:<zone>, seats:<zone>
-- ARGV: prefix, event, order, holder, zone, hold token, paid_at_ms, n, then n seat ids
--       (place numbers in a general-admission zone)
-- Returns {1, order, holder, zone, {seats}, token, paid_at_ms, cancelled} or a refusal.
local K = arg_event(1)
arg_ids(3, 5, 'order id,holder id,zone id')
local event, order, holder, zone = ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local token = arg_token(6, K)
local paid_at = arg_int(7, 'paid at', 0, MAX_MS)
local n = arg_int(8, 'seat count', 1, MAX_PLACES)
arg_count(8 + n, 'restore_order')
arg_ids(9, 8 + n, 'seat id')
local asked = {}
for i = 9, 8 + n do asked[#asked + 1] = ARGV[i] end
local free_key, seats_key = K:free(zone), K:seats(zone)
check_keys(K, free_key, seats_key)

local now = now_ms()
local fields = {'spec', 'due', 'z:' .. zone, 'o:' .. order, 'h:' .. token}
local ev = call('HMGET', K.event, unpack(fields))
if not ev[1] then return refuse('unknown_event', 'no event ' .. event, {event}) end
if sweep(K, now, ev[2]) then ev = call('HMGET', K.event, unpack(fields)) end
if ev[4] then
  local o = order_of(ev[4])
  if o.token == token then return order_reply(order, o) end -- restored before, or never lost
  return refuse('order_conflict', 'order ' .. order .. ' already paid another hold')
end
if ev[5] then
  return refuse('order_conflict', 'hold ' .. token .. ' is in storage: it is not lost')
end
if not ev[3] then return refuse('unknown_zone', 'event ' .. event .. ' has no zone ' .. zone, {zone}) end

-- Which asked seats are free, and their slots (zone order; a place's number in GA).
local zone_kind, capacity = zone_of(ev[3])
local unknown, taken, flat, seen = {}, {}, {}, {}
local scores = chunked('ZMSCORE', free_key, asked)
local next_place, highest = 0, 0
if zone_kind == 'general_admission' then
  next_place = tonumber(call('HGET', K.event, 'n:' .. zone))
end
local infos
for i, seat in ipairs(asked) do
  local slot, state -- state: nil (free: slot), 'unknown' or 'taken'
  if zone_kind == 'general_admission' then
    local place = find(seat, '^[1-9]%d*$') and tonumber(seat)
    if not place or place > capacity then
      state = 'unknown'
    elseif place >= next_place then
      slot = place -- never taken yet
      highest = math.max(highest, place)
    elseif scores[i] then
      slot = place
    else
      state = 'taken'
    end
  elseif scores[i] then
    slot = tonumber(scores[i])
  else
    infos = infos or chunked('HMGET', seats_key, asked)
    state = infos[i] and 'taken' or 'unknown'
  end
  if slot and seen[seat] then state = 'taken' end -- asked twice
  if state == 'unknown' then
    unknown[#unknown + 1] = seat
  elseif state == 'taken' then
    taken[#taken + 1] = seat
  else
    seen[seat] = true
    flat[#flat + 1] = slot
    flat[#flat + 1] = seat
  end
end
if #unknown > 0 then return unknown_seats(zone, unknown) end
if #taken > 0 then
  return refuse('seat_taken', 'order ' .. order .. ' cannot be restored: ' .. join(taken) .. ' of zone ' ..
    zone .. ' held or paid by another', taken)
end

chunked('ZREM', free_key, asked)
if highest > 0 then
  -- Places from `next` to the highest restored one: those not restored become free ones
  -- listed in the free set, and `next` moves past them.
  local spare = {}
  for place = next_place, highest - 1 do
    if not seen[format('%d', place)] then
      spare[#spare + 1] = place
      spare[#spare + 1] = format('%d', place)
    end
  end
  chunked('ZADD', free_key, spare)
  call('HSET', K.event, 'n:' .. zone, highest + 1)
end
local paid = {}
for _, seat in ipairs(asked) do
  paid[#paid + 1] = zone .. ':' .. seat
  paid[#paid + 1] = order
end
chunked('HSET', K.paid, paid)
call('HINCRBY', K.event, 'p:' .. zone, n)
count_paid(K, 'v:' .. holder, n)
local h = {status = 'confirmed', order = order, key = '', holder = holder, zone = zone,
  created = paid_at, expires = paid_at, flat = flat}
local o = {holder = holder, zone = zone, token = token, paid_at = paid_at, cancelled = false, flat = flat}
call('HSET', K.event, 'h:' .. token, hold_text(h), 'o:' .. order, order_text(o))
return order_reply(order, o)
