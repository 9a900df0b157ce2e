-- Keep a reserved job that failed for good, with its failure beside it, for one more
-- retry_after, only for the holder of its reservation token: the first step of failing a job
-- whose failed store is elsewhere. Until the holder has stored the record and deleted the job,
-- the job stays here; if the holder dies or the store stays down, the reservation expires and
-- the next pop hands the job out with its failure, to be recorded without running again.
-- KEYS: reserved, tokens, failures   ARGV: id, token, retry_after, failure description
if redis.call('hget', KEYS[2], ARGV[1]) ~= ARGV[2] then
  return 0
end
local t = redis.call('time')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
redis.call('zadd', KEYS[1], string.format('%.6f', now + tonumber(ARGV[3])), ARGV[1])
redis.call('hset', KEYS[3], ARGV[1], ARGV[4])
return 1
