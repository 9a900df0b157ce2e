-- Stamp a batch cancelled, unless it is gone or was cancelled already.
-- KEYS: batch (hash)   ARGV: now
-- Returns 1 when this call cancelled it.
if redis.call('exists', KEYS[1]) == 0 then
  return 0
end
return redis.call('hsetnx', KEYS[1], 'cancelled_at', ARGV[1])
