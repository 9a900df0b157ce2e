-- Look up one job by id without touching it: its body and where it is.
-- KEYS: bodies, delayed, reserved   ARGV: id
-- Returns {body, state} with state "ready", "delayed" or "reserved"; nil when there is no such job.
local body = redis.call('hget', KEYS[1], ARGV[1])
if not body then
  return nil
end
if redis.call('zscore', KEYS[3], ARGV[1]) then
  return {body, 'reserved'}
end
if redis.call('zscore', KEYS[2], ARGV[1]) then
  return {body, 'delayed'}
end
return {body, 'ready'}
