-- hold.lua: holds seats of one zone for a holder, all or nothing (HoldTable::hold).
-- KEYS: the event keys, then free:<zone>, seats:<zone>
--! ARGV prefix event holder token zone kind n ttl max_seats one_active log_limit key seats...
-- kind: seats|quantity|best_available; ttl: ms; max_seats: 0 = none; one_active: 0|1;
-- log_limit: the change log's bound (common_records.lua, arg_log);
-- key: the idempotency key, '' for none; then n seat ids for `seats`
-- Returns, for a new hold, "<expires_ms> <version>" (a bulk string: a table costs a reply
-- more to write, and both numbers are digits already) when it names its seats, else
-- {1, expires_ms, version, seats...} (one table); {1, zone, {seats}, expires_ms, status,
-- order, replayed, version} for a remembered one (this token, or this key; then its
-- token follows); or a refusal. version: the event's, which every hold that succeeds
-- raises by one (field ver, read by the HMGET and written by the HSET a new hold does
-- anyway; a remembered one is answered after one HINCRBY).
-- A hold of named seats runs 7 commands: TIME, one HMGET of the event hash (event, timers,
-- zone, an earlier try with this token, the holder's counters, the version, the zone's
-- paid and held counts), ZMSCORE and ZREM on the zone's free set, one HSET of the event
-- hash (the hold, the holder's counter, the zone's held count, the held seats' expiries,
-- the version), one ZADD of the deadline, and the change log's XADD (common_records.lua).
-- A hold of a quantity in a general-admission zone runs 7, or 6 when every place it gets
-- is new: the HMGET reads the zone's next place as well, ZRANGE finds the lowest released
-- places, ZREM takes them; no held seat expiry is kept.
local kind = ARGV[@kind]
if kind ~= 'seats' and kind ~= 'quantity' and kind ~= 'best_available' then
  malformed('hold kind (ARGV[@kind])')
end
local n = arg_int(@n, 'seat count', 1, MAX_PLACES)
local ttl = arg_int(@ttl, 'ttl', 1, MAX_MS)
local max_seats = arg_int(@max_seats, 'max seats per holder', 0, MAX_MS)
local one_active = arg_flag(@one_active, 'one active hold flag')
if kind == 'seats' then arg_count(@argc + n, 'hold of named seats') else arg_count(@argc, 'hold of a quantity') end
local K = arg_event(@prefix, @event)
arg_log(@log_limit, K)
local event = ARGV[@event]
-- The ids (holder, zone, idempotency key, seats) are checked as arg_id and arg_ids check
-- them, but all at once: their lengths one by one, their characters by one pattern search
-- over their concatenation (from ARGV[@key]: the key, '' for none, then the seats). Only a
-- call that fails is checked again one id at a time, in order, to name the first bad one.
local holder, zone, key = ARGV[@holder], ARGV[@zone], ARGV[@key]
local last = kind == 'seats' and @key + n or @key
local well_formed = #holder > 0 and #holder <= MAX_ID and #zone > 0 and #zone <= MAX_ID and #key <= MAX_ID
if well_formed then
  for i = @seats, last do
    local length = #ARGV[i]
    if length == 0 or length > MAX_ID then
      well_formed = false
      break
    end
  end
end
if not well_formed or not find(holder .. zone .. concat(ARGV, '', @key, last), ID_CHARS) then
  arg_id(@holder, 'holder id')
  arg_id(@zone, 'zone id')
  if key ~= '' then arg_id(@key, 'idempotency key') end
  if kind == 'seats' then arg_ids(@seats, last, 'seat id') end
