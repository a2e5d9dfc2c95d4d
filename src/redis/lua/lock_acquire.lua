-- lock_acquire.lua: takes every key for `owner` until now + lease, or none of them
-- (LockTable::acquire). Taking keys the owner already holds is a retry and succeeds.
-- KEYS: n lock keys (<prefix>:lock:{group}...), then the fence:{group} key of each group
--! ARGV owner lease n
-- owner: 32 hex digits; lease: ms; n: how many lock keys
-- Returns the fencing token (an integer, at least 1), or the indexes of the keys held by
-- others (an array).
-- Keys of one group run n + 2 commands: MGET, INCR of the fence, one SET per key.
arg_count(@argc, 'lock_acquire')
local owner = arg_owner(@owner)
local lease = arg_lease(@lease)
local n = arg_int(@n, 'lock key count', 1, #KEYS - 1)
-- Every lock key's group must come with its fence key, and only those.
if #KEYS == n + 1 then
  -- One group, the usual case: one fence key, and every lock key of its group.
  local head = lock_head_of(KEYS[n + 1])
  if not head then malformed('KEYS[' .. (n + 1) .. '] is not a new fence key') end
  local bad = bad_lock_key(n, head)
  if bad then malformed('KEYS[' .. bad .. '] is a lock key without its fence key') end
else
  -- Several groups: each lock key's start pairs with one fence key's (lock_head_of).
  local heads, fence_at = {}, {}
  for f = n + 1, #KEYS do
    local head = lock_head_of(KEYS[f])
    if not head or heads[head] ~= nil then malformed('KEYS[' .. f .. '] is not a new fence key') end
    heads[head], fence_at[head] = false, f
  end
  for k = 1, n do
    local head = lock_start_of(KEYS[k])
    if not head or heads[head] == nil then malformed('KEYS[' .. k .. '] is a lock key without its fence key') end
    heads[head] = true
  end
  for head, used in pairs(heads) do
    if not used then malformed('KEYS[' .. fence_at[head] .. '] is a fence key without a lock key') end
  end
end

local current = mget_keys(n)
local busy -- made only for a refusal
for k = 1, n do
  if current[k] and current[k] ~= owner then
    busy = busy or {}
    busy[#busy + 1] = k
  end
end
if busy then return busy end

-- One counter per group. When the keys span several groups, every counter touched moves
-- to the same new maximum, so each group's tokens still strictly increase.
local token
if #KEYS == n + 1 then
  token = call('INCR', KEYS[n + 1])
else
  token = 0
  for f = n + 1, #KEYS do token = math.max(token, tonumber(call('GET', KEYS[f]) or '0')) end
  token = token + 1
  for f = n + 1, #KEYS do call('SET', KEYS[f], token) end
end
for k = 1, n do call('SET', KEYS[k], owner, 'PX', lease) end
return token
