-- Return claims whose visibility deadline passed (their worker died or hung) to
-- the due ZSET. A reaped claim counts as a failed attempt: a job that kills its
-- worker every time must end in the dead-letter ZSET, not loop forever. It is due
-- again at once; the visibility timeout it waited out is its backoff.
--
-- KEYS[1] due ZSET, KEYS[2] claims ZSET, KEYS[3] attempts HASH, KEYS[4] dead ZSET,
-- KEYS[5] last-errors HASH
-- ARGV[1] now, epoch ms; ARGV[2] max attempts; ARGV[3] at most this many claims per call
-- ARGV[4] error text recorded for each reaped job
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
