-- restore_order.lua: marks an order's seats paid again after the storage lost them or went
-- back to older data (HoldTable restore): the order, and its hold as confirmed, so that a
-- retried confirm finds it. Idempotent; works on a hidden event (under recovery) as on a
-- shown one. A seat paid by another order is refused (seat_taken). On a shown event the
-- holds and cancellations are live and never undone: a seat held is refused too, and so
-- is a record of the order's hold token (order_conflict: it is not lost). On a hidden one,
-- whose storage may have gone back to older data, the paid order wins over what it holds
-- of later steps:
-- * the order cancelled in storage (the application's records say paid) is paid again,
--   when it has the same zone and seats (else order_conflict);
-- * a record of its hold token that is not confirmed (held, expired or released: the
--   storage went back to before the payment) is replaced: an active one ends first (its
--   seats free, its holder's counters down), then the record goes, with its idempotency
--   key, its timers and its pending expiry report;
-- * a seat held by another active hold is taken: that hold ends as if it expired now (all
--   its seats free, its holder's counters down, its expiry reported by expired()).
-- Redis keeps no index from a held seat to its hold: when some asked seat is held, the
-- active holds are found among the members of the timers' sorted set and their records
-- (recovery is rare: O(active holds)).
-- KEYS: the event keys, then free:<zone>, seats:<zone>
--! ARGV prefix event order holder zone token paid_at log_limit n seats...
-- token: the hold token it paid; paid_at: ms; then n seat ids
--       (place numbers in a general-admission zone)
-- Returns {1, order, holder, zone, {seats}, token, paid_at_ms, cancelled, version} or a
-- refusal; version: the event's, raised by one (field ver, written with the order).
local K = arg_event(@prefix, @event)
arg_log(@log_limit, K)
arg_ids(@order, @zone, 'order id,holder id,zone id')
local event, order, holder, zone = ARGV[@event], ARGV[@order], ARGV[@holder], ARGV[@zone]
local token = arg_token(@token, K)
local paid_at = arg_int(@paid_at, 'paid at', 0, MAX_MS)
local n = arg_int(@n, 'seat count', 1, MAX_PLACES)
arg_count(@argc + n, 'restore_order')
arg_ids(@seats, @argc + n, 'seat id')
local asked = {}
for i = @seats, @argc + n do asked[#asked + 1] = ARGV[i] end
local free_key, seats_key = K:free(zone), K:seats(zone)
check_keys(K, free_key, seats_key)

local now = now_ms()
local fields = {'spec', 'due', 'z:' .. zone, 'o:' .. order, 'h:' .. token, 'ver', 'id'}
local ev = call('HMGET', K.event, unpack(fields))
if not ev[1] then return refuse('unknown_event', 'no event ' .. event, {event}) end
if sweep(K, now, ev[2]) then ev = call('HMGET', K.event, unpack(fields)) end
-- Hidden: under recovery, maybe after the storage went back to older data.
local repairing = not ev[7]
-- The order, when the storage has it cancelled while it is being repaired: paid again.
local reopened
if ev[4] then
  local o = order_of(ev[4])
  if o.token ~= token then
    return refuse('order_conflict', 'order ' .. order .. ' already paid another hold')
  end
  -- Restored before, or never lost.
  if not o.cancelled or not repairing then return order_reply(order, o, raise_version(K)) end
  local had, wanted = seats_of(o.flat), {}
  for i = 1, n do wanted[i] = asked[i] end
  table.sort(had)
  table.sort(wanted)
  local same = o.zone == zone and #had == #wanted
  for i = 1, #had do same = same and had[i] == wanted[i] end
  if not same then return refuse('order_conflict', 'order ' .. order .. ' has other seats in storage') end
  reopened = o
end
if ev[5] and not reopened and not repairing then
  return refuse('order_conflict', 'hold ' .. token .. ' is in storage: it is not lost')
end
-- The record of the order's hold the storage went back to, replaced by the order.
local replaced = not reopened and ev[5] and hold_of(ev[5])
if replaced and replaced.status == 'confirmed' then
  return refuse('order_conflict', 'hold ' .. token .. ' was confirmed as another order')
end
if not ev[3] then return refuse('unknown_zone', 'event ' .. event .. ' has no zone ' .. zone, {zone}) end

-- Each asked seat's state: 'unknown', 'taken' (paid by another order, or asked twice),
-- 'held' (by an active hold, which ends) or free; and its slot (zone order; a place's
-- number in GA).
local zone_kind, capacity = zone_of(ev[3])
local general_admission = zone_kind == 'general_admission'
local states, slots, seen = {}, {}, {}
local scores = chunked('ZMSCORE', free_key, asked)
local next_place, highest = 0, 0
if general_admission then
  next_place = tonumber(call('HGET', K.event, 'n:' .. zone))
end
-- Seats neither free nor unknown: held or paid (the paid hash tells).
local occupied, occupied_fields = {}, {}
local infos
for i, seat in ipairs(asked) do
  local slot, state
  if general_admission then
    local place = find(seat, '^[1-9]%d*$') and tonumber(seat)
    if not place or place > capacity then
      state = 'unknown'
    else
      slot = place
      if place >= next_place then
        highest = math.max(highest, place) -- never taken yet
      elseif not scores[i] then
        state = 'occupied'
      end
    end
  elseif scores[i] then
    slot = tonumber(scores[i])
  else
    infos = infos or chunked('HMGET', seats_key, asked)
    if infos[i] then
      slot, state = tonumber(match(infos[i], '^%d+')), 'occupied'
    else
      state = 'unknown'
    end
  end
  if slot and seen[seat] then state = 'taken' end -- asked twice
  if slot then seen[seat] = true end
  if state == 'occupied' then
    occupied[#occupied + 1] = i
    occupied_fields[#occupied_fields + 1] = zone .. ':' .. seat
  end
  states[i], slots[i] = state, slot
end
local held_seats, any_held = {}, false
if #occupied > 0 then
  -- Held or paid: which, matters only while repairing.
  local owners = repairing and chunked('HMGET', K.paid, occupied_fields) or {}
  for j, i in ipairs(occupied) do
    if owners[j] or not repairing then
      states[i] = 'taken'
    else
      states[i] = 'held'
      held_seats[asked[i]], any_held = true, true
    end
  end
end
local unknown, taken, flat = {}, {}, {}
for i, seat in ipairs(asked) do
  local state = states[i]
  if state == 'unknown' then
    unknown[#unknown + 1] = seat
  elseif state == 'taken' then
    taken[#taken + 1] = seat
  else
    flat[#flat + 1] = slots[i]
    flat[#flat + 1] = seat
  end
end
if #unknown > 0 then return unknown_seats(zone, unknown) end
if #taken > 0 then
  return refuse('seat_taken', 'order ' .. order .. ' cannot be restored: ' .. join(taken) .. ' of zone ' ..
    zone .. ' held or paid by another', taken)
end

-- The active holds of the held seats (but the replaced one, which goes altogether), in
-- the order of their deadlines.
local ending, ending_tokens = {}, {}
if any_held then
  local tokens, hold_fields = {}, {}
  for _, member in ipairs(call('ZRANGE', K.deadlines, 0, -1)) do
    if sub(member, 1, 2) ~= 'f:' and member ~= token then
      tokens[#tokens + 1] = member
      hold_fields[#hold_fields + 1] = 'h:' .. member
    end
  end
  local records = chunked('HMGET', K.event, hold_fields)
  for j = 1, #tokens do
    local text = records[j]
    if text then
      local status, _, _, hold_zone = hold_head(text)
      if status == 'held' and hold_zone == zone then
        local h = hold_of(text)
        for k = 2, #h.flat, 2 do
          if held_seats[h.flat[k]] then
            ending[#ending + 1] = h
            ending_tokens[#ending_tokens + 1] = tokens[j]
            break
          end
        end
      end
    end
  end
end

-- Checked: the writes, noted in the step's change log.
local L = new_log()
local timers = {}
for j, h in ipairs(ending) do
  end_hold(K, ending_tokens[j], h, now, L)
  timers[#timers + 1] = ending_tokens[j]
end
if replaced then
  if replaced.status == 'held' then
    free_hold_seats(K, replaced, L) -- derived keys: the hold's zone
  end
  -- Its record is overwritten below; its key, timers and expiry report go.
  if replaced.key ~= '' then call('HDEL', K.event, 'k:' .. replaced.holder .. ':' .. replaced.key) end
  timers[#timers + 1] = token
  timers[#timers + 1] = 'f:' .. token
  call('ZREM', K.expired, token)
end
chunked('ZREM', K.deadlines, timers)

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
for _, seat in ipairs(asked) do touch(L, zone, general_admission and '' or seat, 2) end
if reopened then
  count_paid(K, 'v:' .. reopened.holder, n)
  reopened.cancelled = false
  local version, version_at = next_version(K, ev[6])
  call('HSET', K.event, 'o:' .. order, order_text(reopened), 'ver', version_at)
  write_log(K, L, version)
  return order_reply(order, reopened, version)
end
count_paid(K, 'v:' .. holder, n)
local h = {status = 'confirmed', order = order, key = '', holder = holder, zone = zone,
  created = paid_at, expires = paid_at, flat = flat}
local o = {holder = holder, zone = zone, token = token, paid_at = paid_at, cancelled = false, flat = flat}
local version, version_at = next_version(K, ev[6])
call('HSET', K.event, 'h:' .. token, hold_text(h), 'o:' .. order, order_text(o), 'ver', version_at)
write_log(K, L, version)
return order_reply(order, o, version)
