-- Read a batch of players whose database row must be created or refreshed.
--
-- KEYS[1] pending     pending-players ZSET (player_id -> when marked, ms)
-- KEYS[2] names       names HASH
-- ARGV[1] batch       batch size
-- Returns {(player_id, marked-at ms, display name)...}, oldest first

local rows = redis.call('ZRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1, 'WITHSCORES')
local result = {}
for i = 1, #rows, 2 do
  table.insert(result, rows[i])
  table.insert(result, rows[i + 1])
  table.insert(result, redis.call('HGET', KEYS[2], rows[i]) or rows[i])
end
return result
