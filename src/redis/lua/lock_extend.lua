-- lock_extend.lua: moves every key's expiry to now + lease if `owner` still holds all of
-- them; otherwise changes nothing (LockTable::extend).
-- KEYS: the lock keys
-- ARGV: owner, lease_ms
-- Returns {1, 1 when extended, else 0}.
arg_count(2, 'lock_extend')
local owner = ARGV[1]
if not string.find(owner, '^' .. string.rep('[0-9a-f]', 32) .. '$') then malformed('lock owner (ARGV[1])') end
local lease = arg_int(2, 'lease', 1, MAX_MS)
if #KEYS < 1 then malformed('no lock key') end
for k = 1, #KEYS do
  if not string.find(KEYS[k], ':lock:{[^{}]*}') then malformed('KEYS[' .. k .. '] is not a lock key') end
end
for k = 1, #KEYS do
  if redis.call('GET', KEYS[k]) ~= owner then return {1, 0} end
end
for k = 1, #KEYS do redis.call('PEXPIRE', KEYS[k], lease) end
return {1, 1}
