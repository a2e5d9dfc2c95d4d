-- room_join.lua: puts a visitor in a room's line, once (RoomTable's join_room). Before
-- opening the visitor's key is the draw's: the first 52 bits of SHA-1("<seed> <visitor>")
-- over 2^52, in [0, 1); after it, the next arrival number, from 1 on.
-- KEYS: room, line, active (common_rooms.lua)
--! ARGV prefix room visitor
-- Returns {1, joined_at ms, in draw 0/1, replayed 0/1} or unknown_room.
-- Runs 5 commands for a new visitor (HMGET, TIME, HINCRBY after opening, ZADD, HSET).
arg_count(@argc, 'room_join')
local room = room_args(@prefix, @room)
local visitor = arg_id(@visitor, 'visitor id')
local got = call('HMGET', KEYS[1], 'cfg', 'seed', 'v:' .. visitor)
local c = room_config_of(got[1])
if not c then return no_room(room) end
local v = visitor_of(got[3])
if v then return {1, v.joined, v.in_draw and 1 or 0, 1} end

local now = now_ms()
local key
v = {joined = now, in_draw = now < c.opens}
if v.in_draw then
  key = format('%.17g', tonumber(sub(redis.sha1hex(got[2] .. ' ' .. visitor), 1, 13), 16) / 2 ^ 52)
else
  key = digits(call('HINCRBY', KEYS[1], 'n', 1))
end
call('ZADD', KEYS[2], key, visitor)
call('HSET', KEYS[1], 'v:' .. visitor, visitor_text('w', v, 0))
return {1, now, v.in_draw and 1 or 0, 0}
