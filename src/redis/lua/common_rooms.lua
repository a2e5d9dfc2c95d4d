-- common_rooms.lua: helpers of the waiting room's functions (room_*.lua), defined once
-- when the library loads, after common.lua's. The rules are those of
-- include/seatlock/detail/room_table.hpp (docs/waiting-room.md).
--
-- A room has three keys, with the room's id as hash tag (one Cluster slot), in this
-- order in every call's KEYS (KeyLayout::room_key):
--   <prefix>:room:{room}    hash: the room's records
--     cfg         "<opens_at ms> <admit_per_second> <max_active> <admission_ttl ms> <no_show_after ms>"
--     seed        the draw's seed, kept from the first configuration on
--     credit, at  the admissions the rate allows, as of `at` (ms)
--     n           visitors who joined after opening (the last arrival number)
--     v:<visitor> "<state> <joined ms> <deadline ms> <in draw: 0 or 1>", state w(aiting),
--                 a(dmitted), s (active: admission collected), f(inished), l(apsed);
--                 deadline: a's to collect, s's the admission's expiry
--   <prefix>:line:{room}    sorted set of the waiting visitors: the draw key in [0, 1)
--                           for who joined before opening, the arrival number after
--   <prefix>:active:{room}  sorted set of the admitted and active visitors, by deadline

-- Checks the prefix, room id and KEYS; returns the room id.
local function room_args(p, r)
  local prefix = arg_prefix(p)
  local room = arg_id(r, 'room id')
  local tag = ':{' .. room .. '}'
  if #KEYS ~= 3 then malformed('expected 3 KEYS (room, line, active), got ' .. #KEYS) end
  if KEYS[1] ~= prefix .. ':room' .. tag then malformed('KEYS[1] should be ' .. prefix .. ':room' .. tag) end
  if KEYS[2] ~= prefix .. ':line' .. tag then malformed('KEYS[2] should be ' .. prefix .. ':line' .. tag) end
  if KEYS[3] ~= prefix .. ':active' .. tag then malformed('KEYS[3] should be ' .. prefix .. ':active' .. tag) end
  return room
end

-- A room's cfg record, read; nil for nil.
local function room_config_of(cfg)
  if not cfg then return nil end
  local opens, rate, max, ttl, no_show = match(cfg, '^(%d+) (%S+) (%d+) (%d+) (%d+)$')
  return {opens = opens + 0, rate = tonumber(rate), max = max + 0, ttl = ttl + 0, no_show = no_show + 0}
end

local function no_room(room)
  return refuse('unknown_room', 'no room ' .. room, {room})
end

-- A visitor's record, read; nil when the visitor never joined.
local function visitor_of(text)
  if not text then return nil end
  local state, joined, deadline, draw = match(text, '^(%a) (%d+) (%d+) ([01])$')
  return {state = state, joined = joined + 0, deadline = deadline + 0, in_draw = draw == '1'}
end

local function visitor_text(state, v, deadline)
  return state .. ' ' .. digits(v.joined) .. ' ' .. digits(deadline) .. (v.in_draw and ' 1' or ' 0')
end

local function not_in_queue(room, visitor)
  return refuse('not_in_queue', 'visitor ' .. visitor .. ' never joined room ' .. room, {visitor})
end

local ROOM_STATES = {w = 'waiting', a = 'admitted', s = 'active', f = 'finished', l = 'lapsed'}

-- The state a visitor stands in at `now`: admitted or active past the deadline is lapsed.
local function state_at(v, now)
  if (v.state == 'a' or v.state == 's') and v.deadline <= now then return 'lapsed' end
  return ROOM_STATES[v.state]
end

-- An admitted or active visitor lapses: the slot is free.
local function lapse(visitor, v)
  call('ZREM', KEYS[3], visitor)
  call('HSET', KEYS[1], 'v:' .. visitor, visitor_text('l', v, v.deadline))
end

-- The visitor's room and record for room_position, room_admission and room_finished:
-- room, config, visitor, record; or nil and the refusal.
local function room_visitor(p, r, i)
  local room = room_args(p, r)
  local visitor = arg_id(i, 'visitor id')
  local got = call('HMGET', KEYS[1], 'cfg', 'v:' .. visitor)
  local c = room_config_of(got[1])
  if not c then return nil, no_room(room) end
  local v = visitor_of(got[2])
  if not v then return nil, not_in_queue(room, visitor) end
  return room, c, visitor, v
end
