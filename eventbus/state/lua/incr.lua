-- Add to a counter; the TTL is set only when this call creates the key.
-- KEYS: counter
-- ARGV: amount, ttl in milliseconds ("" for none)
local existed = redis.call('exists', KEYS[1])
local value = redis.call('incrbyfloat', KEYS[1], ARGV[1])
if existed == 0 and ARGV[2] ~= '' then
  redis.call('pexpire', KEYS[1], ARGV[2])
end
return value
