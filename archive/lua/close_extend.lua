-- Push a claimed close job's visibility deadline further out while its archive
-- makes progress (called once per chunk), so only a stalled worker is reaped.
--
-- KEYS[1] claims        claims ZSET (job -> visibility deadline, ms)
-- ARGV[1] job           the job ('<period>:<period id>')
-- ARGV[2] token         the claim token (its current deadline, ms)
-- ARGV[3] deadline      the new deadline, ms
-- Returns 1 if extended (the new deadline is the new token), 0 if the claim was lost

local held = redis.call('ZSCORE', KEYS[1], ARGV[1])
if (not held) or tonumber(held) ~= tonumber(ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], 'XX', ARGV[3], ARGV[1])
return 1
