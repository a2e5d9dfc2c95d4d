-- lock_release.lua: frees the keys still held by `owner` (LockTable::release). Keys held
-- by anyone else are never touched; a lease that ran out is already gone.
-- KEYS: the lock keys
--! ARGV owner
-- Returns 1 when the owner still held every key, else 0.
-- Runs 2 commands: MGET, then one DEL of the keys the owner holds.
arg_count(@argc, 'lock_release')
local owner = arg_owner(@owner)
local n, current = held_lock_keys()
local owned = 0
for k = 1, n do
  if current[k] == owner then owned = owned + 1 end
end
local mine = KEYS -- nearly always: no new table
if owned < n then
  mine = {}
  for k = 1, n do
    if current[k] == owner then mine[#mine + 1] = KEYS[k] end
  end
end
-- DEL counts a key named twice once, as a second GET after a DEL would.
local released = 0
if #mine <= 1000 then
  if #mine > 0 then released = call('DEL', unpack(mine)) end
else
  for i = 1, #mine, 1000 do
    released = released + call('DEL', unpack(mine, i, math.min(i + 999, #mine)))
  end
end
return released == n and 1 or 0
