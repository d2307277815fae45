-- Give a dead close job another round (admin's retry action): due now, with its
-- attempts reset, so it gets the full number of attempts again.
--
-- KEYS[1] dead          dead-letter ZSET (job -> when it died, ms)
-- KEYS[2] due           due ZSET (job -> when due, ms)
-- KEYS[3] attempts      attempts HASH (job -> failed attempts so far)
-- KEYS[4] errors        last-errors HASH (job -> the last failure, for admin)
-- ARGV[1] job           the job ('<period>:<period id>')
-- ARGV[2] now_ms        now, epoch ms
-- Returns 1 if the job was dead and is due again, 0 if it was not in the dead ZSET

if redis.call('ZREM', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('HDEL', KEYS[3], ARGV[1])
redis.call('HDEL', KEYS[4], ARGV[1])
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
return 1
