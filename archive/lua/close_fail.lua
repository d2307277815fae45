-- Record a failed attempt of a claimed close job: release the claim, count the
-- attempt, then re-schedule it after an exponential backoff
-- (base * 2^(attempts-1), capped) or, at the last attempt, move it to the
-- dead-letter ZSET, where admin shows it with a retry action.
--
-- KEYS[1] due           due ZSET (job -> when due, ms)
-- KEYS[2] claims        claims ZSET (job -> visibility deadline, ms)
-- KEYS[3] attempts      attempts HASH (job -> failed attempts so far)
-- KEYS[4] dead          dead-letter ZSET (job -> when it died, ms)
-- KEYS[5] errors        last-errors HASH (job -> the last failure, for admin)
-- ARGV[1] job           the job ('<period>:<period id>')
-- ARGV[2] token         the claim token (its deadline, ms)
-- ARGV[3] now_ms        now, epoch ms
-- ARGV[4] backoff_ms    backoff base, ms
-- ARGV[5] cap_ms        backoff cap, ms
-- ARGV[6] max_attempts  attempts before the job is dead
-- ARGV[7] error         error text
-- Returns {'retry', attempts, due ms} | {'dead', attempts, now} | {'lost', 0, 0} when
--   the claim was no longer this worker's (nothing changed)

local held = redis.call('ZSCORE', KEYS[2], ARGV[1])
if (not held) or tonumber(held) ~= tonumber(ARGV[2]) then return {'lost', 0, 0} end
local now = tonumber(ARGV[3])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('HSET', KEYS[5], ARGV[1], ARGV[7])
local attempts = redis.call('HINCRBY', KEYS[3], ARGV[1], 1)
if attempts >= tonumber(ARGV[6]) then
  redis.call('ZADD', KEYS[4], now, ARGV[1])
  return {'dead', attempts, now}
end
local delay = math.min(tonumber(ARGV[4]) * 2 ^ (attempts - 1), tonumber(ARGV[5]))
local due = now + delay
redis.call('ZADD', KEYS[1], due, ARGV[1])
return {'retry', attempts, due}
