-- Move due delayed jobs and expired reservations to the ready list (at most ARGV[2] of each),
-- then reserve the oldest ready job: score now + retry_after, a fresh token, attempts + 1.
-- Ids whose body is gone (deleted by a former holder) or that are already reserved
-- (a duplicate entry) are skipped. Times come from the server clock.
-- KEYS: ready, delayed, reserved, notify, bodies, attempts, tokens
-- ARGV: retry_after, migration batch size, token
local t = redis.call('time')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local batch = tonumber(ARGV[2])

local function migrate(from)
  local ids = redis.call('zrangebyscore', from, '-inf', string.format('%.6f', now), 'limit', 0, batch)
  if #ids == 0 then
    return
  end
  redis.call('zremrangebyrank', from, 0, #ids - 1)
  for i = 1, #ids, 100 do
    local j = math.min(i + 99, #ids)
    redis.call('rpush', KEYS[1], unpack(ids, i, j))
    for _ = i, j do
      redis.call('rpush', KEYS[4], 1)
    end
  end
end

migrate(KEYS[2])
migrate(KEYS[3])

while true do
  local id = redis.call('lpop', KEYS[1])
  if not id then
    return false
  end
  redis.call('lpop', KEYS[4])
  local body = redis.call('hget', KEYS[5], id)
  if body and not redis.call('zscore', KEYS[3], id) then
    local attempts = redis.call('hincrby', KEYS[6], id, 1)
    redis.call('zadd', KEYS[3], string.format('%.6f', now + tonumber(ARGV[1])), id)
    redis.call('hset', KEYS[7], id, ARGV[3])
    return {id, body, attempts}
  end
end
