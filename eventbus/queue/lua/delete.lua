-- Delete a reserved job, only for the holder of its reservation token.
-- KEYS: reserved, bodies, attempts, tokens, failures   ARGV: id, token
if redis.call('hget', KEYS[4], ARGV[1]) ~= ARGV[2] then
  return 0
end
redis.call('zrem', KEYS[1], ARGV[1])
redis.call('hdel', KEYS[2], ARGV[1])
redis.call('hdel', KEYS[3], ARGV[1])
redis.call('hdel', KEYS[4], ARGV[1])
redis.call('hdel', KEYS[5], ARGV[1])
return 1
