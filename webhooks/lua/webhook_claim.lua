-- Claim due webhook deliveries, oldest due first, at most `concurrency` in flight per endpoint:
-- move each from the due ZSET to the claims ZSET, scored by its visibility deadline (the claim's
-- token: ack acts only on the claim it was given, so a worker whose claim was reaped cannot
-- touch the next owner's). A due delivery whose endpoint is at its limit is parked (see
-- webhook_ack.lua, which brings it back as a slot frees), so that a slow endpoint's backlog never
-- stands in front of the other endpoints' deliveries.
--
-- KEYS[1] due           due ZSET ('<endpoint>:<delivery>' -> when due, ms)
-- KEYS[2] claims        claims ZSET (job -> visibility deadline, ms)
-- KEYS[3] inflight      inflight HASH (endpoint -> claimed deliveries)
-- KEYS[4] parked        parked ZSET (job -> 0: its endpoint was at its limit)
-- ARGV[1] now_ms        now, epoch ms
-- ARGV[2] visibility_ms visibility timeout, ms
-- ARGV[3] limit         at most this many claims per call
-- ARGV[4] concurrency   at most this many claimed deliveries per endpoint
-- ARGV[5] scan          at most this many due deliveries looked at per call
-- Returns {job, deadline (the claim token), ...}, oldest due first

local now = tonumber(ARGV[1])
local deadline = now + tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local concurrency = tonumber(ARGV[4])
local jobs = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[5]))
local result = {}
local claimed = 0
for _, job in ipairs(jobs) do
  if claimed >= limit then break end
  local endpoint = string.match(job, '^([^:]+):')
  redis.call('ZREM', KEYS[1], job)
  if tonumber(redis.call('HGET', KEYS[3], endpoint) or '0') < concurrency then
    redis.call('ZADD', KEYS[2], deadline, job)
    redis.call('HINCRBY', KEYS[3], endpoint, 1)
    table.insert(result, job)
    table.insert(result, deadline)
    claimed = claimed + 1
  else
    redis.call('ZADD', KEYS[4], 0, job)
  end
end
return result
