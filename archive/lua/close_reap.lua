-- Return claims whose visibility deadline passed (their worker died or hung) to
-- the due ZSET. A reaped claim counts as a failed attempt: a job that kills its
-- worker every time must end in the dead-letter ZSET, not loop forever. It is due
-- again at once; the visibility timeout it waited out is its backoff.
--
-- KEYS[1] due           due ZSET (job -> when due, ms)
-- KEYS[2] claims        claims ZSET (job -> visibility deadline, ms)
-- KEYS[3] attempts      attempts HASH (job -> failed attempts so far)
-- KEYS[4] dead          dead-letter ZSET (job -> when it died, ms)
-- KEYS[5] errors        last-errors HASH (job -> the last failure, for admin)
-- ARGV[1] now_ms        now, epoch ms
-- ARGV[2] max_attempts  attempts before a job is dead
-- ARGV[3] limit         at most this many claims per call
-- ARGV[4] error         error text recorded for each reaped job
-- Returns {job, 'due' | 'dead', ...}

local now = tonumber(ARGV[1])
local expired = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, tonumber(ARGV[3]))
local result = {}
for _, job in ipairs(expired) do
  redis.call('ZREM', KEYS[2], job)
  redis.call('HSET', KEYS[5], job, ARGV[4])
  local attempts = redis.call('HINCRBY', KEYS[3], job, 1)
  table.insert(result, job)
  if attempts >= tonumber(ARGV[2]) then
    redis.call('ZADD', KEYS[4], now, job)
    table.insert(result, 'dead')
  else
    redis.call('ZADD', KEYS[1], now, job)
    table.insert(result, 'due')
  end
end
return result
