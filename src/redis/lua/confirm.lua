-- confirm.lua: held -> paid, for good (HoldTable::confirm). Idempotent per (token, order).
-- With `late`, an expired hold is paid anyway when every one of its seats is still free.
-- KEYS: the event keys, then hold:<token>, order:<order>
-- ARGV: prefix, event, token, order, late (0|1), max_seats (0 = none)
-- Returns {1, order, holder, zone, {seats}, token, paid_at_ms, cancelled} or a refusal.
arg_count(6, 'confirm')
local prefix, event = arg_prefix(1), arg_id(2, 'event')
local token, order = arg_token(3, event), arg_id(4, 'order')
local late = arg_flag(5, 'late flag')
local max_seats = arg_int(6, 'max seats per holder', 0, MAX_MS)
local K = event_keys(prefix, event)
local hold_key, order_key = K:hold(token), K:order(order)
check_keys(K, {hold_key, order_key})

local now = now_ms()
if redis.call('EXISTS', K.event) == 0 then
  return refuse('unknown_hold', 'no hold ' .. token .. ' (unknown event)')
end
sweep(K, now)

local existing = redis.call('HMGET', order_key, unpack(ORDER_FIELDS))
if existing[1] then
  if existing[5] == token then return order_reply(order, existing) end -- a retry
  return refuse('order_conflict', 'order ' .. order .. ' already paid another hold')
end

local h = redis.call('HMGET', hold_key, 'holder', 'zone', 'seats', 'slots', 'status', 'order', 'expires')
if not h[1] then
  return refuse('unknown_hold', 'no hold ' .. token .. ' in event ' .. event)
end
local holder, zone, status = h[1], h[2], h[5]
local seats, slots = split(h[3]), split(h[4])
if status == 'confirmed' then
  return refuse('order_conflict', 'hold ' .. token .. ' was already confirmed as order ' .. h[6])
end
if status == 'expired' and not late then
  return inactive(token, status, h[6], seats)
end

local n = #seats
local counts -- the holder's counters, when check_limits() has read them
local zone_key, free_key = K:zone(zone), K:free(zone) -- derived: the hold's zone
if status == 'expired' then
  -- confirm_late: the same seats, if every one is still free.
  local taken = {}
  local fields = {}
  for i, seat in ipairs(seats) do fields[i] = zone .. ':' .. seat end
  local in_held, in_paid = chunked('HMGET', K.held, fields), chunked('HMGET', K.paid, fields)
  for i, seat in ipairs(seats) do
    if in_held[i] or in_paid[i] then taken[#taken + 1] = seat end
  end
  if #taken > 0 then
    return refuse('seat_taken', 'hold ' .. token .. ' expired and seats ' .. join(taken) ..
      ' were taken since', taken)
  end
  local refused
  refused, counts = check_limits(K, event, holder, n, max_seats, false)
  if refused then return refused end
  chunked('ZREM', free_key, seats)
else
  redis.call('ZREM', K.deadlines, token)
  local fields = {}
  for _, seat in ipairs(seats) do fields[#fields + 1] = zone .. ':' .. seat end
  chunked('HDEL', K.held, fields)
  redis.call('HINCRBY', zone_key, 'held', -n)
end
mark_seats(K.paid, zone, seats, order)
redis.call('HINCRBY', zone_key, 'paid', n)
-- A late confirm only adds paid seats; an active hold's seats move from held to paid.
counts_add(K, holder, status == 'expired' and {paid = n} or {held = -n, holds = -1, paid = n}, counts)
-- The hold record is kept as long as its order, so confirm stays idempotent.
redis.call('HSET', hold_key, 'status', 'confirmed', 'order', order)
redis.call('PERSIST', hold_key)
redis.call('HSET', order_key, 'holder', holder, 'zone', zone, 'seats', h[3], 'slots', h[4],
  'token', token, 'paid_at', now, 'cancelled', 0)
return order_reply(order, redis.call('HMGET', order_key, unpack(ORDER_FIELDS)))
