-- Schedule close jobs that are missing (the catch-up pass): a job already due,
-- claimed or dead is left exactly as it is.
--
-- KEYS[1] due ZSET, KEYS[2] claims ZSET, KEYS[3] dead ZSET
-- ARGV pairs: job, when due (ms)
-- Returns how many jobs were scheduled

local added = 0
for i = 1, #ARGV, 2 do
  local job = ARGV[i]
  if not redis.call('ZSCORE', KEYS[2], job) and not redis.call('ZSCORE', KEYS[3], job) then
    added = added + redis.call('ZADD', KEYS[1], 'NX', ARGV[i + 1], job)
  end
end
return added
