-- hold.lua: holds seats of one zone for a holder, all or nothing (HoldTable::hold).
-- KEYS: the event keys, then hold:<token>, zone:<zone>, free:<zone>, seats:<zone>
-- ARGV: prefix, event, holder, token, zone, kind (seats|quantity|best_available),
--       n, ttl_ms, max_seats (0 = none), one_active (0|1), then n seat ids for `seats`
-- Returns {1, zone, {seats}, expires_ms} or a refusal.
local prefix, event = arg_prefix(1), arg_id(2, 'event')
local holder, token, zone = arg_id(3, 'holder'), arg_token(4, event), arg_id(5, 'zone')
local kind = ARGV[6]
if kind ~= 'seats' and kind ~= 'quantity' and kind ~= 'best_available' then
  malformed('hold kind (ARGV[6])')
end
local n = arg_int(7, 'seat count', 1, MAX_PLACES)
local ttl = arg_int(8, 'ttl', 1, MAX_MS)
local max_seats = arg_int(9, 'max seats per holder', 0, MAX_MS)
local one_active = arg_flag(10, 'one active hold flag')
local asked = {}
if kind == 'seats' then
  arg_count(10 + n, 'hold of named seats')
  local seen = {}
  for i = 11, 10 + n do
    local seat = arg_id(i, 'seat')
    if seen[seat] then malformed('seat ' .. seat .. ' asked twice') end
    seen[seat] = true
    asked[#asked + 1] = seat
  end
else
  arg_count(10, 'hold of a quantity')
end
local K = event_keys(prefix, event)
local hold_key, zone_key = K:hold(token), K:zone(zone)
local free_key, seats_key = K:free(zone), K:seats(zone)
check_keys(K, {hold_key, zone_key, free_key, seats_key})

local now = now_ms()
-- Zones exist exactly as long as their event: only a missing zone needs the event checked.
-- Read before the sweep, which changes none of these fields.
local z = redis.call('HMGET', zone_key, 'kind', 'capacity', 'next', 'rows')
if not z[1] and redis.call('EXISTS', K.event) == 0 then
  return refuse('unknown_event', 'no event ' .. event, {event})
end
sweep(K, now)

local previous = redis.call('HMGET', hold_key, 'holder', 'status', 'zone', 'seats', 'expires')
if previous[1] then
  -- A retry of a hold whose reply was lost.
  if previous[1] ~= holder or previous[2] ~= 'held' then
    return refuse('invalid_argument', 'hold token already used')
  end
  return {1, previous[3], split(previous[4]), tonumber(previous[5])}
end

if not z[1] then
  return refuse('unknown_zone', 'event ' .. event .. ' has no zone ' .. zone, {zone})
end
local general_admission = z[1] == 'general_admission'

local refused, counts = check_limits(K, event, holder, n, max_seats, one_active)
if refused then return refused end

-- Which seats (ids) and slots (zone order) the request gets.
local seats, slots = {}, {}
if kind == 'seats' then
  if general_admission then
    return refuse('invalid_argument', 'zone ' .. zone .. ' is general admission: ask for a quantity of places')
  end
  -- A named seat is in the free set, scored by its slot, exactly when it is neither held
  -- nor paid: one ZMSCORE answers for every seat; the seat index is read only to tell
  -- unknown seats from taken ones.
  local scores = chunked('ZMSCORE', free_key, asked)
  local unknown, taken, infos = {}, {}, nil
  for i, seat in ipairs(asked) do
    if scores[i] then
      seats[#seats + 1] = seat
      slots[#slots + 1] = tonumber(scores[i])
    else
      infos = infos or chunked('HMGET', seats_key, asked)
      if infos[i] then taken[#taken + 1] = seat else unknown[#unknown + 1] = seat end
    end
  end
  if #unknown > 0 then
    return refuse('unknown_seat', 'zone ' .. zone .. ' has no seat ' .. join(unknown), unknown)
  end
  if #taken > 0 then
    return refuse('seat_taken', (#taken == 1 and 'seat ' or 'seats ') .. join(taken) .. ' of zone ' ..
      zone .. ' already taken', taken)
  end
else
  if kind == 'quantity' and not general_admission then
    return refuse('invalid_argument', 'zone ' .. zone .. ' has named seats: name them or ask for best_available')
  end
  local listed_free = redis.call('ZCARD', free_key)
  local free = listed_free
  if general_admission then free = free + tonumber(z[2]) - tonumber(z[3]) + 1 end
  if free < n then
    return refuse('sold_out', 'zone ' .. zone .. ' has ' .. free .. ' free places, ' .. n .. ' asked', {}, -1, free)
  end
  if not general_admission then
    -- The first run of n free seats that follow each other in one row.
    local with_rows = z[4] == '1'
    local run, last_slot, last_row = {}, -2, nil
    local from = 0
    while #run < n and from < listed_free do
      local batch = redis.call('ZRANGE', free_key, from, from + 499, 'WITHSCORES')
      from = from + 500
      local rows = {}
      if with_rows then
        local ids = {}
        for i = 1, #batch, 2 do ids[#ids + 1] = batch[i] end
        local infos = redis.call('HMGET', seats_key, unpack(ids))
        for i, info in ipairs(infos) do rows[ids[i]] = string.match(info, '^%d+ (.*)$') end
      end
      for i = 1, #batch, 2 do
        local seat, slot = batch[i], tonumber(batch[i + 1])
        local row = rows[seat] or ''
        if not (#run > 0 and slot == last_slot + 1 and row == last_row) then run = {} end
        run[#run + 1] = {seat, slot}
        last_slot, last_row = slot, row
        if #run == n then break end
      end
    end
    if #run < n then
      -- No run: the n lowest free seats.
      run = {}
      local lowest = redis.call('ZRANGE', free_key, 0, n - 1, 'WITHSCORES')
      for i = 1, #lowest, 2 do run[#run + 1] = {lowest[i], tonumber(lowest[i + 1])} end
    end
    for _, pick in ipairs(run) do
      seats[#seats + 1] = pick[1]
      slots[#slots + 1] = pick[2]
    end
  else
    -- Lowest free first: released places (all below `next`), then never-taken ones.
    local lowest = redis.call('ZRANGE', free_key, 0, n - 1, 'WITHSCORES')
    for i = 1, #lowest, 2 do
      seats[#seats + 1] = lowest[i]
      slots[#slots + 1] = tonumber(lowest[i + 1])
    end
    local next_place = tonumber(z[3])
    while #seats < n do
      seats[#seats + 1] = tostring(next_place)
      slots[#slots + 1] = next_place
      next_place = next_place + 1
    end
    redis.call('HSET', zone_key, 'next', next_place)
  end
end

chunked('ZREM', free_key, seats)
mark_seats(K.held, zone, seats, token)
redis.call('HINCRBY', zone_key, 'held', n)
counts_add(K, holder, {held = n, holds = 1}, counts)
local expires = now + ttl
redis.call('HSET', hold_key, 'holder', holder, 'zone', zone, 'seats', table.concat(seats, ' '),
  'slots', table.concat(slots, ' '), 'created', now, 'expires', expires, 'status', 'held')
redis.call('ZADD', K.deadlines, expires, token)
return {1, zone, seats, expires}
