-- Store a failed job record and index it by time, unless a record with that uuid exists (a
-- record is never replaced: the caller picks another id). Returns 1 when stored, 0 when taken.
-- KEYS: records, index   ARGV: uuid, json, failed_at
if redis.call('hsetnx', KEYS[1], ARGV[1], ARGV[2]) == 0 then
  return 0
end
redis.call('zadd', KEYS[2], ARGV[3], ARGV[1])
return 1
