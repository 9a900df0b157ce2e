-- Record one job's final outcome in its batch, in one step: the rules of
-- eventbus/batching/rules.py (a success counts once and is final; a failure may turn into a
-- success; the first failure makes catch due and cancels the batch unless it allows failures;
-- the last outcome stamps finished_at and makes finally and the chain's continuation due; then
-- is due once every job succeeded and the batch was not cancelled).
-- KEYS: batch (hash), jobs (hash uuid -> ok/fail), failed (list), outbox (hash), callbacks (set)
-- ARGV: job uuid, "1" succeeded / "0" failed, now, ttl ms, failure line, unrun uuids...
-- Returns false when the batch is gone, else {key, failure, key, failure, ...}: every callback
-- this job's outcomes made due that is not marked pushed yet (made now, or by an earlier
-- attempt of the same job that died before pushing it).
local batch, jobs, failed, outbox = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
if redis.call('exists', batch) == 0 then
  return false
end
local job, succeeded, now, ttl, failure = ARGV[1], ARGV[2] == '1', ARGV[3], ARGV[4], ARGV[5]
local flags = ',' .. (redis.call('hget', batch, 'flags') or '') .. ','
local allow = redis.call('hget', batch, 'allow_failures') == '1'
local function has(kind)
  return string.find(flags, ',' .. kind .. ',', 1, true) ~= nil
end
local function due(key, why)
  redis.call('hsetnx', outbox, key, 'due\n' .. job .. '\n' .. why)
end

local newly_failed = false
if succeeded then
  local before = redis.call('hget', jobs, job)
  if before ~= 'ok' then
    redis.call('hset', jobs, job, 'ok')
    redis.call('hincrby', batch, 'pending', -1)
    if before == 'fail' then
      redis.call('hincrby', batch, 'failed', -1)
      redis.call('lrem', failed, 0, job)
    else
      redis.call('hincrby', batch, 'outstanding', -1)
    end
    if has('progress') then
      due('progress:' .. job .. ':ok', '')
    end
  end
else
  local uuids = {job}
  for i = 6, #ARGV do
    uuids[#uuids + 1] = ARGV[i]
  end
  for i, uuid in ipairs(uuids) do
    if redis.call('hsetnx', jobs, uuid, 'fail') == 1 then
      redis.call('rpush', failed, uuid)
      redis.call('hincrby', batch, 'failed', 1)
      redis.call('hincrby', batch, 'outstanding', -1)
      newly_failed = true
      if i == 1 and allow then
        if has('failure') then
          due('failure:' .. job, failure)
        end
        if has('progress') then
          due('progress:' .. job .. ':fail', failure)
        end
      end
    end
  end
end
if newly_failed then
  if not allow then
    redis.call('hsetnx', batch, 'cancelled_at', now)
  end
  if has('catch') then
    due('catch', failure)
  end
end
if tonumber(redis.call('hget', batch, 'outstanding')) <= 0 and redis.call('hsetnx', batch, 'finished_at', now) == 1 then
  if has('finally') then
    due('finally', newly_failed and failure or '')
  end
  if has('chain') then
    due('chain', '')
  end
end
if tonumber(redis.call('hget', batch, 'pending')) <= 0 and redis.call('hexists', batch, 'cancelled_at') == 0
    and has('then') then
  due('then', '')
end
for _, key in ipairs(KEYS) do
  redis.call('pexpire', key, ttl)
end

local owned = {}
local entries = redis.call('hgetall', outbox)
local prefix = 'due\n' .. job .. '\n'
for i = 1, #entries, 2 do
  local value = entries[i + 1]
  if string.sub(value, 1, #prefix) == prefix then
    owned[#owned + 1] = entries[i]
    owned[#owned + 1] = string.sub(value, #prefix + 1)
  end
end
return owned
