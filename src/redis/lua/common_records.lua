-- common_records.lua: the helpers shared by the hold operations, after common.lua's (the
-- build puts this file right after it, in the same library): the records of zones, holds
-- and orders as the event hash stores them, versions, the holders' counters, the ending
-- and expiry of holds (the sweep) and the holders' limits.

-- A zone's record (field z:<zone>): kind, capacity, whether its seats name rows.
local function zone_of(text)
  local kind, capacity, rows = match(text, '^(%S+) (%d+) ([01])$')
  return kind, tonumber(capacity), rows == '1'
end

-- Seat lists are stored as MessagePack: the slot-seat pairs ZADD takes, back out with one
-- cmsgpack.unpack (splitting text costs Lua a call per word).
local function pack_pairs(flat)
  if #flat <= 1000 then return cmsgpack.pack(unpack(flat)) end
  local parts = {}
  for i = 1, #flat, 1000 do parts[#parts + 1] = cmsgpack.pack(unpack(flat, i, math.min(i + 999, #flat))) end
  return concat(parts)
end

local function unpack_pairs(blob)
  -- Every value takes 2 bytes or more: below 8,000 bytes they all fit the Lua C stack.
  if #blob < 8000 then return {cmsgpack.unpack(blob)} end
  local flat, offset = {}, 0
  while offset >= 0 do
    local part = {cmsgpack.unpack_limit(blob, 1000, offset)}
    for i = 2, #part do flat[#flat + 1] = part[i] end
    offset = part[1]
  end
  return flat
end

-- The seats of a slot-seat pair list, in order.
local function seats_of(flat)
  local seats = {}
  for i = 2, #flat, 2 do seats[#seats + 1] = flat[i] end
  return seats
end

-- A hold's record (field h:<token>): {status, key, holder, zone, created, expires, flat,
-- order} where flat is the slot-seat pair list, status is held, expired, released or
-- confirmed and key the idempotency key ('' for none).
local function hold_of(text)
  local status, key, holder, zone, created, expires, blob =
    match(text, '^([^ =]+)=?(%S*) (%S+) (%S+) (%d+) (%d+) (.*)$')
  local h = {status = status, key = key, holder = holder, zone = zone, created = tonumber(created),
    expires = tonumber(expires), flat = unpack_pairs(blob)}
  if sub(status, 1, 2) == 'c:' then h.status, h.order = 'confirmed', sub(status, 3) end
  return h
end

local function hold_text(h)
  local status = h.status == 'confirmed' and 'c:' .. h.order or h.status
  if h.key ~= '' then status = status .. '=' .. h.key end
  return format('%s %s %s %d %d ', status, h.holder, h.zone, h.created, h.expires) ..
    pack_pairs(h.flat)
end

-- The status word of a hold's record, without parsing the rest.
local function status_word(text)
  return match(text, '^[^ =]+')
end

-- What the hot paths read of a hold's record, without copying the rest of it: its status
-- word (held, expired, released or c:<order>), the holder, the zone, and two positions in
-- the text: where the record goes on after its status word ("[=<key>] <holder> ...": a
-- new status followed by that part is the record with its status changed), and where its
-- <pairs> start.
local function hold_head(text)
  local status, rest, holder, zone, pairs_at = match(text, '^([^ =]+)()=?%S* (%S+) (%S+) %d+ %d+ ()')
  return status, rest, holder, zone, pairs_at
end

-- Whether hold record h answers a hold request: the same zone, and the same seats (a
-- request for named seats) or as many places (n).
local function same_request(h, zone, asked, n)
  if h.zone ~= zone or #h.flat ~= 2 * n then return false end
  if not asked then return true end
  local had = seats_of(h.flat)
  local sorted = {}
  for i = 1, n do sorted[i] = asked[i] end
  table.sort(had)
  table.sort(sorted)
  for i = 1, n do
    if had[i] ~= sorted[i] then return false end
  end
  return true
end

-- The reply to a hold call answered by an existing hold: {1, zone, {seats}, expires,
-- status, order, replayed, version}.
local function hold_reply(h, replayed, version)
  return {1, h.zone, seats_of(h.flat), h.expires, h.status, h.order or '', replayed and 1 or 0, version}
end

