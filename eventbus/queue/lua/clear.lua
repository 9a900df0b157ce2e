-- Remove ready and delayed jobs with their bodies; reserved jobs stay with their workers.
-- Returns how many jobs were removed.
-- KEYS: ready, delayed, notify, bodies, attempts, tokens, reserved, failures
local ids = redis.call('lrange', KEYS[1], 0, -1)
for _, id in ipairs(redis.call('zrange', KEYS[2], 0, -1)) do
  table.insert(ids, id)
end
local count = 0
for _, id in ipairs(ids) do
  if not redis.call('zscore', KEYS[7], id) then
    count = count + redis.call('hdel', KEYS[4], id)
    redis.call('hdel', KEYS[5], id)
    redis.call('hdel', KEYS[6], id)
    redis.call('hdel', KEYS[8], id)
  end
end
redis.call('del', KEYS[1], KEYS[2], KEYS[3])
return count
