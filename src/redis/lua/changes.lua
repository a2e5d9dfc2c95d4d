-- changes.lua: the changes of an event after a version, from its change log (HoldEvent's
-- changes_after; the log is common_records.lua's, write_log), after the sweep every call
-- runs. At most `limit` changes, but never part of one step (a bigger step comes whole,
-- alone).
-- KEYS: the event keys
--! ARGV prefix event after limit log_limit
-- Returns {1, version, more, {version, zone, seat, state, expires, free, held, paid, ...}}:
-- applying the changes to the state at `after` gives the state at `version`; more is 1
-- when later changes exist. Or a refusal: unknown_event (also while hidden),
-- invalid_argument for `after` above the event's version, changes_trimmed when the log no
-- longer holds every change after it. The log holds the changes of its last log_limit
-- entries: XADD trims it approximately (common_records.lua), so entries older than those
-- may still be stored, and are not answered; it holds those after the version just before
-- its oldest stored entry once it was ever trimmed, and none from before a recovery (field
-- lr).
arg_count(@argc, 'changes')
local K = arg_event(@prefix, @event)
arg_log(@log_limit, K)
local event = ARGV[@event]
local after = arg_int(@after, 'version after', 0, 2 ^ 53 - 1)
local limit = arg_int(@limit, 'limit', 1, MAX_PLACES)
check_keys(K)

local now = now_ms()
local ev = call('HMGET', K.event, 'id', 'due', 'ver', 'lr')
if not ev[1] then return refuse('unknown_event', 'no event ' .. event, {event}) end
if sweep(K, now, ev[2]) then ev = call('HMGET', K.event, 'id', 'due', 'ver', 'lr') end
local version = ev[3] and ev[3] + 0 or 0
if after > version then
  return refuse('invalid_argument', 'version ' .. digits(after) .. ' is above event ' .. event ..
    "'s version " .. digits(version))
end
local floor = ev[4] and ev[4] + 0 or 0
local info = redis.pcall('XINFO', 'STREAM', K.log)
if type(info) == 'table' and not info.err then
  local length, added, first, last = 0, 0, false, false
  for i = 1, #info, 2 do
    local name = info[i]
    if name == 'length' then
      length = info[i + 1]
    elseif name == 'entries-added' then
      added = info[i + 1]
    elseif name == 'first-entry' then
      first = info[i + 1]
    elseif name == 'last-entry' then
      last = info[i + 1]
    end
  end
  if added > length and first then
    floor = math.max(floor, tonumber(match(first[1], '^%d+')) - 1)
  end
  -- Past log_limit entries, the log is the last log_limit: the changes after the version
  -- of the newest entry before them (`old`, the extra entries: fewer than a node of the
  -- stream holds, once a write trimmed it). Each of those last entries has its own version,
  -- so that one is at most the newest's minus log_limit: an `after` no older needs no look.
  local log_limit = K.log_limit + 0
  if length > log_limit and last and after < tonumber(match(last[1], '^%d+')) - log_limit then
    local old = call('XRANGE', K.log, '-', '+', 'COUNT', length - log_limit)
    floor = math.max(floor, tonumber(match(old[#old][1], '^%d+')))
  end
end
if after < floor then
  return refuse('changes_trimmed', 'the change log of event ' .. event ..
    ' keeps the changes after version ' .. digits(floor) .. ', not after ' .. digits(after), {event})
end

-- The zones' capacities (free = capacity - held - paid), read once per call.
local out, count, more, last, capacities = {}, 0, 0, version, {}
local from = '(' .. digits(after) .. '-0'
while more == 0 do
  local entries = call('XRANGE', K.log, from, '+', 'COUNT', 100)
  for _, entry in ipairs(entries) do
    -- The entry (common_records.lua): groups of a zone's counts and seats in one state;
    -- one change per seat, or the zone's (no seats).
    local fields, changes = entry[2], {}
    for g = 2, #fields, 4 do
      local zone, held, paid, state, expires = match(fields[g], '^(%S+) (%d+) (%d+) (%d) (%d+)$')
      local capacity = capacities[zone]
      if not capacity then
        local _, zone_capacity = zone_of(call('HGET', K.event, 'z:' .. zone))
        capacity = zone_capacity
        capacities[zone] = capacity
      end
      held, paid, state, expires = held + 0, paid + 0, state + 0, expires + 0
      local free, blob, k = capacity - held - paid, fields[g + 2], #changes
      if blob == '' then
        changes[k + 1], changes[k + 2], changes[k + 3], changes[k + 4] = zone, '', 0, 0
        changes[k + 5], changes[k + 6], changes[k + 7] = free, held, paid
      else
        local pairs = unpack_pairs(blob)
        for i = 2, #pairs, 2 do
          changes[k + 1], changes[k + 2], changes[k + 3], changes[k + 4] = zone, pairs[i], state, expires
          changes[k + 5], changes[k + 6], changes[k + 7] = free, held, paid
          k = k + 7
        end
      end
    end
    local n = #changes / 7
    if count > 0 and count + n > limit then
      more = 1
      break
    end
    local v = tonumber(match(entry[1], '^%d+'))
    for i = 1, #changes, 7 do
      local k = #out
      out[k + 1], out[k + 2], out[k + 3], out[k + 4] = v, changes[i], changes[i + 1], changes[i + 2]
      out[k + 5], out[k + 6], out[k + 7], out[k + 8] = changes[i + 3], changes[i + 4], changes[i + 5], changes[i + 6]
    end
    count, last = count + n, v
    from = '(' .. entry[1]
  end
  if #entries < 100 then break end
end
if more == 0 then last = version end
return {1, last, more, out}
