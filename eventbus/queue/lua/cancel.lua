-- Remove one ready or delayed job with its body, never a reserved one (its worker has it).
-- The notify list keeps its token: a worker it wakes finds nothing and waits again.
-- KEYS: ready, delayed, reserved, bodies, attempts, tokens, failures   ARGV: id
-- Returns 1 removed, 0 no such job, -1 reserved.
if redis.call('hexists', KEYS[4], ARGV[1]) == 0 then
  return 0
end
if redis.call('zscore', KEYS[3], ARGV[1]) then
  return -1
end
redis.call('lrem', KEYS[1], 1, ARGV[1])
redis.call('zrem', KEYS[2], ARGV[1])
redis.call('hdel', KEYS[4], ARGV[1])
redis.call('hdel', KEYS[5], ARGV[1])
redis.call('hdel', KEYS[6], ARGV[1])
redis.call('hdel', KEYS[7], ARGV[1])
return 1