-- Raises the event's version by one (field ver) and returns the new one: for the steps
-- that write no field of the event hash otherwise, or only on a path seldom taken (a
-- retry answered from storage); the hot paths write ver+1 in the HSET they do anyway.
local function raise_version(K)
  return call('HINCRBY', K.event, 'ver', '1')
end

-- The version after `ver` (field ver of the event K as HMGET read it, false while
-- absent), as a number and as digits for HSET. The digits a call wrote are nearly always
-- what the next call on the event reads: K remembers them with their value, so the next
-- call makes no number of them (equal strings are one string in Lua: one comparison).
local function next_version(K, ver)
  local version
  if ver and ver == K.ver_text then
    version = K.ver + 1
  else
    version = (ver or 0) + 1
  end
  local text = digits(version)
  K.ver, K.ver_text = version, text
  return version, text
end

-- Deletes a hold's record and its idempotency key's field.
local function forget_hold(K, token, h)
  if h.key ~= '' then
    call('HDEL', K.event, 'h:' .. token, 'k:' .. h.holder .. ':' .. h.key)
  else
    call('HDEL', K.event, 'h:' .. token)
  end
end

-- A hold released without an idempotency key is remembered by its token alone: field
-- <the token's 32 hex digits> = <release time, ms> of the hash
-- <prefix>:released:{event}:<minute>, the minute (server time, since the epoch) of its
-- release, which Redis deletes RELEASED_MEMORY_MS after that minute ends. All a retried
-- release, confirm or extend needs to know is there (a replayed key needs the whole
-- record: a keyed hold keeps it in the event hash), as in the in-process backends. The
-- event hash and its timers then hold no more than the live holds, instead of every hold
-- released in the last two minutes, which made each call on a busy event slower; one hash
-- a minute, not one key per release, keeps Redis's own table of keys small
-- (docs/performance.md). The hashes carry the event's hash tag: one slot.
local RELEASED_MINUTE_MS = 60 * 1000

local function minute_of(now)
  return (now - now % RELEASED_MINUTE_MS) / RELEASED_MINUTE_MS
end

-- Whether `token` was released less than RELEASED_MEMORY_MS before `now`: its release
-- lies in this minute or one of the two before.
local function was_released(K, token, now)
  local hex, minute = sub(token, -32), minute_of(now)
  for m = minute, minute - 2, -1 do
    local at = call('HGET', K.released .. digits(m), hex)
    if at then return at + RELEASED_MEMORY_MS > now end
  end
  return false
end

-- Remembers the release of `token` at `now`. `rb` is the event's field "rb", the minute
-- whose hash has its expiry already: each minute's first release sets it.
local function remember_release(K, token, now, rb)
  local minute = minute_of(now)
  local at = digits(minute)
  local released = K.released .. at
  call('HSET', released, sub(token, -32), digits(now))
  if rb ~= at then
    call('PEXPIREAT', released, digits((minute + 1) * RELEASED_MINUTE_MS + RELEASED_MEMORY_MS))
    call('HSET', K.event, 'rb', at)
  end
end

-- The refusal for a call that needs a hold whose token is not in the event hash.
local function missing_hold(K, token, now)
  if was_released(K, token, now) then return refuse('hold_not_active', 'hold ' .. token .. ' was released') end
  return refuse('unknown_hold', 'no hold ' .. token .. ' in event ' .. K.id)
end

-- An order's record (field o:<order>).
local function order_of(text)
  local holder, zone, token, paid_at, cancelled, blob =
    match(text, '^(%S+) (%S+) (%S+) (%d+) ([01]) (.*)$')
  return {holder = holder, zone = zone, token = token, paid_at = tonumber(paid_at),
    cancelled = cancelled == '1', flat = unpack_pairs(blob)}
end

local function order_text(o)
  return format('%s %s %s %d %s ', o.holder, o.zone, o.token, o.paid_at,
    o.cancelled and '1' or '0') .. pack_pairs(o.flat)
end

local function order_reply(id, o, version)
  return {1, id, o.holder, o.zone, seats_of(o.flat), o.token, o.paid_at, o.cancelled and 1 or 0, version}
end

-- A holder's counters: field u:<holder> = held seats + HOLD_UNIT * active holds, so that
-- one HINCRBY moves both and answers whether anything is left; field v:<holder> = paid
-- seats. Neither field exists at 0.
local HOLD_UNIT = 67108864 -- 2^26: a holder holds fewer seats than this in one event

