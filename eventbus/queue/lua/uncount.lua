-- Give back one counted attempt of a job released without running (never below 0, never for a
-- job that is gone). KEYS: attempts   ARGV: id
local attempts = tonumber(redis.call('hget', KEYS[1], ARGV[1]))
if attempts and attempts > 0 then
  redis.call('hincrby', KEYS[1], ARGV[1], -1)
end
return 1
