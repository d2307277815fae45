-- Make claimed webhook deliveries whose visibility deadline passed (their worker died or hung)
-- due again at once, and free their endpoints' slots (the deliveries themselves take them back).
--
-- KEYS[1] claims        claims ZSET (job -> visibility deadline, ms)
-- KEYS[2] inflight      inflight HASH (endpoint -> claimed deliveries)
-- KEYS[3] due           due ZSET (job -> when due, ms)
-- ARGV[1] now_ms        now, epoch ms
-- ARGV[2] limit         at most this many per call
-- Returns how many were made due again

local jobs = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
for _, job in ipairs(jobs) do
  redis.call('ZREM', KEYS[1], job)
  local endpoint = string.match(job, '^([^:]+):')
  if redis.call('HINCRBY', KEYS[2], endpoint, -1) <= 0 then redis.call('HDEL', KEYS[2], endpoint) end
  redis.call('ZADD', KEYS[3], ARGV[1], job)
end
return #jobs
