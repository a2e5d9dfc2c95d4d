-- A hand-written flow's unlock: delete a lock key only while it still holds this owner's token
-- (the compare-and-delete of Redisson and of hand-rolled SET NX PX locks).
-- KEYS[1] = lock key, ARGV[1] = owner token. Returns 1 when deleted, 0 otherwise.
if redis.call('get', KEYS[1]) == ARGV[1] then
    return redis.call('del', KEYS[1])
end
return 0
