-- Note that a callback job of a batch succeeded (a push repeated after a crash then sees it ran).
-- KEYS: batch (hash), callbacks (set)   ARGV: callback job uuid, ttl ms
if redis.call('exists', KEYS[1]) == 0 then
  return 0
end
redis.call('sadd', KEYS[2], ARGV[1])
redis.call('pexpire', KEYS[2], ARGV[2])
return 1
