-- Fail a reserved job in one step, only for the holder of its reservation token: store its
-- failed record (in the queue's own hash slot) and delete the job. A worker that no longer holds
-- the reservation changes nothing. A record is never replaced: when ARGV[3] is taken the record
-- goes under ARGV[5]; when both are taken nothing happens and -1 tells the caller to pick another
-- id. A retry whose first reply was lost finds its own record and returns 1 again.
-- KEYS: reserved, bodies, attempts, tokens, failures, records, index
-- ARGV: id, token, uuid, record json, alternative uuid, its record json, failed_at
if redis.call('hget', KEYS[4], ARGV[1]) ~= ARGV[2] then
  if redis.call('hget', KEYS[6], ARGV[3]) == ARGV[4] or redis.call('hget', KEYS[6], ARGV[5]) == ARGV[6] then
    return 1
  end
  return 0
end
local key = ARGV[3]
if redis.call('hsetnx', KEYS[6], key, ARGV[4]) == 0 then
  key = ARGV[5]
  if redis.call('hsetnx', KEYS[6], key, ARGV[6]) == 0 then
    return -1
  end
end
redis.call('zadd', KEYS[7], ARGV[7], key)
redis.call('zrem', KEYS[1], ARGV[1])
for i = 2, 5 do
  redis.call('hdel', KEYS[i], ARGV[1])
end
return 1
