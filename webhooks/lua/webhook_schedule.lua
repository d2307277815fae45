-- Schedule webhook deliveries: new ones and the sweep's (`missing`: added only if neither due,
-- parked nor claimed), or replays (`sooner`: added, or moved to the given time if that is
-- earlier). A claimed or parked delivery is left as it is: it goes out as its turn comes.
--
-- KEYS[1] due           due ZSET ('<endpoint>:<delivery>' -> when due, ms)
-- KEYS[2] claims        claims ZSET (job -> visibility deadline, ms)
-- KEYS[3] parked        parked ZSET (job -> 0)
-- ARGV[1] mode          'missing' | 'sooner'
-- ARGV[2..] per job: job, due_ms
--   (the job, '<endpoint>:<delivery>', and when it is due, ms)
-- Returns how many jobs were added or moved

local flag = ARGV[1] == 'sooner' and 'LT' or 'NX'
local changed = 0
for i = 2, #ARGV, 2 do
  if not redis.call('ZSCORE', KEYS[2], ARGV[i]) and not redis.call('ZSCORE', KEYS[3], ARGV[i]) then
    changed = changed + redis.call('ZADD', KEYS[1], flag, 'CH', ARGV[i + 1], ARGV[i])
  end
end
return changed