end
local token = arg_token(@token, K)
local asked
if kind == 'seats' then
  if n <= 1000 then
    asked = {unpack(ARGV, @seats, @key + n)}
  else
    asked = {}
    for i = @seats, @key + n do asked[#asked + 1] = ARGV[i] end
  end
  -- Few seats: compared pairwise; many: through a set.
  local twice
  if n <= 8 then
    for i = 2, n do
      for j = 1, i - 1 do
        if asked[i] == asked[j] then twice = asked[i] end
      end
    end
  else
    local seen = {}
    for i = 1, n do
      if seen[asked[i]] then twice = asked[i] end
      seen[asked[i]] = true
    end
  end
  if twice then malformed('seat ' .. twice .. ' asked twice') end
end
local free_key, seats_key = K:free(zone), K:seats(zone)
check_keys(K, free_key, seats_key)

local now = now_ms()
local zone_field, hold_field, counts_field = 'z:' .. zone, 'h:' .. token, 'u:' .. holder
local paid_field = 'v:' .. holder
-- The zone's paid and held seats (p:, c:), for its counts in the change log.
local zone_paid_field, zone_held_field = 'p:' .. zone, 'c:' .. zone
local key_field = key ~= '' and 'k:' .. holder .. ':' .. key
-- A general-admission zone's first place never taken (n:<zone>), read only for a hold of a
-- quantity.
local next_field = kind ~= 'seats' and 'n:' .. zone
-- The event hash's fields a hold reads, then the idempotency key's (ev[10]) and the zone's
-- next place (ev[11]) when it needs either ('id' again in the place of the other); read
-- again after a sweep that ran timers (the second sweep finds none due).
local ev
repeat
  if key_field or next_field then
    ev = call('HMGET', K.event, 'id', 'due', zone_field, hold_field, counts_field, paid_field,
      'ver', zone_paid_field, zone_held_field, key_field or 'id', next_field or 'id')
  else
    ev = call('HMGET', K.event, 'id', 'due', zone_field, hold_field, counts_field, paid_field, 'ver',
      zone_paid_field, zone_held_field)
  end
  if not ev[1] then return refuse('unknown_event', 'no event ' .. event, {event}) end
until not sweep(K, now, ev[2])

if ev[4] then
  -- A retry of a hold whose reply was lost.
  local h = hold_of(ev[4])
  if h.holder ~= holder then return refuse('invalid_argument', 'hold token already used') end
  return hold_reply(h, false, raise_version(K))
end
if key ~= '' and ev[10] then
  -- The holder used this idempotency key before: that hold, as it stands.
  local text = call('HGET', K.event, 'h:' .. ev[10])
  if text then
    local h = hold_of(text)
    if not same_request(h, zone, asked, n) then
      return refuse('invalid_argument', 'idempotency key ' .. key ..
        ' was used for another request (hold ' .. ev[10] .. ')')
    end
    local reply = hold_reply(h, true, raise_version(K))
    reply[#reply + 1] = ev[10]
    return reply
  end
end

if not ev[3] then
  return refuse('unknown_zone', 'event ' .. event .. ' has no zone ' .. zone, {zone})
end
local held, paid, holds = counts_of(ev[5], ev[6])
local refused = check_limits(event, holder, held, paid, holds, n, max_seats, one_active)
if refused then return refused end
if held + n >= HOLD_UNIT then
  return refuse('limit_exceeded', 'holder ' .. holder .. ' would hold ' .. (held + n) ..
    ' seats in event ' .. event .. '; Redis counts fewer than ' .. HOLD_UNIT, {}, HOLD_UNIT - 1, held)
end

-- Which seats (ids) and slots (zone order) the request gets, as slot-seat pairs. The
-- event hash's new fields go to `set`, made with room for 8: a table grown one entry at a
-- time is rebuilt at 1, 2, 4 and 8 entries.
local seats, flat
-- The seats that leave the zone's free set: all of them, but for never-taken places.
local listed
local set = {nil, nil, nil, nil, nil, nil, nil, nil}
local general_admission = sub(ev[3], 1, 6) ~= 'named '
if kind == 'seats' then
  if general_admission then
    return refuse('invalid_argument', 'zone ' .. zone .. ' is general admission: ask for a quantity of places')
  end
  -- A named seat is in the free set, scored by its slot, exactly when it is neither held
  -- nor paid: one ZMSCORE answers for every seat; the seat index is read only to tell
  -- unknown seats from taken ones.
  local scores = chunked('ZMSCORE', free_key, asked)
  local unknown, taken, infos = {}, {}, nil
  flat = n <= 4 and {nil, nil, nil, nil, nil, nil, nil, nil} or {} -- room for 4 seats, as `set`
  for i = 1, n do
    local seat = asked[i]
    if scores[i] then
      flat[2 * i - 1] = scores[i]
      flat[2 * i] = seat
    else
      infos = infos or chunked('HMGET', seats_key, asked)
      if infos[i] then taken[#taken + 1] = seat else unknown[#unknown + 1] = seat end
    end
  end
  if #unknown > 0 then return unknown_seats(zone, unknown) end
  if #taken > 0 then
    return refuse('seat_taken', (#taken == 1 and 'seat ' or 'seats ') .. join(taken) .. ' of zone ' ..
      zone .. ' already taken', taken)
  end
  seats, listed = asked, asked
else
  local _, capacity, with_rows = zone_of(ev[3])
  if kind == 'quantity' and not general_admission then
    return refuse('invalid_argument', 'zone ' .. zone .. ' has named seats: name them or ask for best_available')
  end
  local slots, lowest, free, next_place
  seats, slots = {}, {}
  local listed_free = 0
  if general_admission then
    -- Released places (all below the next place) are listed in the free set, the places
    -- from the next one on are not: the n lowest listed, then as many never-taken places
    -- as there are left (capacity - next + 1). When fewer than n are listed, those are all
    -- of them, and the count is exact; with n listed it does not matter.
    lowest = call('ZRANGE', free_key, 0, n - 1, 'WITHSCORES')
    next_place = tonumber(ev[11])
    free = #lowest / 2 + capacity - next_place + 1
  else
    listed_free = call('ZCARD', free_key)
    free = listed_free
  end
  if free < n then
    return refuse('sold_out', 'zone ' .. zone .. ' has ' .. free .. ' free places, ' .. n .. ' asked', {}, -1, free)
  end
  if not general_admission then
    -- The first run of n free seats that follow each other in one row.
    local run, last_slot, last_row = {}, -2, nil
    local from = 0
    while #run < n and from < listed_free do
      local batch = call('ZRANGE', free_key, from, from + 499, 'WITHSCORES')
      from = from + 500
      local rows = {}
      if with_rows then
        local ids = {}
        for i = 1, #batch, 2 do ids[#ids + 1] = batch[i] end
        local infos = call('HMGET', seats_key, unpack(ids))
        for i, info in ipairs(infos) do rows[ids[i]] = match(info, '^%d+ (.*)$') end
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
      local first = call('ZRANGE', free_key, 0, n - 1, 'WITHSCORES')
      for i = 1, #first, 2 do run[#run + 1] = {first[i], tonumber(first[i + 1])} end
    end
    for _, pick in ipairs(run) do
      seats[#seats + 1] = pick[1]
      slots[#slots + 1] = pick[2]
    end
    listed = seats
  else
    -- Lowest free first: released places, then never-taken ones.
    listed = {}
    for i = 1, #lowest, 2 do
      seats[#seats + 1] = lowest[i]
      slots[#slots + 1] = lowest[i + 1]
      listed[#listed + 1] = lowest[i]
    end
    while #seats < n do
      seats[#seats + 1] = format('%d', next_place)
      slots[#slots + 1] = next_place
      next_place = next_place + 1
    end
    set[#set + 1] = 'n:' .. zone
    set[#set + 1] = digits(next_place)
  end
  flat = {}
  for i, seat in ipairs(seats) do
    flat[#flat + 1] = slots[i]
    flat[#flat + 1] = seat
  end
end

-- The zone's held seats, counted before any write when the event has no c:<zone> yet.
local zone_held = count_digits(held_before(K, zone, ev[9]) + n)
chunked('ZREM', free_key, listed)
local expires = now + ttl
local expires_at = digits(expires)
local blob = pack_pairs(flat)
set[#set + 1] = hold_field
set[#set + 1] = (key ~= '' and 'held=' .. key or 'held') .. ' ' .. holder .. ' ' .. zone .. ' ' ..
  digits(now) .. ' ' .. expires_at .. ' ' .. blob -- hold_text
if key ~= '' then
  set[#set + 1] = key_field
  set[#set + 1] = token
end
set[#set + 1] = counts_field
set[#set + 1] = count_digits(held + n + HOLD_UNIT * (holds + 1))
if not ev[2] or expires < ev[2] + 0 then
  set[#set + 1] = 'due'
  set[#set + 1] = expires_at
end
set[#set + 1] = zone_held_field
set[#set + 1] = zone_held
local version, version_at = next_version(K, ev[7])
set[#set + 1] = 'ver'
set[#set + 1] = version_at
-- The change log's entry (common_records.lua): the zone's counts, and the seats now held
-- with their expiry (kept in x:<zone>:<seat> as well); a general-admission zone's change
-- is its counts.
if not general_admission then held_fields(set, zone, flat, expires_at) end
chunked('HSET', K.event, set)
call('ZADD', K.deadlines, expires_at, token)
if general_admission then
  log_entry(K, version_at, zone, zone_held, ev[8] or '0', '0', '0', '')
else
  log_entry(K, version_at, zone, zone_held, ev[8] or '0', '1', expires_at, blob)
end
-- Named seats: the caller has them, the expiry and the version are all it is told.
if kind == 'seats' then return expires_at .. ' ' .. version_at end
-- Room for 6 seats.
local reply = {1, expires, version, nil, nil, nil, nil, nil, nil}
for i = 1, #seats do reply[i + 3] = seats[i] end
return reply
