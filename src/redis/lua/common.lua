-- common.lua: helpers shared by every seatlock script. The build prepends to each
-- operation's script the blocks of this file (separated by blank lines) that it uses, so
-- that every operation stays one self-contained EVALSHA that defines no unused helper.
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

-- The keys of one event; names must match src/redis/key_layout.hpp. Built once per call
-- without per-call closures: the per-name keys are methods of KEY_METHODS (K:hold(token)).
local KEY_METHODS = {}
KEY_METHODS.__index = KEY_METHODS
function KEY_METHODS.hold(K, token) return K.prefix .. ':hold' .. K.tag .. ':' .. token end
function KEY_METHODS.order(K, id) return K.prefix .. ':order' .. K.tag .. ':' .. id end
function KEY_METHODS.zone(K, zone) return K.prefix .. ':zone' .. K.tag .. ':' .. zone end
function KEY_METHODS.free(K, zone) return K.prefix .. ':free' .. K.tag .. ':' .. zone end
function KEY_METHODS.seats(K, zone) return K.prefix .. ':seats' .. K.tag .. ':' .. zone end

local function event_keys(prefix, event)
  local tag = ':{' .. event .. '}'
  return setmetatable({
    prefix = prefix, tag = tag,
    event = prefix .. ':event' .. tag, held = prefix .. ':held' .. tag,
    paid = prefix .. ':paid' .. tag, holders = prefix .. ':holders' .. tag,
    deadlines = prefix .. ':deadlines' .. tag, expired = prefix .. ':expired' .. tag,
  }, KEY_METHODS)
end

-- Checks that KEYS are exactly the keys the script will touch: the event-level keys every
-- hold script receives first (event, held, paid, holders, deadlines, expired), then `extra`.
local function check_keys(K, extra)
  local n = extra and #extra or 0
  if #KEYS ~= 6 + n then malformed('expected ' .. (6 + n) .. ' KEYS, got ' .. #KEYS) end
  if KEYS[1] ~= K.event or KEYS[2] ~= K.held or KEYS[3] ~= K.paid or KEYS[4] ~= K.holders or
      KEYS[5] ~= K.deadlines or KEYS[6] ~= K.expired then
    for i, name in ipairs({'event', 'held', 'paid', 'holders', 'deadlines', 'expired'}) do
      if KEYS[i] ~= K[name] then malformed('KEYS[' .. i .. '] should be ' .. K[name]) end
    end
  end
  for i = 1, n do
    if KEYS[6 + i] ~= extra[i] then malformed('KEYS[' .. (6 + i) .. '] should be ' .. extra[i]) end
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

-- Runs `command key member...` in chunks (unpack() is bounded by the Lua C stack) and
-- returns the array replies of the chunks as one array (HMGET, ZMSCORE).
local function chunked(command, key, members)
  local n = #members
  if n == 0 then return {} end
  if n <= 1000 then return redis.call(command, key, unpack(members)) end
  local out = {}
  for i = 1, n, 1000 do
    local reply = redis.call(command, key, unpack(members, i, math.min(i + 999, n)))
    if type(reply) == 'table' then
      for j = 1, #reply do out[#out + 1] = reply[j] end
    end
  end
  return out
end

