-- Seconds until the earliest delayed job is due or the earliest reservation expires (0 when one
-- is due now), or -1 when there is neither: an idle worker wakes for either, so a job whose
-- worker died runs again as soon as its reservation expires.
-- KEYS: delayed, reserved
local earliest = nil
for _, key in ipairs(KEYS) do
  local first = redis.call('zrange', key, 0, 0, 'withscores')
  if #first > 0 and (earliest == nil or tonumber(first[2]) < earliest) then
    earliest = tonumber(first[2])
  end
end
if earliest == nil then
  return '-1'
end
local t = redis.call('time')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
return string.format('%.6f', math.max(earliest - now, 0))
