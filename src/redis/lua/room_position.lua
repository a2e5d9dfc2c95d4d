-- room_position.lua: where a visitor stands (RoomTable's room_position). Writes nothing:
-- a visitor past its deadline reads as lapsed. The place is a ZRANK: O(log n).
-- KEYS: room, line, active (common_rooms.lua)
--! ARGV prefix room visitor
-- Returns {1, state, place (-1: none), waiting, estimated wait ms, opens_at ms, deadline ms}
-- or unknown_room, not_in_queue.
arg_count(@argc, 'room_position')
local room, c, visitor, v = room_visitor(@prefix, @room, @visitor)
if not room then return c end
local now = now_ms()
local state = state_at(v, now)
local place, wait, deadline = -1, 0, 0
if state == 'admitted' or state == 'active' then deadline = v.deadline end
if state == 'waiting' then
  if now < c.opens then
    wait = c.opens - now
  else
    place = call('ZRANK', KEYS[2], visitor) + 1
    wait = math.ceil(place * 1000 / c.rate)
  end
end
return {1, state, place, call('ZCARD', KEYS[2]), wait, c.opens, deadline}
