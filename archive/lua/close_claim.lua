-- Claim due period close jobs: move them from the due ZSET to the claims ZSET,
-- scored by a visibility deadline. Whoever claims a job owns it until it acks,
-- fails, or the deadline passes (the reaper, close_reap.lua, then returns it).
-- The deadline doubles as the claim's token: ack, fail and extend act only if the
-- job is still claimed with that exact deadline, so a worker whose claim was
-- reaped and given to another cannot touch the new owner's claim.
--
-- KEYS[1] due           due ZSET (job -> when due, ms)
-- KEYS[2] claims        claims ZSET (job -> visibility deadline, ms)
-- KEYS[3] attempts      attempts HASH (job -> failed attempts so far)
-- ARGV[1] now_ms        now, epoch ms
-- ARGV[2] visibility_ms visibility timeout, ms
-- ARGV[3] limit         at most this many jobs per call
-- Returns {job, attempts so far, deadline (the claim token), ...}, oldest due first

local deadline = tonumber(ARGV[1]) + tonumber(ARGV[2])
local jobs = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[3]))
local result = {}
for _, job in ipairs(jobs) do
  redis.call('ZREM', KEYS[1], job)
  redis.call('ZADD', KEYS[2], deadline, job)
  table.insert(result, job)
  table.insert(result, tonumber(redis.call('HGET', KEYS[3], job) or '0'))
  table.insert(result, deadline)
end
return result
