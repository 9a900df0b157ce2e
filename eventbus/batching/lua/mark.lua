-- Mark callbacks pushed: a batch-wide one stays as "done" (it is never due again), a per-job one
-- ("progress:<uuid>:ok", "failure:<uuid>") goes (its job's outcome never makes it due again).
-- KEYS: outbox (hash)
-- ARGV: ttl ms, keys...
for i = 2, #ARGV do
  if string.find(ARGV[i], ':', 1, true) then
    redis.call('hdel', KEYS[1], ARGV[i])
  else
    redis.call('hset', KEYS[1], ARGV[i], 'done')
  end
end
if redis.call('exists', KEYS[1]) == 1 then
  redis.call('pexpire', KEYS[1], ARGV[1])
end
return 1
