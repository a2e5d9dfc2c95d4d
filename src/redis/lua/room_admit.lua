-- room_admit.lua: one admission step (RoomTable's admit): up to `limit` admitted or active
-- visitors past their deadline lapse, then the first of the line are admitted, as many as
-- the rate's credit (kept up to one second's worth, at least 1), the free slots and
-- `limit` allow. Nothing is admitted before opening.
-- KEYS: room, line, active (common_rooms.lua)
--! ARGV prefix room limit
-- Returns {1, {admitted visitors}, lapsed, active, waiting} or unknown_room.
arg_count(@argc, 'room_admit')
local room = room_args(@prefix, @room)
local limit = arg_int(@limit, 'admit limit', 1, 1000)
local got = call('HMGET', KEYS[1], 'cfg', 'credit', 'at')
local c = room_config_of(got[1])
if not c then return no_room(room) end
local now = now_ms()

local due = call('ZRANGEBYSCORE', KEYS[3], '-inf', now, 'LIMIT', 0, limit)
if #due > 0 then
  local fields = {}
  for i = 1, #due do fields[i] = 'v:' .. due[i] end
  local records = call('HMGET', KEYS[1], unpack(fields))
  local pairs_ = {}
  for i = 1, #due do
    local v = visitor_of(records[i])
    pairs_[#pairs_ + 1] = fields[i]
    pairs_[#pairs_ + 1] = visitor_text('l', v, v.deadline)
  end
  call('ZREM', KEYS[3], unpack(due))
  call('HSET', KEYS[1], unpack(pairs_))
end

local admitted = {}
if now >= c.opens then
  local credit, at = tonumber(got[2]) or 0, tonumber(got[3]) or c.opens
  if now > at then
    credit = math.min(math.max(1, c.rate), credit + (now - at) * c.rate / 1000)
    at = now
  end
  local free = c.max - call('ZCARD', KEYS[3])
  local n = math.min(math.floor(credit), free, limit)
  if n > 0 then
    local popped = call('ZPOPMIN', KEYS[2], n)
    local fields, scored = {}, {}
    local deadline = now + c.no_show
    local when = digits(deadline)
    for i = 1, #popped, 2 do
      admitted[#admitted + 1] = popped[i]
      fields[#fields + 1] = 'v:' .. popped[i]
      scored[#scored + 1] = when
      scored[#scored + 1] = popped[i]
    end
    if #admitted > 0 then
      local records = call('HMGET', KEYS[1], unpack(fields))
      local pairs_ = {}
      for i = 1, #admitted do
        pairs_[#pairs_ + 1] = fields[i]
        pairs_[#pairs_ + 1] = visitor_text('a', visitor_of(records[i]), deadline)
      end
      call('HSET', KEYS[1], unpack(pairs_))
      call('ZADD', KEYS[3], unpack(scored))
      credit = credit - #admitted
    end
  end
  call('HSET', KEYS[1], 'credit', format('%.17g', credit), 'at', digits(at))
end
return {1, admitted, #due, call('ZCARD', KEYS[3]), call('ZCARD', KEYS[2])}
