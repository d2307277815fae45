-- Acknowledge players written to the database, unless they were marked again
-- after the read (a new display name): those stay for the next batch.
--
-- KEYS[1] pending-players ZSET
-- ARGV pairs: player_id, the marked-at ms seen by the read
-- Returns the number removed

local removed = 0
for i = 1, #ARGV, 2 do
  if redis.call('ZSCORE', KEYS[1], ARGV[i]) == ARGV[i + 1] then
    removed = removed + redis.call('ZREM', KEYS[1], ARGV[i])
  end
end
return removed
