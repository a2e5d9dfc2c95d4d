-- ack_expired.lua: acknowledges expired holds of one event: never reported again, and
-- their records are forgotten an hour later (HoldTable::ack) by a timer f:<token>.
-- KEYS: the event keys
--! ARGV prefix event tokens...
-- Returns {1, acknowledged}
local K = arg_event(@prefix, @event)
if #ARGV < @tokens then malformed('no token to acknowledge') end
local tokens = {}
for i = @tokens, #ARGV do tokens[#tokens + 1] = arg_token(i, K) end
check_keys(K)

local now = now_ms()
local acknowledged, fields = {}, {}
for _, token in ipairs(tokens) do
  if call('ZREM', K.expired, token) == 1 then
    acknowledged[#acknowledged + 1] = token
    fields[#fields + 1] = 'h:' .. token
  end
end
if #acknowledged == 0 then return {1, 0} end
local records = chunked('HMGET', K.event, fields)
local forget_at = now + HOLD_MEMORY_MS
local timers = {}
for i, token in ipairs(acknowledged) do
  -- A hold confirmed late is kept with its order.
  if records[i] and status_word(records[i]) == 'expired' then
    timers[#timers + 1] = forget_at
    timers[#timers + 1] = 'f:' .. token
  end
end
if #timers > 0 then
  chunked('ZADD', K.deadlines, timers)
  local due = call('HGET', K.event, 'due')
  if not due or forget_at < due + 0 then call('HSET', K.event, 'due', forget_at) end
end
return {1, #acknowledged}
