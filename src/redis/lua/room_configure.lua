-- room_configure.lua: stores a room's configuration (RoomTable's configure_room). The
-- seed is kept from the first configuration on; opens_at cannot change once it passed.
-- KEYS: room, line, active (common_rooms.lua)
--! ARGV prefix room opens_at rate max_active ttl no_show seed seed_given
-- Returns {1} or invalid_argument.
arg_count(@argc, 'room_configure')
local room = room_args(@prefix, @room)
local opens = arg_int(@opens_at, 'opens_at', 0, MAX_MS)
local rate = tonumber(ARGV[@rate])
if not rate or not find(ARGV[@rate], '^[%d%.e+]+$') or rate <= 0 or rate > 1000000 then
  malformed('admit_per_second (ARGV[' .. @rate .. '])')
end
local max_active = arg_int(@max_active, 'max_active', 1, 2 ^ 53)
local ttl = arg_int(@ttl, 'admission_ttl', 1, MAX_MS)
local no_show = arg_int(@no_show, 'no_show_after', 1, MAX_MS)
local seed = arg_id(@seed, 'shuffle seed')
local seed_given = arg_flag(@seed_given, 'seed given')

local now = now_ms()
local got = call('HMGET', KEYS[1], 'cfg', 'seed')
local old = room_config_of(got[1])
if got[2] and seed_given and got[2] ~= seed then
  return refuse('invalid_argument', 'room ' .. room .. ' was configured with another shuffle seed, which it keeps')
end
local cfg = digits(opens) .. ' ' .. ARGV[@rate] .. ' ' .. digits(max_active) .. ' ' .. digits(ttl) ..
  ' ' .. digits(no_show)
if not old then
  call('HSET', KEYS[1], 'cfg', cfg, 'seed', seed, 'credit', '0', 'at', digits(opens), 'n', '0')
elseif old.opens ~= opens then
  if now >= old.opens then
    return refuse('invalid_argument', 'room ' .. room .. ' has opened: its opening time cannot change')
  end
  call('HSET', KEYS[1], 'cfg', cfg, 'credit', '0', 'at', digits(opens))
else
  call('HSET', KEYS[1], 'cfg', cfg)
end
return {1}
