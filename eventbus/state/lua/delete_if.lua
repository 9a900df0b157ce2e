-- Delete a key only while it holds the caller's value (release a lock you own).
-- KEYS: key
-- ARGV: expected value
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('del', KEYS[1])
end
return 0
