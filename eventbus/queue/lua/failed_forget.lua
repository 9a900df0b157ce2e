-- Delete failed job records: all of them with uuids in ARGV, or (ARGV empty) those with a
-- failed_at up to a cutoff, given as the single argument "before:<seconds>". Returns how many.
-- KEYS: records, index
local uuids = ARGV
if #ARGV == 1 and string.sub(ARGV[1], 1, 7) == 'before:' then
  uuids = redis.call('zrangebyscore', KEYS[2], '-inf', string.sub(ARGV[1], 8))
end
local removed = 0
for i = 1, #uuids, 100 do
  local j = math.min(i + 99, #uuids)
  removed = removed + redis.call('hdel', KEYS[1], unpack(uuids, i, j))
  redis.call('zrem', KEYS[2], unpack(uuids, i, j))
end
return removed
