-- Hand a claimed close job back to the queue, due later, without counting a failure: a
-- competing period settles only after its review buffer (settle_delay_secs), so its job,
-- due at the period's end, waits until then. Only the current claim holder may defer it.
--
-- KEYS[1] due           due ZSET (job -> when due, ms)
-- KEYS[2] claims        claims ZSET (job -> visibility deadline, ms)
-- ARGV[1] job           the job ('<period>:<period id>')
-- ARGV[2] token         the claim token (its deadline, ms)
-- ARGV[3] due_ms        when it is due again, ms
-- Returns 1 if deferred, 0 if the claim was no longer this worker's

local held = redis.call('ZSCORE', KEYS[2], ARGV[1])
if (not held) or tonumber(held) ~= tonumber(ARGV[2]) then return 0 end
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
return 1
