-- Forget a deleted endpoint's parked deliveries (its due and claimed ones are dropped as runs
-- claim them and find no row), so that nothing of it stays in the queue.
--
-- KEYS[1] parked        parked ZSET (job -> 0)
-- ARGV[1] endpoint      the endpoint's pk
-- Returns how many were forgotten

return redis.call('ZREMRANGEBYLEX', KEYS[1], '[' .. ARGV[1] .. ':', '[' .. ARGV[1] .. ';')
