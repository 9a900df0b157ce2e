-- Store a job once by id and queue it. A second push of an id that still exists is a no-op,
-- so a client may retry a push whose reply it lost.
-- KEYS: ready, notify, bodies, attempts, delayed   ARGV: id, payload, attempts, delay seconds
if redis.call('hsetnx', KEYS[3], ARGV[1], ARGV[2]) == 0 then
  return 0
end
if ARGV[3] ~= '0' then  -- a count of 0 needs no entry: reserving starts from none
  redis.call('hset', KEYS[4], ARGV[1], ARGV[3])
end
local delay = tonumber(ARGV[4])
if delay > 0 then
  local t = redis.call('time')
  local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
  redis.call('zadd', KEYS[5], string.format('%.6f', now + delay), ARGV[1])
else
  redis.call('rpush', KEYS[1], ARGV[1])
  redis.call('rpush', KEYS[2], 1)
end
return 1
