-- Create a batch unless it exists (a chain step that dispatches its batch may run twice). A batch
-- of no jobs is finished at once: then, finally and the chain's continuation are due, owned by
-- the caller.
-- KEYS: batch (hash), jobs, failed, outbox, callbacks
-- ARGV: name, description (JSON), flags, allow_failures ("1"/"0"), created_at, jobs, ttl ms, owner
-- Returns {key, failure, ...}: the callbacks due and owned by the caller, not pushed yet.
local batch, outbox = KEYS[1], KEYS[4]
local owner = ARGV[8]
if redis.call('exists', batch) == 0 then
  redis.call('hset', batch, 'name', ARGV[1], 'description', ARGV[2], 'flags', ARGV[3],
             'allow_failures', ARGV[4], 'created_at', ARGV[5], 'total', ARGV[6], 'pending', ARGV[6],
             'failed', 0, 'outstanding', ARGV[6])
  if tonumber(ARGV[6]) == 0 then
    redis.call('hset', batch, 'finished_at', ARGV[5])
    local flags = ',' .. ARGV[3] .. ','
    for _, kind in ipairs({'then', 'finally', 'chain'}) do
      if string.find(flags, ',' .. kind .. ',', 1, true) then
        redis.call('hset', outbox, kind, 'due\n' .. owner .. '\n')
      end
    end
  end
  for _, key in ipairs(KEYS) do
    redis.call('pexpire', key, ARGV[7])
  end
end
local owned = {}
local entries = redis.call('hgetall', outbox)
local prefix = 'due\n' .. owner .. '\n'
for i = 1, #entries, 2 do
  if string.sub(entries[i + 1], 1, #prefix) == prefix then
    owned[#owned + 1] = entries[i]
    owned[#owned + 1] = string.sub(entries[i + 1], #prefix + 1)
  end
end
return owned
