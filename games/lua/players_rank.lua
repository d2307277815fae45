-- Rank given players within a whole board (a player's standing; the friends view).
--
-- KEYS[1] board      board ZSET (ascending sort base = best first; members: entries prelude)
-- KEYS[2] meta       the board's entry metadata HASH (player_id -> JSON); names are read next
-- KEYS[3] members    the board's members HASH (player_id -> member; ties other than 'shared')
-- ARGV[1] ties       'shared' | 'earliest' | 'subscore'
-- ARGV[2..] per player: player_id
-- Returns {total, (player_id, sort base or '', rank or 0, count of equal keys or 0,
--   metadata or '', oriented subscore or '')...}

local board = KEYS[1]
local ties = ARGV[1]
local result = {redis.call('ZCARD', board)}
for i = 2, #ARGV do
  local player = ARGV[i]
  local member, base, sub = entry_get(board, KEYS[3], ties, player)
  table.insert(result, player)
  if member then
    table.insert(result, entry_text(base))
    table.insert(result, entry_rank(board, ties, member, base))
    table.insert(result, entry_equal(board, ties, base))
    table.insert(result, redis.call('HGET', KEYS[2], player) or '')
    table.insert(result, entry_text(sub))
  else
    table.insert(result, '')
    table.insert(result, 0)
    table.insert(result, 0)
    table.insert(result, '')
    table.insert(result, '')
  end
end
return result
