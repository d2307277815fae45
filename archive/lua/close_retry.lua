-- Give a dead close job another round (admin's retry action): due now, with its
-- attempts reset, so it gets the full number of attempts again.
--
-- KEYS[1] dead ZSET, KEYS[2] due ZSET, KEYS[3] attempts HASH, KEYS[4] last-errors HASH
-- ARGV[1] job, ARGV[2] now, epoch ms
-- Returns 1 if the job was dead and is due again, 0 if it was not in the dead ZSET

if redis.call('ZREM', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('HDEL', KEYS[3], ARGV[1])
redis.call('HDEL', KEYS[4], ARGV[1])
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
return 1
