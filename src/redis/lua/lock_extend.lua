-- lock_extend.lua: moves every key's expiry to now + lease if `owner` still holds all of
-- them; otherwise changes nothing (LockTable::extend).
-- KEYS: the lock keys
--! ARGV owner lease
-- lease: ms
-- Returns 1 when extended, else 0.
-- Runs MGET, then one PEXPIRE per key.
arg_count(@argc, 'lock_extend')
local owner = arg_owner(@owner)
local lease = arg_lease(@lease)
local n, current = held_lock_keys()
for k = 1, n do
  if current[k] ~= owner then return 0 end
end
for k = 1, n do call('PEXPIRE', KEYS[k], lease) end
return 1
