-- room_finished.lua: a visitor is done (RoomTable's finished): its slot, or its place in
-- line, is freed. A finished or lapsed visitor stays so.
-- KEYS: room, line, active (common_rooms.lua)
--! ARGV prefix room visitor
-- Returns {1} or unknown_room, not_in_queue.
arg_count(@argc, 'room_finished')
local room, c, visitor, v = room_visitor(@prefix, @room, @visitor)
if not room then return c end
local state = state_at(v, now_ms())
if state == 'finished' then return {1} end
if state == 'lapsed' then
  if v.state ~= 'l' then lapse(visitor, v) end
  return {1}
end
call('ZREM', state == 'waiting' and KEYS[2] or KEYS[3], visitor)
call('HSET', KEYS[1], 'v:' .. visitor, visitor_text('f', v, v.deadline))
return {1}
