-- Count more jobs in a batch, before they are pushed (so none of them can finish it early).
-- KEYS: batch (hash)
-- ARGV: count, ttl ms
-- Returns 1 when counted, 0 when the batch is gone.
if redis.call('exists', KEYS[1]) == 0 then
  return 0
end
for _, field in ipairs({'total', 'pending', 'outstanding'}) do
  redis.call('hincrby', KEYS[1], field, ARGV[1])
end
redis.call('pexpire', KEYS[1], ARGV[2])
return 1
