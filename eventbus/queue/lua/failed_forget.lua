-- Delete the failed job records whose uuids are in ARGV (uuids only: nothing in a uuid is read
-- as a command). Returns how many were removed.
-- KEYS: records, index
local removed = 0
for i = 1, #ARGV, 100 do
  local j = math.min(i + 99, #ARGV)
  removed = removed + redis.call('hdel', KEYS[1], unpack(ARGV, i, j))
  redis.call('zrem', KEYS[2], unpack(ARGV, i, j))
end
return removed
