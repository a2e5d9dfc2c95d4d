-- common.lua: helpers shared by every seatlock script. The build prepends this file to
-- each operation's script, so that every operation stays one self-contained EVALSHA.
--
-- The rules implemented here and in the operation scripts are those of
-- include/seatlock/detail/hold_table.hpp and detail/lock_table.hpp; the conformance suite
-- holds the Redis and in-process backends to one behaviour.
--
-- Conventions:
-- * A script checks EVERY argument before it writes anything: a Lua error does not roll
--   back earlier writes, so a malformed call must fail while nothing has changed yet.
-- * Expected refusals (a seat taken, a hold expired, ...) are not errors: a script
--   returns {0, code, detail, items, limit, current}; success is {1, ...}.
-- * Time is the server's (TIME): client clocks never decide expiry. Redis 7 replicates
--   a script's effects, not the script, so TIME is allowed before writes.
-- * KEYS carries every key the caller can name. Keys that only the stored data names
--   (the zone of a hold being expired, another hold's record) are derived from the
--   prefix and event; they carry the same {event} hash tag, hence the same Cluster slot.

local MAX_ID = 128
local MAX_PLACES = 1000000
local MAX_MS = 1000000000000000 -- about 31,000 years: every duration fits a double exactly
-- How long an expired hold is remembered once its expiry is acknowledged (detail::hold_memory_ms).
local HOLD_MEMORY_MS = 3600 * 1000

local function malformed(what)
  error({err = 'ERR seatlock: malformed argument: ' .. what})
end

local function is_id(v)
  return type(v) == 'string' and #v >= 1 and #v <= MAX_ID and
    string.find(v, '^[A-Za-z0-9%._@%+%-]+$') ~= nil
end

local function arg_id(i, what)
  if not is_id(ARGV[i]) then malformed(what .. ' id (ARGV[' .. i .. '])') end
  return ARGV[i]
end

local function arg_int(i, what, min, max)
  local v = ARGV[i]
  if type(v) ~= 'string' or #v > 17 or not string.find(v, '^%-?%d+$') then
    malformed(what .. ' is not an integer (ARGV[' .. i .. '])')
  end
  local n = tonumber(v)
  if n < min or n > max then
    malformed(what .. ' out of range [' .. min .. ', ' .. max .. '] (ARGV[' .. i .. '])')
  end
  return n
end

local function arg_flag(i, what)
  return arg_int(i, what, 0, 1) == 1
end

local function arg_count(n, what)
  if #ARGV ~= n then malformed(what .. ': expected ' .. n .. ' ARGV, got ' .. #ARGV) end
end

-- A key prefix: printable, no space, no braces (braces would change the hash tag).
local function arg_prefix(i)
  local v = ARGV[i]
  if type(v) ~= 'string' or #v < 1 or #v > 128 or not string.find(v, '^[!-z|~]+$') then
    malformed('key prefix (ARGV[' .. i .. '])')
  end
  return v
end

-- A hold token of `event`: "<event>.<32 lowercase hex digits>".
local function is_token(v, event)
  return type(v) == 'string' and #v == #event + 33 and string.sub(v, 1, #event + 1) == event .. '.' and
    string.find(v, '^[0-9a-f]+$', #event + 2) ~= nil
end

local function arg_token(i, event)
  if not is_token(ARGV[i], event) then malformed('hold token of event ' .. event .. ' (ARGV[' .. i .. '])') end
  return ARGV[i]
end

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- The keys of one event; names must match src/redis/key_layout.hpp.
local function event_keys(prefix, event)
  local tag = '{' .. event .. '}'
  local function key(kind) return prefix .. ':' .. kind .. ':' .. tag end
  local K = {
    event = key('event'), held = key('held'), paid = key('paid'), holders = key('holders'),
    deadlines = key('deadlines'), expired = key('expired'),
  }
  function K.hold(token) return key('hold') .. ':' .. token end
  function K.order(id) return key('order') .. ':' .. id end
  function K.zone(zone) return key('zone') .. ':' .. zone end
  function K.free(zone) return key('free') .. ':' .. zone end
  function K.seats(zone) return key('seats') .. ':' .. zone end
  return K
end

-- The event-level keys every hold script receives first, in this order.
local EVENT_KEYS = {'event', 'held', 'paid', 'holders', 'deadlines', 'expired'}

-- Checks that KEYS are exactly the keys the script will touch, then returns them.
local function check_keys(K, extra)
  local expected = {}
  for _, name in ipairs(EVENT_KEYS) do expected[#expected + 1] = K[name] end
  for _, k in ipairs(extra or {}) do expected[#expected + 1] = k end
  if #KEYS ~= #expected then malformed('expected ' .. #expected .. ' KEYS, got ' .. #KEYS) end
  for i, k in ipairs(expected) do
    if KEYS[i] ~= k then malformed('KEYS[' .. i .. '] should be ' .. k) end
  end
end

local function split(s)
  local out = {}
  for word in string.gmatch(s or '', '%S+') do out[#out + 1] = word end
  return out
end

local function join(items)
  return table.concat(items, ', ')
end

local function refuse(code, detail, items, limit, current)
  return {0, code, detail, items or {}, limit or -1, current or -1}
end

-- Runs `command key member...` in chunks: unpack() is bounded by the Lua C stack.
local function chunked(command, key, members)
  for i = 1, #members, 1000 do
    redis.call(command, key, unpack(members, i, math.min(i + 999, #members)))
  end
end

local function count_of(K, holder, what)
  return tonumber(redis.call('HGET', K.holders, holder .. ':' .. what) or '0')
end

-- Adds delta to a holder's counter; a counter back at zero is removed.
local function count_add(K, holder, what, delta)
  if delta == 0 then return end
  if redis.call('HINCRBY', K.holders, holder .. ':' .. what, delta) == 0 then
    redis.call('HDEL', K.holders, holder .. ':' .. what)
  end
end

-- Frees the seats of one zone that `owner` still has in `state` ('held' or 'paid').
local function free_seats(K, zone, seats, slots, owner, state)
  local hash = state == 'held' and K.held or K.paid
  local freed = {}
  for i, seat in ipairs(seats) do
    local field = zone .. ':' .. seat
    if redis.call('HGET', hash, field) == owner then
      redis.call('HDEL', hash, field)
      freed[#freed + 1] = slots[i]
      freed[#freed + 1] = seat
    end
  end
  if #freed > 0 then
    -- Derived keys of the hold's zone (same {event} slot).
    chunked('ZADD', K.free(zone), freed)
    redis.call('HINCRBY', K.zone(zone), state, -(#freed / 2))
  end
end

-- Expires every active hold whose deadline has passed: its seats are free at once and
-- its expiry is queued for expired(). Runs first in every operation on the event.
local function sweep(K, now)
  while true do
    local due = redis.call('ZRANGEBYSCORE', K.deadlines, '-inf', now, 'LIMIT', 0, 500)
    if #due == 0 then return end
    for _, token in ipairs(due) do
      local hold = K.hold(token) -- derived: another hold of this event
      local h = redis.call('HMGET', hold, 'holder', 'zone', 'seats', 'slots')
      if h[1] then
        local seats = split(h[3])
        free_seats(K, h[2], seats, split(h[4]), token, 'held')
        count_add(K, h[1], 'held', -#seats)
        count_add(K, h[1], 'holds', -1)
        redis.call('HSET', hold, 'status', 'expired')
        redis.call('ZADD', K.expired, now, token)
      end
    end
    chunked('ZREM', K.deadlines, due)
  end
end

-- The refusal for a call that needs an active hold.
local function inactive(token, status, order, seats)
  if status == 'expired' then
    return refuse('hold_expired', 'hold ' .. token .. ' expired', seats)
  elseif status == 'confirmed' then
    return refuse('hold_not_active', 'hold ' .. token .. ' was confirmed as order ' .. order)
  end
  return refuse('hold_not_active', 'hold ' .. token .. ' is not active')
end

-- The holder limits, in the order of HoldTable::check_limits.
local function check_limits(K, event, holder, n, max_seats, one_active)
  if one_active and count_of(K, holder, 'holds') > 0 then
    return refuse('active_hold_exists',
      'holder ' .. holder .. ' already has an active hold in event ' .. event)
  end
  local has = count_of(K, holder, 'held') + count_of(K, holder, 'paid')
  if max_seats > 0 and has + n > max_seats then
    return refuse('limit_exceeded',
      'holder ' .. holder .. ' has ' .. has .. ' seats in event ' .. event .. ' and asked for ' ..
      n .. ' more; the limit is ' .. max_seats, {}, max_seats, has)
  end
  return nil
end

local function order_reply(id, o)
  return {1, id, o[1], o[2], split(o[3]), o[5], tonumber(o[6]), tonumber(o[7])}
end

-- The fields order_reply() reads, for HMGET.
local ORDER_FIELDS = {'holder', 'zone', 'seats', 'slots', 'token', 'paid_at', 'cancelled'}
