-- Record a batch of finished jobs: each record in the records hash, its expiry in the expiry set,
-- its uuid in its status's sorted set and its tags' sorted sets; then drop what has expired (lazy
-- trimming, at most TRIM records a call) and trim the status sets and the touched tag sets.
-- The record's JSON is stored as given, never decoded here. Every record lives in one hash rather
-- than a key of its own: the state's SCANs (status, history, dashboard) read the whole keyspace,
-- and an hour of completed jobs would be millions of keys.
-- Records end by the server's clock (TIME), as keys expire: one worker's clock running ahead must
-- not drop the records of the others.
-- KEYS: completed set, failed set, records hash, expiry set, then one key per tag set
-- ARGV: completed cutoff, failed cutoff, record count R, then per record:
--         uuid, status, finished at, expire at (ms), record JSON, tag count, the tag sets'
--         positions in KEYS;
--       then tag set count T, then per tag set: cutoff, ttl (ms)
local TRIM = 1000
if redis.replicate_commands then
  redis.replicate_commands()  -- Redis < 7: TIME in a script that writes needs effects replication
end
local clock = redis.call('TIME')
local now_ms = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local sets = {completed = KEYS[1], failed = KEYS[2]}
local records, expiry = KEYS[3], KEYS[4]
local count = tonumber(ARGV[3])
local at = 4
for i = 1, count do
  local uuid, status, finished = ARGV[at], ARGV[at + 1], ARGV[at + 2]
  redis.call('hset', records, uuid, ARGV[at + 4])
  redis.call('zadd', expiry, ARGV[at + 3], uuid)
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
local expired = redis.call('zrangebyscore', expiry, '-inf', now_ms, 'LIMIT', 0, TRIM)
if #expired > 0 then
  redis.call('hdel', records, unpack(expired))
  redis.call('zrem', expiry, unpack(expired))
end
-- the hash and its expiry set end with their last record: a connection that stops recording
-- leaves nothing behind
local last = redis.call('zrange', expiry, -1, -1, 'WITHSCORES')
if #last > 0 then
  redis.call('pexpireat', records, last[2])
  redis.call('pexpireat', expiry, last[2])
end
redis.call('zremrangebyscore', KEYS[1], '-inf', ARGV[1])
redis.call('zremrangebyscore', KEYS[2], '-inf', ARGV[2])
local tagsets = tonumber(ARGV[at])
at = at + 1
for t = 1, tagsets do
  local key = KEYS[4 + t]
  redis.call('zremrangebyscore', key, '-inf', ARGV[at])
  redis.call('pexpire', key, ARGV[at + 1])
  at = at + 2
end
return count
