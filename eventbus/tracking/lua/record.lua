-- Record a batch of finished jobs: each job's hash, its status's sorted set, its tags' sorted
-- sets; then trim the status sets and the touched tag sets by score (lazy trimming).
-- The record's JSON is stored as given, never decoded here.
-- KEYS: completed set, failed set, then one hash key per record, then one key per tag set
-- ARGV: completed cutoff, failed cutoff, record count R, then per record:
--         uuid, status, finished at, expire at (ms), record JSON, tag count, the tag sets'
--         positions in KEYS;
--       then tag set count T, then per tag set: cutoff, ttl (ms)
local sets = {completed = KEYS[1], failed = KEYS[2]}
local records = tonumber(ARGV[3])
local at = 4
for i = 1, records do
  local key, uuid, status, finished = KEYS[2 + i], ARGV[at], ARGV[at + 1], ARGV[at + 2]
  redis.call('del', key)
  redis.call('hset', key, 'status', status, 'finished_at', finished, 'record', ARGV[at + 4])
  redis.call('pexpireat', key, ARGV[at + 3])
  for name, set in pairs(sets) do
    if name == status then
      redis.call('zadd', set, finished, uuid)
    else
      redis.call('zrem', set, uuid)
    end
  end
  local tags = tonumber(ARGV[at + 5])
  for t = 1, tags do
    redis.call('zadd', KEYS[tonumber(ARGV[at + 5 + t])], finished, uuid)
  end
  at = at + 6 + tags
end
redis.call('zremrangebyscore', KEYS[1], '-inf', ARGV[1])
redis.call('zremrangebyscore', KEYS[2], '-inf', ARGV[2])
local tagsets = tonumber(ARGV[at])
at = at + 1
for t = 1, tagsets do
  local key = KEYS[2 + records + t]
  redis.call('zremrangebyscore', key, '-inf', ARGV[at])
  redis.call('pexpire', key, ARGV[at + 1])
  at = at + 2
end
return records
