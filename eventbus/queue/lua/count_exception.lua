-- One more exception for a job (max_exceptions); the counter expires after a day.
-- KEYS: counter
local count = redis.call('incr', KEYS[1])
redis.call('expire', KEYS[1], 86400)
return count