local function counts_of(u, v)
  u = u and u + 0 or 0
  local held = u % HOLD_UNIT
  return held, v and v + 0 or 0, (u - held) / HOLD_UNIT
end

-- A counter's value or change as digits (digits), remembered: holders hold the same few
-- numbers of seats, so the same few values recur. Afresh past 1,000.
local COUNTS, counts = {}, 0

local function count_digits(n)
  local text = COUNTS[n]
  if not text then
    text = digits(n)
    if counts >= 1000 then COUNTS, counts = {}, 0 end
    COUNTS[n], counts = text, counts + 1
  end
  return text
end

-- Adds `held` seats and `holds` holds to a holder's counter u:<holder>; deletes the field
-- once it is back at 0, in one HDEL with `gone` (another field to delete), when given.
local function count_holds(K, field, held, holds, gone)
  local at_zero = call('HINCRBY', K.event, field, count_digits(held + HOLD_UNIT * holds)) == 0
  if gone and at_zero then
    call('HDEL', K.event, gone, field)
  elseif gone or at_zero then
    call('HDEL', K.event, gone or field)
  end
end

-- Adds `paid` seats to a holder's counter v:<holder>; deletes the field once it is back at 0.
local function count_paid(K, field, paid)
  if call('HINCRBY', K.event, field, digits(paid)) == 0 then call('HDEL', K.event, field) end
end