-- Points the field "zone:seat" of `hash` (held or paid) at `owner` for every seat, in one
-- HSET per thousand seats.
local function mark_seats(hash, zone, seats, owner)
  local fields = {}
  for _, seat in ipairs(seats) do
    fields[#fields + 1] = zone .. ':' .. seat
    fields[#fields + 1] = owner
  end
  chunked('HSET', hash, fields)
end

-- A holder's counters, read in one HMGET: {held = n, paid = n, holds = n}.
local function counts_of(K, holder)
  local c = redis.call('HMGET', K.holders, holder .. ':held', holder .. ':paid', holder .. ':holds')
  return {held = tonumber(c[1] or '0'), paid = tonumber(c[2] or '0'), holds = tonumber(c[3] or '0')}
end

-- Adds `d` to one counter (`what` of `holder`, now `v`) for counts_add(): the field goes to
-- `set` with its new value, or to `gone` when back at zero; d = nil or 0 changes nothing.
local function count_to(set, gone, holder, what, v, d)
  if not d or d == 0 then return end
  if v + d == 0 then
    gone[#gone + 1] = holder .. what
  else
    set[#set + 1] = holder .. what
    set[#set + 1] = v + d
  end
end

-- Adds `delta` ({held = n, paid = n, holds = n}, missing = 0) to a holder's counters, whose
-- current values are `counts` (read when nil). One HSET for the counters still above zero,
-- one HDEL for those back at zero: a holder with nothing leaves no field behind.
local function counts_add(K, holder, delta, counts)
  counts = counts or counts_of(K, holder)
  local set, gone = {}, {}
  count_to(set, gone, holder, ':held', counts.held, delta.held)
  count_to(set, gone, holder, ':paid', counts.paid, delta.paid)
  count_to(set, gone, holder, ':holds', counts.holds, delta.holds)
  if #set > 0 then redis.call('HSET', K.holders, unpack(set)) end
  if #gone > 0 then redis.call('HDEL', K.holders, unpack(gone)) end
end

-- Frees the seats of one zone that `owner` still has in `state` ('held' or 'paid').
-- Returns how many it freed.
local function free_seats(K, zone, seats, slots, owner, state)
  local hash = state == 'held' and K.held or K.paid
  local fields = {}
  for i, seat in ipairs(seats) do fields[i] = zone .. ':' .. seat end
  local owners = chunked('HMGET', hash, fields)
  local mine, freed = {}, {}
  for i, field in ipairs(fields) do
    if owners[i] == owner then
      mine[#mine + 1] = field
      freed[#freed + 1] = slots[i]
      freed[#freed + 1] = seats[i]
    end
  end
  if #mine > 0 then
    chunked('HDEL', hash, mine)
    -- Derived keys of the hold's zone (same {event} slot).
    chunked('ZADD', K:free(zone), freed)
    redis.call('HINCRBY', K:zone(zone), state, -#mine)
  end
  return #mine
end

-- Expires every active hold whose deadline has passed: its seats are free at once and
-- its expiry is queued for expired(). Runs first in every operation on the event; when
-- nothing is due it costs one ZRANGEBYSCORE.
local function sweep(K, now)
  while true do
    local due = redis.call('ZRANGEBYSCORE', K.deadlines, '-inf', now, 'LIMIT', '0', '500')
    if #due == 0 then return end
    for _, token in ipairs(due) do
      local hold = K:hold(token) -- derived: another hold of this event
      local h = redis.call('HMGET', hold, 'holder', 'zone', 'seats', 'slots')
      if h[1] then
        local seats = split(h[3])
        free_seats(K, h[2], seats, split(h[4]), token, 'held')
        counts_add(K, h[1], {held = -#seats, holds = -1})
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

-- The holder limits, in the order of HoldTable::check_limits. Returns the refusal (or
-- nil) and the holder's counters, for counts_add().
local function check_limits(K, event, holder, n, max_seats, one_active)
  local counts = counts_of(K, holder)
  if one_active and counts.holds > 0 then
    return refuse('active_hold_exists',
      'holder ' .. holder .. ' already has an active hold in event ' .. event), counts
  end
  local has = counts.held + counts.paid
  if max_seats > 0 and has + n > max_seats then
    return refuse('limit_exceeded',
      'holder ' .. holder .. ' has ' .. has .. ' seats in event ' .. event .. ' and asked for ' ..
      n .. ' more; the limit is ' .. max_seats, {}, max_seats, has), counts
  end
  return nil, counts
end

local function order_reply(id, o)
  return {1, id, o[1], o[2], split(o[3]), o[5], tonumber(o[6]), tonumber(o[7])}
end

-- The fields order_reply() reads, for HMGET.
local ORDER_FIELDS = {'holder', 'zone', 'seats', 'slots', 'token', 'paid_at', 'cancelled'}
