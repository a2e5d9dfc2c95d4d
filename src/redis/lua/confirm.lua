-- confirm.lua: held -> paid, for good (HoldTable::confirm). Idempotent per (token, order).
-- With `late`, an expired hold is paid anyway when every one of its seats is still free.
-- KEYS: the event keys
-- ARGV: prefix, event, token, order, late (0|1), max_seats (0 = none)
-- Returns {1, order, holder, zone, {seats}, token, paid_at_ms, cancelled} or a refusal.
arg_count(6, 'confirm')
local prefix = arg_prefix(1)
arg_ids(2, 4, 'event id,hold token,order id')
local event, order = ARGV[2], ARGV[4]
local token = arg_token(3, event)
local late = arg_flag(5, 'late flag')
local max_seats = arg_int(6, 'max seats per holder', 0, MAX_MS)
local K = event_keys(prefix, event)
check_keys(K)

local now = now_ms()
local hold_field, order_field = 'h:' .. token, 'o:' .. order
local ev = redis.call('HMGET', K.event, 'id', 'due', hold_field, order_field)
if not ev[1] then return refuse('unknown_hold', 'no hold ' .. token .. ' (unknown event)') end
if sweep(K, now, ev[2]) then ev = redis.call('HMGET', K.event, 'id', 'due', hold_field, order_field) end

if ev[4] then
  local o = order_of(ev[4])
  if o.token == token then return order_reply(order, o) end -- a retry
  return refuse('order_conflict', 'order ' .. order .. ' already paid another hold')
end
if not ev[3] then
  return refuse('unknown_hold', 'no hold ' .. token .. ' in event ' .. event)
end
local h = hold_of(ev[3])
if h.status == 'confirmed' then
  return refuse('order_conflict', 'hold ' .. token .. ' was already confirmed as order ' .. h.order)
end
if h.status == 'expired' and not late then return inactive(token, h) end

local seats = seats_of(h.flat)
local n = #seats
local counts_field, paid_field = 'u:' .. h.holder, 'v:' .. h.holder
if h.status == 'expired' then
  -- confirm_late: the same seats, if every one is still free (in its zone's free set:
  -- the places of a general-admission hold all lie below the zone's `next`).
  local free_key = K:free(h.zone) -- derived: the hold's zone
  local scores = chunked('ZMSCORE', free_key, seats)
  local taken = {}
  for i, seat in ipairs(seats) do
    if not scores[i] then taken[#taken + 1] = seat end
  end
  if #taken > 0 then
    return refuse('seat_taken', 'hold ' .. token .. ' expired and seats ' .. join(taken) ..
      ' were taken since', taken)
  end
  local counts = redis.call('HMGET', K.event, counts_field, paid_field)
  local held, paid, holds = counts_of(counts[1], counts[2])
  local refused = check_limits(event, h.holder, held, paid, holds, n, max_seats, false)
  if refused then return refused end
  chunked('ZREM', free_key, seats)
else
  -- An active hold's seats move from held to paid.
  redis.call('ZREM', K.deadlines, token)
  count_holds(K, counts_field, -n, -1)
end
count_paid(K, paid_field, n)
local fields = {}
for _, seat in ipairs(seats) do
  fields[#fields + 1] = h.zone .. ':' .. seat
  fields[#fields + 1] = order
end
chunked('HSET', K.paid, fields)
redis.call('HINCRBY', K.event, 'p:' .. h.zone, n)
-- The hold record is kept as long as its order, so confirm stays idempotent.
h.status, h.order = 'confirmed', order
local o = {holder = h.holder, zone = h.zone, token = token, paid_at = now, cancelled = false, flat = h.flat}
redis.call('HSET', K.event, hold_field, hold_text(h), order_field, order_text(o))
return order_reply(order, o)
