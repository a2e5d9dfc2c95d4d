-- lock_release.lua: frees the keys still held by `owner` (LockTable::release). Keys held
-- by anyone else are never touched; a lease that ran out is already gone.
-- KEYS: the lock keys
-- ARGV: owner
-- Returns {1, 1 when the owner still held every key, else 0}.
arg_count(1, 'lock_release')
local owner = ARGV[1]
if not string.find(owner, '^' .. string.rep('[0-9a-f]', 32) .. '$') then malformed('lock owner (ARGV[1])') end
if #KEYS < 1 then malformed('no lock key') end
for k = 1, #KEYS do
  if not string.find(KEYS[k], ':lock:{[^{}]*}') then malformed('KEYS[' .. k .. '] is not a lock key') end
end
local released = 0
for k = 1, #KEYS do
  if redis.call('GET', KEYS[k]) == owner then
    redis.call('DEL', KEYS[k])
    released = released + 1
  end
end
return {1, released == #KEYS and 1 or 0}
