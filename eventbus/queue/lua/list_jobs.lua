-- The ids and bodies of the first ARGV[2] jobs of one state, without touching them: ready ones
-- oldest first, delayed ones soonest due first, reserved ones soonest expiring first.
-- KEYS: ready, delayed, reserved, bodies   ARGV: state ("ready", "delayed" or "reserved"), limit
-- Returns {id1, body1, id2, body2, ...}.
local limit = tonumber(ARGV[2])
local ids
if ARGV[1] == 'ready' then
  ids = redis.call('lrange', KEYS[1], 0, limit - 1)
elseif ARGV[1] == 'delayed' then
  ids = redis.call('zrange', KEYS[2], 0, limit - 1)
else
  ids = redis.call('zrange', KEYS[3], 0, limit - 1)
end
local out = {}
for _, id in ipairs(ids) do
  local body = redis.call('hget', KEYS[4], id)
  if body then
    table.insert(out, id)
    table.insert(out, body)
  end
end
return out
