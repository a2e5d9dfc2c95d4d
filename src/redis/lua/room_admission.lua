-- room_admission.lua: a visitor collects the admission (RoomTable's admission): admitted
-- -> active until now + admission_ttl; active -> the same expiry again.
-- KEYS: room, line, active (common_rooms.lua)
--! ARGV prefix room visitor
-- Returns {1, expiry ms} or not_admitted, unknown_room, not_in_queue.
arg_count(@argc, 'room_admission')
local room, c, visitor, v = room_visitor(@prefix, @room, @visitor)
if not room then return c end
local now = now_ms()
local state = state_at(v, now)
if state == 'active' then return {1, v.deadline} end
if state ~= 'admitted' then
  if v.state == 'a' or v.state == 's' then lapse(visitor, v) end
  return refuse('not_admitted', 'visitor ' .. visitor .. ' of room ' .. room .. ' is ' .. state .. ', not admitted')
end
local expiry = now + c.ttl
call('HSET', KEYS[1], 'v:' .. visitor, visitor_text('s', v, expiry))
call('ZADD', KEYS[3], digits(expiry), visitor)
return {1, expiry}
