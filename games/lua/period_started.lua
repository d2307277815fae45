-- Claim the announcement of a period's start: true for exactly one caller per
-- rollover, however many broadcasters run.
--
-- KEYS[1] live-periods HASH (period -> id last seen)
-- ARGV[1] period name, ARGV[2] its current id
-- Returns 1 if the stored id was another one (a rollover to announce), else 0
-- (the first sighting only records the id: nothing rolled over).

local previous = redis.call('HGET', KEYS[1], ARGV[1])
if previous == ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
if previous then return 1 end
return 0
