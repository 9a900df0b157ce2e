-- The bodies of the first ARGV[1] ready jobs, oldest first, without reserving them.
-- KEYS: ready, bodies
local out = {}
for _, id in ipairs(redis.call('lrange', KEYS[1], 0, tonumber(ARGV[1]) - 1)) do
  local body = redis.call('hget', KEYS[2], id)
  if body then
    table.insert(out, body)
  end
end
return out
