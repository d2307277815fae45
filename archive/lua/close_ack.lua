-- Acknowledge a close job that succeeded: forget its claim, attempts and last error.
-- Only the current claim holder may ack (see close_claim.lua: the token is the deadline).
--
-- KEYS[1] claims        claims ZSET (job -> visibility deadline, ms)
-- KEYS[2] attempts      attempts HASH (job -> failed attempts so far)
-- KEYS[3] errors        last-errors HASH (job -> the last failure, for admin)
-- ARGV[1] job           the job ('<period>:<period id>')
-- ARGV[2] token         the claim token (its deadline, ms)
-- Returns 1 if acknowledged, 0 if the claim was no longer this worker's

local held = redis.call('ZSCORE', KEYS[1], ARGV[1])
if (not held) or tonumber(held) ~= tonumber(ARGV[2]) then return 0 end
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[1])
return 1
