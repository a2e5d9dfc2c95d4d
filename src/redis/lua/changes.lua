-- changes.lua: the changes of an event after a version, from its change log (HoldEvent's
-- changes_after; the log is common_records.lua's, write_log), after the sweep every call
-- runs. At most `limit` changes, but never part of one step (a bigger step comes whole,
-- alone).
-- KEYS: the event keys
--! ARGV prefix event after history limit log_limit
-- Returns {1, version, more, {zone, capacity, ...}, {entry version, groups, {head, seats}
-- per group, ...}, history}: the log's entries after `after` as stored (a group's head "<zone>
-- <held> <paid> <state> <expires>", its seats the MessagePack of slot-seat pairs, empty for
-- the zone's counts alone) with the capacity of each zone they name; applying them to the
-- state at `after` gives the state at `version`; more is 1 when later changes exist. Or a
-- refusal: unknown_event (also while hidden), invalid_argument for `after` above the
-- event's version, changes_trimmed when the log no longer holds every change after it or
-- `history` ('' for any) is not the event's (field h, '0' on an event stored before
-- histories: a recovery since gave it another, event_show.lua). The log holds the changes of its last log_limit
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
local history = arg_history(@history, true)
check_keys(K)

local now = now_ms()
local ev = call('HMGET', K.event, 'id', 'due', 'ver', 'lr', 'h')
if not ev[1] then return refuse('unknown_event', 'no event ' .. event, {event}) end
if sweep(K, now, ev[2]) then ev = call('HMGET', K.event, 'id', 'due', 'ver', 'lr', 'h') end
if history and (ev[5] or '0') ~= history then
  return refuse('changes_trimmed', 'event ' .. event .. ' was recovered since the version ' ..
    digits(after) .. ' was read (another history): read its seats again', {event})
end
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

-- The entries as stored, each whole: the caller decodes them (codecs/seat_map.hpp).
local out, capacities, count, more, last = {}, {}, 0, 0, version
local from = '(' .. digits(after) .. '-0'
while more == 0 do
  -- Every entry holds one change or more: limit - count + 1 entries are all this call can
  -- answer, and the one past them tells whether there are more.
  local want = math.min(100, limit - count + 1)
  local entries = call('XRANGE', K.log, from, '+', 'COUNT', want)
  for _, entry in ipairs(entries) do
    -- The entry (common_records.lua, write_log): groups of a zone's counts and seats in
    -- one state; one change per seat, or the zone's (no seats).
    local fields, n = entry[2], 0
    for g = 4, #fields, 4 do
      local blob = fields[g]
      n = n + (blob == '' and 1 or #unpack_pairs(blob) / 2)
    end
    if count > 0 and count + n > limit then
      more = 1
      break
    end
    count = count + n
    local v = tonumber(match(entry[1], '^%d+'))
    out[#out + 1] = v
    out[#out + 1] = #fields / 4
    for g = 2, #fields, 4 do
      local zone = match(fields[g], '^%S+')
      if not capacities[zone] then
        local _, capacity = zone_of(call('HGET', K.event, 'z:' .. zone))
        capacities[zone] = capacity
      end
      out[#out + 1] = fields[g]
      out[#out + 1] = fields[g + 2]
    end
    last = v
    from = '(' .. entry[1]
  end
  if #entries < want then break end
end
if more == 0 then last = version end
local zones = {}
for zone, capacity in pairs(capacities) do
  zones[#zones + 1] = zone
  zones[#zones + 1] = capacity
end
return {1, last, more, zones, out, ev[5] or '0'}