-- A counter's new value for HSET (set: its arguments), or its field for HDEL (gone) at 0:
-- the holder's counters are absent at 0 (count_holds, count_paid), and so written
-- together with a record by one HSET.
local function put_count(set, gone, field, value)
  if value == 0 then
    gone[#gone + 1] = field
  else
    set[#set + 1] = field
    set[#set + 1] = digits(value)
  end
end

-- The change log of an event (SeatHoldStore::changes): the stream <prefix>:changes:{event},
-- one entry per step that changed a seat or a count, its id "<version>-0", its fields one
-- or more groups of two: h "<zone> <held> <paid> <state> <expires>", the zone's held and
-- paid counts after the step, the state (0 free, 1 held, 2 paid) and expiry (ms, held
-- only; else 0) of the group's seats; then s, the seats as MessagePack slot-seat pairs,
-- as a hold's record keeps them (a slot may be 0: only the seats are read), so that a hot
-- step copies its hold's <pairs> whole and writes no number it has not as text already.
-- A general-admission zone's group has no seats (s empty): its change is its counts.
-- changes.lua makes one change of each seat (or such zone) with its group's counts, free
-- being the zone's capacity less held and paid.
--
-- XADD trims the stream approximately (MAXLEN ~: whole nodes of it, which costs a step
-- next to nothing, where an exact trim rewrites the oldest node at every step), so it may
-- keep more than K.log_limit entries (ARGV log_limit of every function that can write:
-- arg_log); changes.lua answers as if it kept exactly the last K.log_limit.
--
-- The counts cost no command of their own: the event hash's field c:<zone> holds the
-- zone's held seats, which every step that holds seats or ends holds reads and writes with
-- the fields it reads and writes anyway; then free = capacity - held - paid (p:<zone>). An
-- event stored before that field existed has none: a step counts the zone's seats from its
-- sets instead (zone_counts_now), before it writes, and from then on the field is there.
-- The field x:<zone>:<seat> of a held seat of a named zone holds its hold's expiry (what
-- seats_page.lua answers for a held seat), written and deleted with the hold's record.

-- Checks ARGV[i], the change log limit of the calling backend (RedisOptions), for K.
local function arg_log(i, K)
  arg_int(i, 'change log limit', 1, MAX_PLACES)
  K.log_limit = ARGV[i]
end

-- A zone's counts now, from its sets (the free set, the next place of a general-admission
-- zone, p:<zone>): free, held, paid, and whether it is general admission.
local function zone_counts_now(K, zone)
  local zf = call('HMGET', K.event, 'z:' .. zone, 'p:' .. zone, 'n:' .. zone)
  local kind, capacity = zone_of(zf[1])
  local free = call('ZCARD', K:free(zone))
  local ga = kind == 'general_admission'
  if ga then free = free + capacity - tonumber(zf[3]) + 1 end
  local paid = tonumber(zf[2] or '0')
  return free, capacity - free - paid, paid, ga
end

-- The held seats of `zone` before a step changes them: `c`, its field c:<zone> as read
-- (false while absent), or counted from the zone's sets, before the step writes any.
local function held_before(K, zone, c)
  if c then return c + 0 end
  local _, held = zone_counts_now(K, zone)
  return held
end

-- A zone's counts after a step (free, held, paid, and whether it is general admission),
-- from its fields z:, p: and c: (zone_counts_now while c: is absent).
local function zone_counts(K, zone)
  local zf = call('HMGET', K.event, 'z:' .. zone, 'p:' .. zone, 'c:' .. zone)
  if not zf[3] then return zone_counts_now(K, zone) end
  local kind, capacity = zone_of(zf[1])
  local paid, held = tonumber(zf[2] or '0'), zf[3] + 0
  return capacity - held - paid, held, paid, kind == 'general_admission'
end

-- The fields x:<zone>:<seat> of the seats of slot-seat pair list `flat`, appended to
-- `fields`, each followed by `at` when given (HSET's arguments; else HDEL's).
local function held_fields(fields, zone, flat, at)
  local prefix = 'x:' .. zone .. ':'
  for i = 2, #flat, 2 do
    fields[#fields + 1] = prefix .. flat[i]
    if at then fields[#fields + 1] = at end
  end
  return fields
end

-- Appends the entry of a step of one group (above; every argument text) to the log as the
-- entry of version `version_at`.
local function log_entry(K, version_at, zone, held, paid, state, expires, blob)
  call('XADD', K.log, 'MAXLEN', '~', K.log_limit, version_at .. '-0',
    'h', zone .. ' ' .. held .. ' ' .. paid .. ' ' .. state .. ' ' .. expires, 's', blob)
end

-- The changes of the step under way, by zone, in the order first touched (write_log).
local function new_log()
  return {zones = {}, order = {}}
end

-- Notes that `seat` of `zone` is now in `state` (0 free, 1 held, 2 paid; expires: ms,
-- when held). The last note of a seat in one step wins.
local function touch(L, zone, seat, state, expires)
  local z = L.zones[zone]
  if not z then
    z = {seats = {}, list = {}}
    L.zones[zone] = z
    L.order[#L.order + 1] = zone
  end
  if not z.seats[seat] then z.list[#z.list + 1] = seat end
  z.seats[seat] = {state, expires or 0}
end

-- Notes every seat of slot-seat pair list `flat` (of `zone`) as being in `state`.
local function touch_all(L, zone, flat, state, expires)
  for i = 2, #flat, 2 do touch(L, zone, flat[i], state, expires) end
end

-- Appends the step's changes (L) to the log as the entry of `version`; nothing when the
-- step changed no seat. Each zone's counts are read after the step (zone_counts).
local function write_log(K, L, version)
  if #L.order == 0 then return end
  local groups = {}
  for _, zone in ipairs(L.order) do
    local _, held, paid, ga = zone_counts(K, zone)
    local head = zone .. ' ' .. digits(held) .. ' ' .. digits(paid) .. ' '
    if ga then
      groups[#groups + 1] = 'h'
      groups[#groups + 1] = head .. '0 0'
      groups[#groups + 1] = 's'
      groups[#groups + 1] = ''
    else
      -- One group per run of seats in the same state with the same expiry, in order.
      local z = L.zones[zone]
      local state, expires, pairs = nil, nil, {}
      local function close()
        if #pairs > 0 then
          groups[#groups + 1] = 'h'
          groups[#groups + 1] = head .. state .. ' ' .. digits(expires)
          groups[#groups + 1] = 's'
          groups[#groups + 1] = pack_pairs(pairs)
        end
      end
      for _, seat in ipairs(z.list) do
        local st = z.seats[seat]
        if st[1] ~= state or st[2] ~= expires then
          close()
          state, expires, pairs = st[1], st[2], {}
        end
        pairs[#pairs + 1] = 0
        pairs[#pairs + 1] = seat
      end
      close()
    end
  end
  call('XADD', K.log, 'MAXLEN', '~', K.log_limit, digits(version) .. '-0', unpack(groups))
end

-- Gives back the seats of active hold h (hold_of): they are free again (noted in the step's
-- log L), without their expiries, and the zone's held count and the holder's counters
-- drop.
local function free_hold_seats(K, h, L)
  local zone, n = h.zone, #h.flat / 2
  local zf = call('HMGET', K.event, 'z:' .. zone, 'c:' .. zone)
  local held = held_before(K, zone, zf[2]) - n
  chunked('ZADD', K:free(zone), h.flat)
  if sub(zf[1], 1, 6) == 'named ' then chunked('HDEL', K.event, held_fields({}, zone, h.flat)) end
  call('HSET', K.event, 'c:' .. zone, digits(held))
  touch_all(L, zone, h.flat, 0)
  count_holds(K, 'u:' .. h.holder, -n, -1)
end

-- Ends active hold h (hold_of) as if it expired at `now`: its seats are free
-- (free_hold_seats), its record says expired (at `now` at the latest) and its expiry is
-- queued for expired(). Its timer is the caller's to remove (the sweep's ZREM, or
-- restore_order's).
local function end_hold(K, token, h, now, L)
  free_hold_seats(K, h, L)
  h.status = 'expired'
  h.expires = math.min(h.expires, now)
  call('HSET', K.event, 'h:' .. token, hold_text(h))
  call('ZADD', K.expired, now, token)
end

-- Runs the timer of one hold (sweep): an active hold expires (end_hold), a released one's
-- memory ends. Returns true when it expired an active hold.
local function expire_hold(K, token, now, L)
  local text = call('HGET', K.event, 'h:' .. token)
  if not text then return false end
  local h = hold_of(text)
  -- A released hold's timer is the end of its memory.
  if h.status == 'released' then
    forget_hold(K, token, h)
    return false
  end
  if h.status ~= 'held' then return false end
  end_hold(K, token, h, now, L)
  return true
end

-- Runs the event's timers that are due (the sorted set "deadlines"): a member <token> is
-- an active hold's deadline (expire_hold) or a released hold's end of memory, a member
-- f:<token> the time to forget an expired hold whose expiry was acknowledged. `due` is
-- the event's "due" field, no later than any timer: while it lies ahead, which is nearly
-- always, the sweep costs nothing. Afterwards "due" is the earliest timer left; the
-- event's version is one higher when an active hold expired (as HoldTable's sweep does
-- it), and the log has the step's changes. Returns true when timers were due: the caller reads again what it read of the
-- event hash.
local function sweep(K, now, due)
  if not due or due + 0 > now then return false end
  local expired, L = false, new_log()
  while true do
    local entries = call('ZRANGEBYSCORE', K.deadlines, '-inf', now, 'LIMIT', 0, 500)
    if #entries == 0 then break end
    for _, entry in ipairs(entries) do
      if sub(entry, 1, 2) == 'f:' then
        local token = sub(entry, 3)
        local text = call('HGET', K.event, 'h:' .. token)
        -- A hold confirmed late is kept with its order.
        if text and status_word(text) == 'expired' then forget_hold(K, token, hold_of(text)) end
      elseif expire_hold(K, entry, now, L) then
        expired = true
      end
    end
    chunked('ZREM', K.deadlines, entries)
  end
  if expired then write_log(K, L, raise_version(K)) end
  local first = call('ZRANGE', K.deadlines, 0, 0, 'WITHSCORES')
  if first[2] then
    call('HSET', K.event, 'due', first[2])
  else
    call('HDEL', K.event, 'due')
  end
  return true
end

-- The refusal for a call that needs an active hold.
local function inactive(token, h)
  if h.status == 'expired' then
    return refuse('hold_expired', 'hold ' .. token .. ' expired', seats_of(h.flat))
  elseif h.status == 'confirmed' then
    return refuse('hold_not_active', 'hold ' .. token .. ' was confirmed as order ' .. h.order)
  elseif h.status == 'released' then
    return refuse('hold_not_active', 'hold ' .. token .. ' was released')
  end
  return refuse('hold_not_active', 'hold ' .. token .. ' is not active')
end

-- The holder limits, in the order of HoldTable::check_limits, on the holder's counters:
-- the refusal, or nil.
local function check_limits(event, holder, held, paid, holds, n, max_seats, one_active)
  if one_active and holds > 0 then
    return refuse('active_hold_exists',
      'holder ' .. holder .. ' already has an active hold in event ' .. event)
  end
  local has = held + paid
  if max_seats > 0 and has + n > max_seats then
    return refuse('limit_exceeded',
      'holder ' .. holder .. ' has ' .. has .. ' seats in event ' .. event .. ' and asked for ' ..
      n .. ' more; the limit is ' .. max_seats, {}, max_seats, has)
  end
  return nil
end
