-- Claim the announcements of periods' starts: each rollover is claimed by
-- exactly one caller, however many broadcasters run.
--
-- KEYS[1] periods       live-periods HASH (period -> id last seen)
-- ARGV[1..] per window: name, period_id
--   (a window's name and the id of its current period)
-- Returns the period names that rolled over (the stored id was another one);
-- a first sighting only records the id: nothing rolled over.

local started = {}
for i = 1, #ARGV, 2 do
  local previous = redis.call('HGET', KEYS[1], ARGV[i])
  if previous ~= ARGV[i + 1] then
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
    if previous then table.insert(started, ARGV[i]) end
  end
end
return started
