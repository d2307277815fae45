-- The archive lock of one period: one archive run at a time writes its rows (a
-- close job and `manage.py archive_period` could otherwise interleave). The value is
-- the run's token; it is extended once per chunk and expires if its holder dies.
--
-- KEYS[1] lock          the period's archive lock STRING
-- ARGV[1] op            'take' | 'extend' | 'release'
-- ARGV[2] token         the run id
-- ARGV[3] lifetime_ms   lifetime, ms ('take' and 'extend')
-- Returns 1 on success; 0 if another run holds the lock ('take') or this run no
--   longer does ('extend', 'release')

local held = redis.call('GET', KEYS[1])
if ARGV[1] == 'take' then
  if held then return 0 end
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
  return 1
end
if held ~= ARGV[2] then return 0 end
if ARGV[1] == 'extend' then
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
else
  redis.call('DEL', KEYS[1])
end
return 1
