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
-- longer holds every change after it: it holds those after the version just before its
-- oldest entry once it was ever trimmed, and none from before a recovery (field lr).
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
  local length, added, first = 0, 0, false
  for i = 1, #info, 2 do
    local name = info[i]
    if name == 'length' then
      length = info[i + 1]
    elseif name == 'entries-added' then
      added = info[i + 1]
    elseif name == 'first-entry' then
      first = info[i + 1]
    end
  end
  if added > length and first then
    floor = math.max(floor, tonumber(match(first[1], '^%d+')) - 1)
  end
end
if after < floor then
  return refuse('changes_trimmed', 'the change log of event ' .. event ..
    ' keeps the changes after version ' .. digits(floor) .. ', not after ' .. digits(after), {event})
end

local out, count, more, last = {}, 0, 0, version
local from = '(' .. digits(after) .. '-0'
while more == 0 do
  local entries = call('XRANGE', K.log, from, '+', 'COUNT', 100)
  for _, entry in ipairs(entries) do
    local flat = unpack_pairs(entry[2][2])
    local n = #flat / 7
    if count > 0 and count + n > limit then
      more = 1
      break
    end
    local v = tonumber(match(entry[1], '^%d+'))
    for i = 1, #flat, 7 do
      local k = #out
      out[k + 1], out[k + 2], out[k + 3], out[k + 4] = v, flat[i], flat[i + 1], flat[i + 2]
      out[k + 5], out[k + 6], out[k + 7], out[k + 8] = flat[i + 3], flat[i + 4], flat[i + 5], flat[i + 6]
    end
    count, last = count + n, v
    from = '(' .. entry[1]
  end
  if #entries < 100 then break end
end
if more == 0 then last = version end
return {1, last, more, out}
