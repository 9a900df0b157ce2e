-- Seconds until the earliest delayed job is due (0 when one is due now), or -1 when none.
-- KEYS: delayed
local first = redis.call('zrange', KEYS[1], 0, 0, 'withscores')
if #first == 0 then
  return '-1'
end
local t = redis.call('time')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
return string.format('%.6f', math.max(tonumber(first[2]) - now, 0))
