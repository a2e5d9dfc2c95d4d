#!lua name=seatlock_bench_floor
-- The floor: the Redis commands seatlock's hold and release of 3 named seats run
-- (src/redis/lua/hold.lua, release.lua), in the same order, on the same event data, and
-- nothing else: no argument or key checks, no refusals, no sweep of due timers. Its rows
-- tell how much of seatlock's server time the commands themselves take; the rest is
-- seatlock's own Lua. Callers hold one hold at a time on seats of their own, so every
-- branch the real functions take here is known in advance.
-- KEYS: the event hash, the deadlines set, the zone's free set (seatlock/redis/key_layout.hpp's names).

-- hold: ARGV = token, holder, zone, then exactly 3 seats.
-- Returns ZREM's reply, the seats taken off the free set: 3 unless the data is wrong.
redis.register_function('seatlock_bench_floor_hold', function(keys, args)
  local t = redis.call('TIME')
  local now = t[1] * 1000 + math.floor(t[2] / 1000)
  local token, holder, zone = args[1], args[2], args[3]
  redis.call('HMGET', keys[1], 'id', 'due', 'z:' .. zone, 'h:' .. token, 'u:' .. holder,
    'v:' .. holder)
  local slots = redis.call('ZMSCORE', keys[3], args[4], args[5], args[6])
  local taken = redis.call('ZREM', keys[3], args[4], args[5], args[6])
  local expires = now + 600000 -- HoldPolicy's default hold_ttl, as in the redis rows
  -- The hold record and the holder's counter as hold.lua writes them: 3 held seats plus
  -- one active hold (HOLD_UNIT = 2^26).
  redis.call('HSET', keys[1],
    'h:' .. token, string.format('held %s %s %d %d ', holder, zone, now, expires) ..
      cmsgpack.pack(slots[1], args[4], slots[2], args[5], slots[3], args[6]),
    'u:' .. holder, 3 + 67108864)
  redis.call('ZADD', keys[2], expires, token)
  return taken
end)

-- release: ARGV = token.
-- Returns ZADD's reply, the seats put back on the free set: 3 unless the data is wrong.
redis.register_function('seatlock_bench_floor_release', function(keys, args)
  redis.call('TIME')
  local token = args[1]
  local hold_field = 'h:' .. token
  local ev = redis.call('HMGET', keys[1], 'id', 'due', hold_field)
  -- The one piece of parsing the floor needs: whose counter, and which seats go back.
  local holder, blob = string.match(ev[3], '^%S+ (%S+) %S+ %d+ %d+ (.*)$')
  redis.call('ZREM', keys[2], token)
  local freed = redis.call('ZADD', keys[3], cmsgpack.unpack(blob))
  local counts_field = 'u:' .. holder
  if redis.call('HINCRBY', keys[1], counts_field, -(3 + 67108864)) == 0 then
    redis.call('HDEL', keys[1], hold_field, counts_field)
  else
    redis.call('HDEL', keys[1], hold_field)
  end
  return freed
end)
