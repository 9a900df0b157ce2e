-- The worker's one request per turn: settle what it finished, then reserve what it runs next.
--
-- 1. Delete the acknowledged jobs (those that succeeded), each only while its token holds.
-- 2. Renew the reservations of held jobs the worker has not started (score now + retry_after),
--    each only while its token holds; the ids it no longer holds are returned as lost.
-- 3. Give back held jobs the worker will not run (a graceful stop, a paused queue): to the head
--    of the ready list, their attempt uncounted, each only while its token holds.
-- 4. Move due delayed jobs to the tail of the ready list and expired reservations to its head
--    (at most ARGV[2] of each): a killed worker's job must not wait behind the whole backlog.
-- 5. Reserve up to ARGV[3] ready jobs, oldest first: score now + retry_after, token ARGV[5]..n,
--    attempts + 1. Ids whose body is gone or that are reserved already (a duplicate entry) are
--    skipped. One wake-up token is consumed per job taken, except the first when ARGV[4] is 1
--    (the caller's blocking pop took it already).
-- Times come from the server clock.
-- KEYS: ready, delayed, reserved, notify, bodies, attempts, tokens, failures
-- ARGV: retry_after, migration batch size, limit, woken, token prefix,
--       n acks, id, token, ..., n renewals, id, token, ..., n given back, id, token, ...
-- Returns {lost ids, {id, body, attempts, failure or false, token, ...}, due}: due is, when no
-- job was reserved, the seconds until the earliest delayed job is due or reservation expires
-- (-1: neither), so that an idle worker knows how long it may block without asking again.
local t = redis.call('time')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local expiry = string.format('%.6f', now + tonumber(ARGV[1]))
local batch = tonumber(ARGV[2])
local at = 6

local function holds(id, token)
  return redis.call('hget', KEYS[7], id) == token
end

-- unpack() puts its values on Lua's stack, which holds 8,000: a command over more values than a
-- slice (a worker with a large prefetch or many acknowledgements) is sent a slice at a time.
-- SLICE is even, so (field, value) pairs stay together.
local SLICE = 1000
-- At most this many ids are popped a pass of step 5 (a huge limit is also sent as an integer).
local PASS = 10000

local function call_sliced(command, key, values)
  for i = 1, #values, SLICE do
    redis.call(command, key, unpack(values, i, math.min(i + SLICE - 1, #values)))
  end
end

local function hmget(key, ids)
  local found = {}
  for i = 1, #ids, SLICE do
    local part = redis.call('hmget', key, unpack(ids, i, math.min(i + SLICE - 1, #ids)))
    for j = 1, #part do
      found[#found + 1] = part[j]
    end
  end
  return found
end

-- Steps 1 and 5 run once a job for every job a worker runs, so they send each command once for
-- all the jobs (a redis.call costs about as much as the work it does for one job).
local count = tonumber(ARGV[at])
if count > 0 then
  local ids, tokens = {}, {}
  for i = at + 1, at + 2 * count, 2 do
    ids[#ids + 1] = ARGV[i]
    tokens[#tokens + 1] = ARGV[i + 1]
  end
  local held = hmget(KEYS[7], ids)
  local done = {}
  for n, id in ipairs(ids) do
    if held[n] == tokens[n] then
      done[#done + 1] = id
    end
  end
  if #done > 0 then
    call_sliced('zrem', KEYS[3], done)
    for key = 5, 8 do
      call_sliced('hdel', KEYS[key], done)
    end
  end
end
at = at + 2 * count + 1

local lost = {}
count = tonumber(ARGV[at])
for i = at + 1, at + 2 * count, 2 do
  local id = ARGV[i]
  if holds(id, ARGV[i + 1]) and redis.call('zscore', KEYS[3], id) then
    redis.call('zadd', KEYS[3], expiry, id)
  else
    lost[#lost + 1] = id
  end
end
at = at + 2 * count + 1

local back = {}
count = tonumber(ARGV[at])
for i = at + 1, at + 2 * count, 2 do
  local id = ARGV[i]
  if holds(id, ARGV[i + 1]) and redis.call('zrem', KEYS[3], id) == 1 then
    redis.call('hdel', KEYS[7], id)
    if redis.call('hincrby', KEYS[6], id, -1) < 0 then
      redis.call('hset', KEYS[6], id, 0)
    end
    back[#back + 1] = id
  end
end
for i = #back, 1, -1 do
  redis.call('lpush', KEYS[1], back[i])
  redis.call('rpush', KEYS[4], 1)
end

local function due(from)
  local ids = redis.call('zrangebyscore', from, '-inf', string.format('%.6f', now), 'limit', 0, batch)
  if #ids > 0 then
    redis.call('zremrangebyrank', from, 0, #ids - 1)
  end
  return ids
end

local delayed = due(KEYS[2])
for i = 1, #delayed, 100 do
  local j = math.min(i + 99, #delayed)
  redis.call('rpush', KEYS[1], unpack(delayed, i, j))
  for _ = i, j do
    redis.call('rpush', KEYS[4], 1)
  end
end

-- LPUSH in reverse: the reservation that expired first ends up first in line
local expired = due(KEYS[3])
for i = #expired, 1, -1 do
  redis.call('lpush', KEYS[1], expired[i])
  redis.call('rpush', KEYS[4], 1)
end

-- Pop what is still wanted from the head of the ready list (LRANGE + LTRIM: LPOP with a count
-- needs Redis 6.2), with one wake-up token each; skip what cannot run, and pop again for it.
-- Built for one ZADD and two HSETs at the end: (expiry, id), (id, token) and (id, attempts).
local jobs, reserved, owners, tallies, seen = {}, {}, {}, {}, {}
local limit = tonumber(ARGV[3])
local woken = ARGV[4] == '1'
local taken = 0
while taken < limit do
  local ids = redis.call('lrange', KEYS[1], 0, math.min(limit - taken, PASS) - 1)
  if #ids == 0 then
    break
  end
  redis.call('ltrim', KEYS[1], #ids, -1)
  local spent = #ids
  if woken then
    woken = false
    spent = spent - 1
  end
  if spent > 0 then
    redis.call('ltrim', KEYS[4], spent, -1)
  end
  local bodies = hmget(KEYS[5], ids)
  local counts = hmget(KEYS[6], ids)
  local failures = hmget(KEYS[8], ids)
  for n, id in ipairs(ids) do
    if bodies[n] and not seen[id] and not redis.call('zscore', KEYS[3], id) then
      taken = taken + 1
      local token = ARGV[5] .. taken
      local attempts = (tonumber(counts[n]) or 0) + 1
      jobs[#jobs + 1] = id
      jobs[#jobs + 1] = bodies[n]
      jobs[#jobs + 1] = attempts
      jobs[#jobs + 1] = failures[n]
      jobs[#jobs + 1] = token
      reserved[#reserved + 1] = expiry
      reserved[#reserved + 1] = id
      owners[#owners + 1] = id
      owners[#owners + 1] = token
      tallies[#tallies + 1] = id
      tallies[#tallies + 1] = string.format('%d', attempts)
      seen[id] = true
    end
  end
end
if taken > 0 then
  call_sliced('zadd', KEYS[3], reserved)
  call_sliced('hset', KEYS[7], owners)
  call_sliced('hset', KEYS[6], tallies)
end
local next_due = '-1'
if taken == 0 then
  local earliest = nil
  for _, key in ipairs({KEYS[2], KEYS[3]}) do
    local first = redis.call('zrange', key, 0, 0, 'withscores')
    if #first > 0 and (earliest == nil or tonumber(first[2]) < earliest) then
      earliest = tonumber(first[2])
    end
  end
  if earliest ~= nil then
    next_due = string.format('%.6f', math.max(earliest - now, 0))
  end
end
return {lost, jobs, next_due}
