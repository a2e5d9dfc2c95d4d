-- expired.lua: up to `limit` expired holds of one event not yet acknowledged and not
-- delivered during the last `redeliver_after` ms; each is due again after that.
-- KEYS: the event keys
--! ARGV prefix event limit redeliver_after log_limit
-- redeliver_after: ms
-- Returns {1, {{token, holder, zone, {seats}, expired_at_ms}, ...}}
arg_count(@argc, 'expired')
local K = arg_event(@prefix, @event)
arg_log(@log_limit, K)
local event = ARGV[@event]
local limit = arg_int(@limit, 'limit', 1, MAX_PLACES)
local redeliver_after = arg_int(@redeliver_after, 'redeliver after', 0, MAX_MS)
check_keys(K)

local now = now_ms()
local ev = call('HMGET', K.event, 'id', 'due')
if not ev[1] then return {1, {}} end
sweep(K, now, ev[2])

local out = {}
local due = call('ZRANGEBYSCORE', K.expired, '-inf', now, 'LIMIT', 0, limit)
if #due == 0 then return {1, out} end
local fields, again, gone = {}, {}, {}
for i, token in ipairs(due) do fields[i] = 'h:' .. token end
local records = chunked('HMGET', K.event, fields)
for i, token in ipairs(due) do
  if records[i] then
    local h = hold_of(records[i])
    out[#out + 1] = {token, h.holder, h.zone, seats_of(h.flat), h.expires}
    again[#again + 1] = now + redeliver_after
    again[#again + 1] = token
  else
    gone[#gone + 1] = token -- nothing left to report
  end
end
chunked('ZADD', K.expired, again)
chunked('ZREM', K.expired, gone)
return {1, out}
