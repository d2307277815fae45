-- Give back display names to players the names HASH no longer knows (Redis lost its
-- data), without touching a name it holds: a stored name is the newest there is.
-- A player whose database row lacks the restored name is marked for the player sync,
-- as the submit script marks a new or renamed player.
--
-- KEYS[1] names HASH (player_id -> display name)
-- KEYS[2] pending-players ZSET (rows the database must create or refresh)
-- ARGV[1] now, epoch ms
-- ARGV[2 ..] triples: player_id, display name, 1 to mark the player for the sync (else 0)
-- Returns the number of names restored.

local restored = 0
for i = 2, #ARGV, 3 do
  if redis.call('HSETNX', KEYS[1], ARGV[i], ARGV[i + 1]) == 1 then
    if ARGV[i + 2] == '1' then redis.call('ZADD', KEYS[2], ARGV[1], ARGV[i]) end
    restored = restored + 1
  end
end
return restored
