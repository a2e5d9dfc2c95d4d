-- cancel.lua: paid -> free (HoldTable::cancel), optionally only for the order's holder.
-- Cancelling a cancelled order returns it again.
-- KEYS: the event keys, then order:<order>
-- ARGV: prefix, event, order, check_holder (0|1), holder (empty unless checked)
-- Returns {1, order, holder, zone, {seats}, token, paid_at_ms, cancelled} or a refusal.
arg_count(5, 'cancel')
local prefix, event = arg_prefix(1), arg_id(2, 'event')
local order = arg_id(3, 'order')
local check_holder = arg_flag(4, 'holder check flag')
local holder = check_holder and arg_id(5, 'holder') or nil
if not check_holder and ARGV[5] ~= '' then malformed('holder given without the holder check (ARGV[5])') end
local K = event_keys(prefix, event)
local order_key = K:order(order)
check_keys(K, {order_key})

local now = now_ms()
if redis.call('EXISTS', K.event) == 0 then
  return refuse('unknown_event', 'no event ' .. event, {event})
end
sweep(K, now)

local o = redis.call('HMGET', order_key, unpack(ORDER_FIELDS))
if not o[1] then
  return refuse('unknown_order', 'no order ' .. order .. ' in event ' .. event)
end
if holder and holder ~= o[1] then
  return refuse('not_owner', 'order ' .. order .. ' belongs to another holder than ' .. holder)
end
if o[7] == '1' then return order_reply(order, o) end
local seats = split(o[3])
free_seats(K, o[2], seats, split(o[4]), order, 'paid')
counts_add(K, o[1], {paid = -#seats})
redis.call('HSET', order_key, 'cancelled', 1)
o[7] = '1'
return order_reply(order, o)
