-- cancel.lua: paid -> free (HoldTable::cancel), optionally only for the order's holder.
-- Cancelling a cancelled order returns it again.
-- KEYS: the event keys
--! ARGV prefix event order check_holder holder log_limit
-- check_holder: 0|1; holder: empty unless checked
-- Returns {1, order, holder, zone, {seats}, token, paid_at_ms, cancelled, version} or a
-- refusal; version: the event's, raised by one (field ver, written with the order, or by
-- HINCRBY when the order was cancelled before).
arg_count(@argc, 'cancel')
local K = arg_event(@prefix, @event)
arg_log(@log_limit, K)
arg_id(@order, 'order id')
local event, order = ARGV[@event], ARGV[@order]
local check_holder = arg_flag(@check_holder, 'holder check flag')
local holder = nil
if check_holder then
  arg_ids(@holder, @holder, 'holder id')
  holder = ARGV[@holder]
elseif ARGV[@holder] ~= '' then
  malformed('holder given without the holder check (ARGV[@holder])')
end
check_keys(K)

local now = now_ms()
local order_field = 'o:' .. order
local ev = call('HMGET', K.event, 'id', 'due', order_field, 'ver')
if not ev[1] then return refuse('unknown_event', 'no event ' .. event, {event}) end
if sweep(K, now, ev[2]) then ev = call('HMGET', K.event, 'id', 'due', order_field, 'ver') end

if not ev[3] then
  return refuse('unknown_order', 'no order ' .. order .. ' in event ' .. event)
end
local o = order_of(ev[3])
if holder and holder ~= o.holder then
  return refuse('not_owner', 'order ' .. order .. ' belongs to another holder than ' .. holder)
end
if o.cancelled then return order_reply(order, o, raise_version(K)) end
-- Frees the order's seats that are still paid by it.
local fields = {}
for i = 2, #o.flat, 2 do fields[#fields + 1] = o.zone .. ':' .. o.flat[i] end
local owners = chunked('HMGET', K.paid, fields)
local mine, freed = {}, {}
for i, field in ipairs(fields) do
  if owners[i] == order then
    mine[#mine + 1] = field
    freed[#freed + 1] = o.flat[2 * i - 1]
    freed[#freed + 1] = o.flat[2 * i]
  end
end
if #mine > 0 then
  chunked('HDEL', K.paid, mine)
  chunked('ZADD', K:free(o.zone), freed) -- derived: the order's zone
  call('HINCRBY', K.event, 'p:' .. o.zone, -#mine)
end
count_paid(K, 'v:' .. o.holder, -#fields)
o.cancelled = true
local version, version_at = next_version(K, ev[4])
call('HSET', K.event, order_field, order_text(o), 'ver', version_at)
-- The change log: the seats now free.
local L = new_log()
touch_all(L, o.zone, freed, 0)
write_log(K, L, version)
return order_reply(order, o, version)
