-- common.lua: helpers shared by every seatlock operation. The build (embed_lua.cmake)
-- makes one Redis function library of this file and the operation files: these helpers
-- are defined once, when the library loads, and each <op>.lua becomes the body of the
-- function seatlock_<version>_<op>, which sees its call's KEYS and ARGV.
--
-- The rules implemented here and in the operations are those of
-- include/seatlock/detail/hold_table.hpp and detail/lock_table.hpp; the conformance suite
-- holds the Redis and in-process backends to one behaviour.
--
-- Conventions:
-- * Each operation file declares its arguments once, in a line `--! ARGV name name ...`
--   (a last `name...` starts the variable part), and names them as @name (@argc: how many
--   fixed ones): the build puts their positions in, and gives the C++ encoding the same
--   names (redis_scripts::args::<op>), so neither side counts positions by hand.
-- * A function checks EVERY argument before it writes anything: a Lua error does not
--   roll back earlier writes, so a malformed call must fail while nothing has changed yet.
-- * Expected refusals (a seat taken, a hold expired, ...) are not errors: a function
--   returns {0, code, detail, items, limit, current}; success is {1, ...}. The lock
--   functions answer with less, as a table costs a reply more to write: lock_acquire the
--   fencing token or the indexes of the busy keys, lock_release and lock_extend 1 or 0.
-- * Time is the server's (TIME): client clocks never decide expiry. Redis 7 replicates
--   a function's effects, not the call, so TIME is allowed before writes.
-- * KEYS carries every key the caller can name. Keys that only the stored data names
--   (the free set of the zone of a hold being expired) are derived from the prefix and
--   event; they carry the same {event} hash tag, hence the same Cluster slot.
-- * Few commands per call: Redis spends more time entering a command from Lua than
--   running these small ones. So an event's records are fields of ONE hash, read
--   together by one HMGET and written together by one HSET:
--     id, spec            the event (spec: the canonical inventory, JSON)
--     z:<zone>            "<kind> <capacity> <rows>" (rows: 1 when seats name rows)
--     n:<zone>            general admission: the first place never taken yet
--     p:<zone>            paid seats of the zone
--     c:<zone>            held seats of the zone (absent: not counted yet; common_records.lua)
--     x:<zone>:<seat>     a held seat of a named zone: the expiry of its hold
--     u:<holder>          the holder's held seats + 2^26 x its active holds (HOLD_UNIT)
--     v:<holder>          the holder's paid seats (u and v: no field while 0)
--     h:<token>           a hold: "<status>[=<key>] <holder> <zone> <created> <expires> <pairs>",
--                         status held, expired, released or c:<order> (confirmed); <key>
--                         the caller's idempotency key, when given. Only a hold with a
--                         key stays here once released (was_released)
--     rb                  the minute of the newest hash of released holds (remember_release)
--     k:<holder>:<key>    the token of the hold a holder made with an idempotency key; as
--                         long as the hold's record
--     o:<order>           an order: "<holder> <zone> <token> <paid_at> <cancelled> <pairs>"
--     due                 no later than the earliest timer (absent: no timer)
--     lr                  the version the change log starts at after a recovery (absent: 0)
--     ver                 the event's version (EventVersion; absent: 0): every successful
--                         write raises it by one in its own call, and answers it; so does
--                         a sweep that expired a hold (sweep, raise_version)
--   Ids never contain spaces (arg_ids), so records split on spaces; <pairs> is the seats'
--   slot-seat pairs, the arguments ZADD takes to put them back in the free set, as
--   MessagePack (cmsgpack).
-- * Lua pays for every call into C (string functions, tonumber, ipairs; more to look up
--   string.find as a global) and for every string and table it makes (the collector runs
--   in the call's time too), and a redis.call costs several times as much
--   (docs/performance.md, "Redis CPU per call"). So the hot functions (locks,
--   hold, release, confirm) check an argument, or a hold's ids together, with one anchored
--   pattern and an event's names once (its keys are remembered), hand numbers to
--   redis.call as strings made once by '%d' (Redis would print each one with '%.17g', the
--   slow way; counters' recurring values are remembered), and change a record
--   by cutting its text rather than parsing and rebuilding it.
--   benchmarks/lua/function_cost.sh measures them.

-- Lua's library functions the functions call most, as locals: a global (string) and its
-- field (find) cost two table lookups at each use, a local one step. The library's code
-- cannot name Lua's libraries while it loads, only while a function runs, so the first
-- call of any function binds them (bind, called by each function's preamble: see
-- embed_lua.cmake). `call` is redis.call; `unpack` and `tonumber` keep their names.
local call, find, sub, match, format, concat, unpack, tonumber

local function bind()
  call, find, sub, match, format = redis.call, string.find, string.sub, string.match, string.format
  concat, unpack, tonumber = table.concat, _G.unpack, _G.tonumber
end

local MAX_ID = 128
local ID_CHARS = '^[%w%._@%+%-]*$'
local MAX_PLACES = 1000000
local MAX_MS = 1000000000000000 -- about 31,000 years: every duration fits a double exactly
-- How long an expired hold is remembered once its expiry is acknowledged (detail::hold_memory_ms).
local HOLD_MEMORY_MS = 3600 * 1000
-- How long a released hold is remembered (detail::released_memory_ms): a retried release
-- succeeds, a replayed idempotency key finds it.
local RELEASED_MEMORY_MS = 120 * 1000

local function malformed(what)
  error({err = 'ERR seatlock: malformed argument: ' .. what})
end

-- Checks that ARGV[from..to] are ids: 1 to 128 characters of A-Z a-z 0-9 . _ @ + -. The
-- lengths one by one, the characters in one pattern search over their concatenation. `names`
-- (comma-separated) names them for the error; its last name stands for every argument
-- after the others (the seats of a hold).
local function arg_ids(from, to, names)
  local bad
  for i = from, to do
    local v = ARGV[i]
    if not v or #v == 0 or #v > MAX_ID then
      bad = i
      break
    end
  end
  -- Anchored, the class is parsed once, not at every position.
  if not bad and not find(concat(ARGV, '', from, to), ID_CHARS) then
    for i = from, to do
      if not find(ARGV[i], ID_CHARS) then
        bad = i
        break
      end
    end
  end
  if bad then
    local list = {}
    for name in string.gmatch(names, '[^,]+') do list[#list + 1] = name end
    malformed((list[bad - from + 1] or list[#list]) .. ' (ARGV[' .. bad .. '])')
  end
end

-- Checks that ARGV[i] is one id (as arg_ids); returns it.
local function arg_id(i, what)
  local v = ARGV[i]
  if not v or #v == 0 or #v > MAX_ID or not find(v, ID_CHARS) then
    malformed(what .. ' (ARGV[' .. i .. '])')
  end
  return v
end

-- Strings arg_int found to be integers, and their values: nearly every call brings the
-- same few (a seat count, a ttl, a limit). Afresh past 1,000.
local INTS, ints = {}, 0

-- ARGV[i] as an integer in [min, max], written in decimal digits only.
local function arg_int(i, what, min, max)
  local v = ARGV[i]
  local n = INTS[v]
  if not n then
    n = v and #v <= 17 and find(v, '^%d+$') and v + 0
    if not n then malformed(what .. ' is not an integer (ARGV[' .. i .. '])') end
    if ints >= 1000 then INTS, ints = {}, 0 end
    INTS[v], ints = n, ints + 1
  end
  if n < min or n > max then
    malformed(what .. ' out of range [' .. min .. ', ' .. max .. '] (ARGV[' .. i .. '])')
  end
  return n
end

-- ARGV[i] as an event's history (EventHistory): decimal digits, below 2^63, kept as text
-- (Lua's numbers would round it). Compared as text with the event hash's field h. With
-- `optional`, '' too (no history: false).
local function arg_history(i, optional)
  local v = ARGV[i]
  if optional and v == '' then return false end
  if not (v and #v <= 19 and find(v, '^%d+$')) then
    malformed('history is not an integer below 2^63 (ARGV[' .. i .. '])')
  end
  return v
end

local function arg_flag(i, what)
  local v = ARGV[i]
  if v ~= '0' and v ~= '1' then malformed(what .. ' is not 0 or 1 (ARGV[' .. i .. '])') end
  return v == '1'
end

local function arg_count(n, what)
  if #ARGV ~= n then malformed(what .. ': expected ' .. n .. ' ARGV, got ' .. #ARGV) end
end

-- A key prefix: printable, no space, no braces (braces would change the hash tag).
local function arg_prefix(i)
  local v = ARGV[i]
  if not v or #v < 1 or #v > 128 or not find(v, '^[!-z|~]+$') then
    malformed('key prefix (ARGV[' .. i .. '])')
  end
  return v
end

-- Checks that ARGV[i] is a hold token of the event whose keys are K (arg_event):
-- "<event>.<32 lowercase hex digits>": its length, then one pattern search, the event's
-- (K.token_pattern: the event id with its punctuation escaped, then the hex digits).
local function arg_token(i, K)
  local v = ARGV[i]
  if not v or #v ~= K.token_length or not find(v, K.token_pattern) then
    malformed('hold token of event ' .. K.id .. ' (ARGV[' .. i .. '])')
  end
  return v
end

-- Checks that ARGV[i] is a lock owner, 32 lowercase hex digits; returns it.
local function arg_owner(i)
  local v = ARGV[i]
  if not v or #v ~= 32 or not find(v, '^[0-9a-f]+$') then malformed('lock owner (ARGV[' .. i .. '])') end
  return v
end

-- The server's time in ms (TIME answers seconds and microseconds, as strings).
local function now_ms()
  local t = call('TIME')
  local us = t[2] + 0
  return t[1] * 1000 + (us - us % 1000) / 1000
end

-- An integer as decimal digits: what records hold, and what redis.call is handed.
local function digits(n)
  return format('%d', n)
end

-- ARGV[i], a lease in ms (as arg_int checks it), as SET PX and PEXPIRE take it: as it
-- came, unless written with leading zeros, which they refuse. A caller's locks have the
-- same few leases: the answers are remembered, afresh past 1,000.
local LEASES, leases = {}, 0
local function arg_lease(i)
  local v = ARGV[i]
  local lease = LEASES[v]
  if lease then return lease end
  local ms = arg_int(i, 'lease', 1, MAX_MS)
  lease = string.byte(v) == 48 and digits(ms) or v
  if leases >= 1000 then LEASES, leases = {}, 0 end
  LEASES[v], leases = lease, leases + 1
  return lease
end

-- The keys of one event; names must match src/redis/include/seatlock/redis/key_layout.hpp.
-- The per-zone keys are methods (K:free(zone)). Key names depend on nothing but the
-- prefix, the event and the zone, so the library remembers them (its state lives as long
-- as the library is loaded): a call on an event it has seen builds no key name. The memo
-- starts afresh once it holds 1,000 events.
local function zone_key(K, kind, zone)
  local names = K.zone_keys[kind]
  local key = names[zone]
  if not key then
    key = K.prefix .. ':' .. kind .. K.tag .. ':' .. zone
    -- Bounded whatever zone names callers send: afresh past 1,000.
    if K.zone_names >= 1000 then
      K.zone_keys, K.zone_names = {free = {}, seats = {}}, 0
      names = K.zone_keys[kind]
    end
    names[zone] = key
    K.zone_names = K.zone_names + 1
  end
  return key
end

local function free_key(K, zone) return zone_key(K, 'free', zone) end

local function seats_key(K, zone) return zone_key(K, 'seats', zone) end

local KEY_MEMO, key_memo_size = {}, 0

-- The keys of the event that ARGV[p] (key prefix) and ARGV[e] (event id) name, after
-- checking both. Only checked names enter the memo, so an event seen before is neither
-- checked nor named again.
local function arg_event(p, e)
  local prefix, event = ARGV[p], ARGV[e]
  local by_event = prefix and KEY_MEMO[prefix]
  local K = by_event and event and by_event[event]
  if K then return K end
  arg_prefix(p)
  arg_id(e, 'event id')
  local tag = ':{' .. event .. '}'
  K = {
    id = event, prefix = prefix, tag = tag,
    -- A token of this event (arg_token): the id, its punctuation escaped, then '.' and 32
    -- lowercase hex digits; ids have no other magic characters.
    token_length = #event + 33, token_pattern = '^' .. string.gsub(event, '%p', '%%%0') .. '%.[0-9a-f]*$',
    event = prefix .. ':event' .. tag, paid = prefix .. ':paid' .. tag,
    deadlines = prefix .. ':deadlines' .. tag, expired = prefix .. ':expired' .. tag,
    released = prefix .. ':released' .. tag .. ':',
    -- The change log, a stream (common_records.lua).
    log = prefix .. ':changes' .. tag,
    -- The calling backend's change log limit (arg_log), set by every function that writes.
    log_limit = false,
    free = free_key, seats = seats_key, zone_keys = {free = {}, seats = {}}, zone_names = 0,
    -- The last version written, and its digits (next_version).
    ver = 0, ver_text = false,
  }
  if key_memo_size >= 1000 then KEY_MEMO, key_memo_size = {}, 0 end
  by_event = KEY_MEMO[prefix] or {}
  KEY_MEMO[prefix], by_event[event] = by_event, K
  key_memo_size = key_memo_size + 1
  return K
end

-- Checks that KEYS are exactly the keys the function will touch: the event-level keys every
-- hold function receives first (event, paid, deadlines, expired), then `free` and `seats`
-- (those of the zone a hold asks for) when given.
local function check_keys(K, free, seats)
  -- Equal strings are one string in Lua: each test compares two pointers.
  if KEYS[1] == K.event and KEYS[2] == K.paid and KEYS[3] == K.deadlines and
      KEYS[4] == K.expired and KEYS[5] == free and KEYS[6] == seats and KEYS[7] == nil then
    return
  end
  local n = free and 6 or 4
  if #KEYS ~= n then malformed('expected ' .. n .. ' KEYS, got ' .. #KEYS) end
  local expected = {K.event, K.paid, K.deadlines, K.expired, free, seats}
  for i = 1, n do
    if KEYS[i] ~= expected[i] then malformed('KEYS[' .. i .. '] should be ' .. expected[i]) end
  end
end

local function join(items)
  return concat(items, ', ')
end

local function refuse(code, detail, items, limit, current)
  return {0, code, detail, items or {}, limit or -1, current or -1}
end

-- The refusal for seats a zone does not have.
local function unknown_seats(zone, unknown)
  return refuse('unknown_seat', 'zone ' .. zone .. ' has no seat ' .. join(unknown), unknown)
end

-- Runs `command key member...` in chunks (unpack() is bounded by the Lua C stack) and
-- returns the array replies of the chunks as one array (HMGET, ZMSCORE).
local function chunked(command, key, members)
  local n = #members
  if n == 0 then return {} end
  if n <= 1000 then return call(command, key, unpack(members)) end
  local out = {}
  for i = 1, n, 1000 do
    local reply = call(command, key, unpack(members, i, math.min(i + 999, n)))
    if type(reply) == 'table' then
      for j = 1, #reply do out[#out + 1] = reply[j] end
    end
  end
  return out
end

-- For a fence key ("<prefix>:fence:{<group>}"), how each lock key of its group starts
-- ("<prefix>:lock:{<group>}"); false when it is not a fence key. A group's calls name the
-- same fence key, so the answers are remembered; afresh past 1,000.
local LOCK_HEADS, lock_heads = {}, 0
local function lock_head_of(fence)
  local head = LOCK_HEADS[fence]
  if head == nil then
    local prefix, group = match(fence, '^([^{}]*):fence:{([^{}]*)}$')
    head = prefix and prefix .. ':lock:{' .. group .. '}' or false
    if lock_heads >= 1000 then LOCK_HEADS, lock_heads = {}, 0 end
    LOCK_HEADS[fence], lock_heads = head, lock_heads + 1
  end
  return head
end

-- How a lock key starts: a prefix without braces, ":lock:{", its group (no braces) and "}".
local LOCK_KEY = '^[^{}]*:lock:{[^{}]*}'

-- The start of `key` (LOCK_KEY's match), false when it is not a lock key. The start ends at
-- the first "}" after the first "{", which two plain searches find; the start alone is then
-- checked, once: a group's keys share it, so the answers are remembered (afresh past
-- 1,000), and a pattern search with its backtracking runs only for a start not seen before.
local LOCK_STARTS, lock_starts = {}, 0
local function lock_start_of(key)
  local open = find(key, '{', 1, true)
  local close = open and find(key, '}', open, true)
  if not close then return false end
  local start = sub(key, 1, close)
  local ok = LOCK_STARTS[start]
  if ok == nil then
    ok = find(start, LOCK_KEY .. '$') ~= nil
    if lock_starts >= 1000 then LOCK_STARTS, lock_starts = {}, 0 end
    LOCK_STARTS[start], lock_starts = ok, lock_starts + 1
  end
  return ok and start
end

-- The first of KEYS[1..n] that is not a lock key, nil when all are: with `head`
-- (lock_head_of) when given, the start every key must have. Without it the keys may be of
-- several groups (a release), but are nearly always of the first key's: a key that starts
-- as the first one is a lock key after one plain search, which makes no string.
local function bad_lock_key(n, head)
  local from, any_group = 1, not head
  if any_group then
    head = lock_start_of(KEYS[1])
    if not head then return 1 end
    from = 2
  end
  for k = from, n do
    local key = KEYS[k]
    if find(key, head, 1, true) ~= 1 and not (any_group and lock_start_of(key)) then
      return k
    end
  end
  return nil
end

-- The values of KEYS[1..n], false where a key is missing: one MGET per 1,000 keys.
local function mget_keys(n)
  if n <= 1000 then return call('MGET', unpack(KEYS, 1, n)) end
  local values = {}
  for i = 1, n, 1000 do
    local part = call('MGET', unpack(KEYS, i, math.min(i + 999, n)))
    for j = 1, #part do values[i + j - 1] = part[j] end
  end
  return values
end

-- For a call on lock keys it already holds (release, extend): checks that KEYS are one or
-- more lock keys, then returns how many and their current values (the owners).
local function held_lock_keys()
  local n = #KEYS
  if n < 1 then malformed('no lock key') end
  local bad = bad_lock_key(n)
  if bad then malformed('KEYS[' .. bad .. '] is not a lock key') end
  return n, mget_keys(n)
end
