-- Schedule close jobs: the catch-up pass adds those that are missing; deactivating a
-- board makes its jobs due at once. A job claimed or dead is left exactly as it is.
--
-- KEYS[1] due           due ZSET (job -> when due, ms)
-- KEYS[2] claims        claims ZSET (job -> visibility deadline, ms)
-- KEYS[3] dead          dead-letter ZSET (job -> when it died, ms)
-- ARGV[1] mode          'missing' (add a job only if it is not due yet) | 'sooner' (add it,
--   or move a due job to the given time if that is earlier)
-- ARGV[2..] per job: job, due_ms
--   (the job, '<period>:<period id>', and when it is due, ms)
-- Returns how many jobs were added or moved

local flag = ARGV[1] == 'sooner' and 'LT' or 'NX'
local changed = 0
for i = 2, #ARGV, 2 do
  local job = ARGV[i]
  if not redis.call('ZSCORE', KEYS[2], job) and not redis.call('ZSCORE', KEYS[3], job) then
    changed = changed + redis.call('ZADD', KEYS[1], flag, 'CH', ARGV[i + 1], job)
  end
end
return changed
