-- Put a reserved job back (ready, or delayed by ARGV[3] seconds), only for the holder of its
-- token and only while it is still reserved: a reservation that expired and went back to the
-- ready list must not gain a second copy. With ARGV[4] = 1 the attempt its reservation counted
-- is given back in the same step (never below 0), so that no worker can reserve the job in
-- between and count an attempt too many.
-- KEYS: reserved, delayed, ready, notify, tokens, attempts   ARGV: id, token, delay seconds, uncount
if redis.call('hget', KEYS[5], ARGV[1]) ~= ARGV[2] then
  return 0
end
if redis.call('zrem', KEYS[1], ARGV[1]) == 0 then
  return 0
end
redis.call('hdel', KEYS[5], ARGV[1])
if ARGV[4] == '1' and redis.call('hincrby', KEYS[6], ARGV[1], -1) < 0 then
  redis.call('hset', KEYS[6], ARGV[1], 0)
end
local delay = tonumber(ARGV[3])
if delay > 0 then
  local t = redis.call('time')
  local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
  redis.call('zadd', KEYS[2], string.format('%.6f', now + delay), ARGV[1])
else
  redis.call('rpush', KEYS[3], ARGV[1])
  redis.call('rpush', KEYS[4], 1)
end
return 1
