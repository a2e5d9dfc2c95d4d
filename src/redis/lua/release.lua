-- release.lua: held -> free, and the hold is forgotten at once (HoldTable::release):
-- a later call on it gets unknown_hold. Releasing an expired hold succeeds (its seats
-- are free already); a confirmed hold is refused.
-- KEYS: the event keys, then hold:<token>
-- ARGV: prefix, event, token
-- Returns {1} or a refusal.
arg_count(3, 'release')
local prefix, event = arg_prefix(1), arg_id(2, 'event')
local token = arg_token(3, event)
local K = event_keys(prefix, event)
local hold_key = K:hold(token)
check_keys(K, {hold_key})

local now = now_ms()
-- Without its event there is nothing to sweep and no hold: the event is checked only to
-- word the refusal.
sweep(K, now)

local h = redis.call('HMGET', hold_key, 'holder', 'zone', 'seats', 'slots', 'status', 'order')
if not h[1] then
  if redis.call('EXISTS', K.event) == 0 then
    return refuse('unknown_hold', 'no hold ' .. token .. ' (unknown event)')
  end
  return refuse('unknown_hold', 'no hold ' .. token .. ' in event ' .. event)
end
if h[5] == 'confirmed' then return inactive(token, h[5], h[6], {}) end
if h[5] == 'expired' then return {1} end -- its seats are already free
local seats = split(h[3])
redis.call('ZREM', K.deadlines, token)
free_seats(K, h[2], seats, split(h[4]), token, 'held')
counts_add(K, h[1], {held = -#seats, holds = -1})
-- Forgotten at once: a released hold is worth nothing to anyone.
redis.call('DEL', hold_key)
return {1}
