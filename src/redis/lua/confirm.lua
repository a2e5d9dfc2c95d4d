-- confirm.lua: held -> paid, for good (HoldTable::confirm). Idempotent per (token, order).
-- With `late`, an expired hold is paid anyway when every one of its seats is still free.
-- KEYS: the event keys
--! ARGV prefix event token order late max_seats log_limit
-- late: 0|1; max_seats: 0 = none
-- Returns {1, order, holder, zone, {seats}, token, paid_at_ms, cancelled, version} or a
-- refusal; version: the event's, which every confirm that succeeds raises by one.
-- A confirm of an active hold runs 8 commands: TIME, HMGET of the event hash, HMGET of the
-- counters, the version and the zone's record and counts, ZREM of the deadline, HSET of
-- the paid seats, HSET of the event hash (the hold, the order, the counters, the zone's
-- counts, the version), HDEL of the seats' expiries (and of the holder's held count once
-- it is back at 0), and the change log's XADD (common_records.lua). A retry (the order
-- exists) runs TIME, HMGET and an HINCRBY of the version.
arg_count(@argc, 'confirm')
local K = arg_event(@prefix, @event)
arg_log(@log_limit, K)
local event, order = ARGV[@event], ARGV[@order]
local token = arg_token(@token, K)
-- The token is an id as well: no longer than one.
if #token > MAX_ID then malformed('hold token (ARGV[@token])') end
arg_id(@order, 'order id')
local late = arg_flag(@late, 'late flag')
local max_seats = arg_int(@max_seats, 'max seats per holder', 0, MAX_MS)
check_keys(K)

local now = now_ms()
local hold_field, order_field = 'h:' .. token, 'o:' .. order
local ev = call('HMGET', K.event, 'id', 'due', hold_field, order_field)
if not ev[1] then return refuse('unknown_event', 'no event ' .. event, {event}) end
if sweep(K, now, ev[2]) then ev = call('HMGET', K.event, 'id', 'due', hold_field, order_field) end

if ev[4] then
  local o = order_of(ev[4])
  if o.token == token then return order_reply(order, o, raise_version(K)) end -- a retry
  return refuse('order_conflict', 'order ' .. order .. ' already paid another hold')
end
if not ev[3] then return missing_hold(K, token, now) end
local text = ev[3]
local status, rest, holder, zone, pairs_at = hold_head(text)
if sub(status, 1, 2) == 'c:' then
  return refuse('order_conflict', 'hold ' .. token .. ' was already confirmed as order ' .. sub(status, 3))
end
if status == 'released' or (status == 'expired' and not late) then return inactive(token, hold_of(text)) end

local blob = sub(text, pairs_at)
local flat = unpack_pairs(blob)
local seats = seats_of(flat)
local n = #seats
-- The holder's counters (u: held seats and active holds, v: paid seats), the zone's paid
-- and held counts, the event's version and the zone's record, read once and written with
-- the records (counts_of, count_holds; the zone's counts for the change log).
local counts_field, paid_field, zone_paid_field = 'u:' .. holder, 'v:' .. holder, 'p:' .. zone
local zone_held_field = 'c:' .. zone
local counts = call('HMGET', K.event, counts_field, paid_field, zone_paid_field, 'ver', zone_held_field,
  'z:' .. zone)
local zone_held = held_before(K, zone, counts[5])
local set, gone = {}, {} -- HSET's and HDEL's arguments
local named = sub(counts[6], 1, 6) == 'named '
if status == 'expired' then
  -- confirm_late: the same seats, if every one is still free (in its zone's free set:
  -- the places of a general-admission hold all lie below the zone's `next`).
  local free_key = K:free(zone) -- derived: the hold's zone
  local scores = chunked('ZMSCORE', free_key, seats)
  local taken = {}
  for i, seat in ipairs(seats) do
    if not scores[i] then taken[#taken + 1] = seat end
  end
  if #taken > 0 then
    return refuse('seat_taken', 'hold ' .. token .. ' expired and seats ' .. join(taken) ..
      ' were taken since', taken)
  end
  local held, paid, holds = counts_of(counts[1], counts[2])
  local refused = check_limits(event, holder, held, paid, holds, n, max_seats, false)
  if refused then return refused end
  chunked('ZREM', free_key, seats)
else
  -- An active hold's seats move from held to paid.
  call('ZREM', K.deadlines, token)
  if named then held_fields(gone, zone, flat) end
  put_count(set, gone, counts_field, (counts[1] and counts[1] + 0 or 0) - n - HOLD_UNIT)
  zone_held = zone_held - n
  set[#set + 1] = zone_held_field
  set[#set + 1] = count_digits(zone_held)
end
local fields = {}
for i = 1, n do
  fields[2 * i - 1] = zone .. ':' .. seats[i]
  fields[2 * i] = order
end
chunked('HSET', K.paid, fields)
-- The hold record is kept as long as its order, so confirm stays idempotent: the same
-- record with status c:<order>; the order's record (order_text) keeps the hold's seats
-- as they are stored.
set[#set + 1] = hold_field
set[#set + 1] = 'c:' .. order .. sub(text, rest)
set[#set + 1] = order_field
set[#set + 1] = holder .. ' ' .. zone .. ' ' .. token .. ' ' .. digits(now) .. ' 0 ' .. blob
put_count(set, gone, paid_field, (counts[2] and counts[2] + 0 or 0) + n)
local zone_paid = digits((counts[3] and counts[3] + 0 or 0) + n)
set[#set + 1] = zone_paid_field
set[#set + 1] = zone_paid
local version, version_at = next_version(K, counts[4])
set[#set + 1] = 'ver'
set[#set + 1] = version_at
chunked('HSET', K.event, set)
chunked('HDEL', K.event, gone)
-- The change log's entry (common_records.lua): the zone's counts, then the seats now paid
-- (a general-admission zone: its counts).
log_entry(K, version_at, zone, count_digits(zone_held), zone_paid, '2', '0', named and blob or '')
return {1, order, holder, zone, seats, token, now, 0, version} -- order_reply
