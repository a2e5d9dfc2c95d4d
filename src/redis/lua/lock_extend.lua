-- lock_extend.lua: moves every key's expiry to now + lease if `owner` still holds all of
-- them; otherwise changes nothing (LockTable::extend).
-- KEYS: the lock keys
-- ARGV: owner, lease_ms
-- Returns 1 when extended, else 0.
-- Runs MGET, then one PEXPIRE per key.
arg_count(2, 'lock_extend')
local owner = arg_owner(1)
local lease = arg_lease(2)
local n, current = held_lock_keys()
for k = 1, n do
  if current[k] ~= owner then return 0 end
end
for k = 1, n do call('PEXPIRE', KEYS[k], lease) end
return 1
