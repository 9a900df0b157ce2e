-- push.lua for many jobs at once: ARGV holds (id, payload, attempts) triples. Ids that still exist
-- are skipped. Returns how many jobs were added.
-- KEYS: ready, notify, bodies, attempts
local added = 0
for i = 1, #ARGV, 3 do
  if redis.call('hsetnx', KEYS[3], ARGV[i], ARGV[i + 1]) == 1 then
    if ARGV[i + 2] ~= '0' then
      redis.call('hset', KEYS[4], ARGV[i], ARGV[i + 2])
    end
    redis.call('rpush', KEYS[1], ARGV[i])
    redis.call('rpush', KEYS[2], 1)
    added = added + 1
  end
end
return added
