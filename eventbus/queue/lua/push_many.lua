-- push.lua for many jobs at once: ARGV holds (id, payload, attempts) triples. Ids that still exist
-- are skipped (so a client may retry a chunk whose reply it lost). Returns how many jobs were added.
-- KEYS: ready, notify, bodies, attempts
--
-- Four commands a chunk, not three a job: one HMGET finds the ids already stored, then one HSET,
-- one RPUSH of the ids and one of the wake-up tokens. Each redis.call costs about as much as the
-- work it does for one job, so this is most of the server's time for a bulk push. The callers
-- send at most 500 jobs a call: unpack() puts 1,000 values on Lua's stack (its limit is 8,000).
local ids = {}
for i = 1, #ARGV, 3 do
  ids[#ids + 1] = ARGV[i]
end
if #ids == 0 then
  return 0
end
local stored = redis.call('hmget', KEYS[3], unpack(ids))
local fresh, bodies, counts, tokens, seen = {}, {}, {}, {}, {}
for n, id in ipairs(ids) do
  if not stored[n] and not seen[id] then
    seen[id] = true
    local i = n * 3 - 2
    fresh[#fresh + 1] = id
    bodies[#bodies + 1] = id
    bodies[#bodies + 1] = ARGV[i + 1]
    tokens[#tokens + 1] = 1
    if ARGV[i + 2] ~= '0' then  -- a count of 0 needs no entry: reserving starts from none
      counts[#counts + 1] = id
      counts[#counts + 1] = ARGV[i + 2]
    end
  end
end
if #fresh == 0 then
  return 0
end
redis.call('hset', KEYS[3], unpack(bodies))
if #counts > 0 then
  redis.call('hset', KEYS[4], unpack(counts))
end
redis.call('rpush', KEYS[1], unpack(fresh))
redis.call('rpush', KEYS[2], unpack(tokens))
return #fresh
