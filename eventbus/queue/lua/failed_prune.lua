-- Delete the failed job records that failed at or before a cutoff (seconds), or all of them
-- when the cutoff is '+inf'. Returns how many were removed.
-- KEYS: records, index   ARGV: cutoff
local uuids = redis.call('zrangebyscore', KEYS[2], '-inf', ARGV[1])
local removed = 0
for i = 1, #uuids, 100 do
  local j = math.min(i + 99, #uuids)
  removed = removed + redis.call('hdel', KEYS[1], unpack(uuids, i, j))
  redis.call('zrem', KEYS[2], unpack(uuids, i, j))
end
return removed
