-- ack_expired.lua: acknowledges expired holds of one event: never reported again, and
-- their records are forgotten a day later (HoldTable::ack).
-- KEYS: the event keys
-- ARGV: prefix, event, token...
-- Returns {1, acknowledged}
local prefix, event = arg_prefix(1), arg_id(2, 'event')
if #ARGV < 3 then malformed('no token to acknowledge') end
local tokens = {}
for i = 3, #ARGV do tokens[#tokens + 1] = arg_token(i, event) end
local K = event_keys(prefix, event)
check_keys(K)

local acknowledged = 0
for _, token in ipairs(tokens) do
  if redis.call('ZREM', K.expired, token) == 1 then
    local hold_key = K:hold(token) -- derived: that hold's record
    -- A hold confirmed late is kept with its order.
    if redis.call('HGET', hold_key, 'status') == 'expired' then
      redis.call('PEXPIRE', hold_key, HOLD_MEMORY_MS)
    end
    acknowledged = acknowledged + 1
  end
end
return {1, acknowledged}
