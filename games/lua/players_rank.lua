-- Rank given players within a whole board (a player's standing; the friends view).
--
-- KEYS[1] board ZSET (ascending sort key = best first)
-- KEYS[2] the board's entry metadata HASH (player_id -> JSON); names are read next
-- ARGV[1..] player ids
-- Returns {total, (player_id, sort key or '', rank or 0, count of equal keys or 0, metadata or '')...}

local board = KEYS[1]
local result = {redis.call('ZCARD', board)}
for i = 1, #ARGV do
  local player = ARGV[i]
  local key = redis.call('ZSCORE', board, player)
  table.insert(result, player)
  if key then
    table.insert(result, key)
    table.insert(result, redis.call('ZCOUNT', board, '-inf', '(' .. key) + 1)
    table.insert(result, redis.call('ZCOUNT', board, key, key))
    table.insert(result, redis.call('HGET', KEYS[2], player) or '')
  else
    table.insert(result, '')
    table.insert(result, 0)
    table.insert(result, 0)
    table.insert(result, '')
  end
end
return result
