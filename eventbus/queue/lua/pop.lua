-- Move due delayed jobs to the tail of the ready list and expired reservations to its head (at
-- most ARGV[2] of each), then reserve the oldest ready job: score now + retry_after, a fresh
-- token, attempts + 1. An expired reservation goes to the head because its job was taken before
-- everything still waiting: a killed worker's job must not wait behind the whole backlog.
-- Ids whose body is gone (deleted by a former holder) or that are already reserved
-- (a duplicate entry) are skipped. Times come from the server clock.
-- Returns {id, body, attempts, failure}: failure is the description a former holder kept
-- beside the job when it could not record its failure (failed store down), else nil.
-- KEYS: ready, delayed, reserved, notify, bodies, attempts, tokens, failures
-- ARGV: retry_after, migration batch size, token
local t = redis.call('time')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local batch = tonumber(ARGV[2])

local function due(from)
  local ids = redis.call('zrangebyscore', from, '-inf', string.format('%.6f', now), 'limit', 0, batch)
  if #ids > 0 then
    redis.call('zremrangebyrank', from, 0, #ids - 1)
  end
  return ids
end

local function notify(count)
  for _ = 1, count do
    redis.call('rpush', KEYS[4], 1)
  end
end

local delayed = due(KEYS[2])
for i = 1, #delayed, 100 do
  local j = math.min(i + 99, #delayed)
  redis.call('rpush', KEYS[1], unpack(delayed, i, j))
  notify(j - i + 1)
end

-- LPUSH in reverse: the reservation that expired first ends up first in line
local expired = due(KEYS[3])
for i = #expired, 1, -1 do
  redis.call('lpush', KEYS[1], expired[i])
end
notify(#expired)

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
    return {id, body, attempts, redis.call('hget', KEYS[8], id)}
  end
end
