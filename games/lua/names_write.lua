-- Write display names outside a submission, keeping the name index in step:
-- 'set' is an admin's rename (the name replaces the stored one); 'restore' gives a
-- name back to a player the names HASH no longer knows (Redis lost its data), and
-- never touches a stored name, which is the newest there is, nor the name of a
-- player erased lately (the rebuild that restores may have read them before); 'index' only indexes
-- a name stored before the index existed, if it is still the player's name and
-- nothing indexed the player since (a rename meanwhile wins). A player whose
-- database row lacks the written name is marked for the player sync, as the
-- submit script marks a new or renamed player.
--
-- KEYS[1] names         names HASH (player_id -> display name)
-- KEYS[2] pending       pending-players ZSET (rows the database must create or refresh)
-- KEYS[3] name_index    name index ZSET ('<search key>\0<player_id>', scored 0)
-- KEYS[4] name_keys     name-keys HASH (player_id -> its search key)
-- KEYS[5] erased        erased ZSET (player_id -> when, ms)
-- ARGV[1] mode          'set' | 'restore' | 'index'
-- ARGV[2] now_ms        now, epoch ms
-- ARGV[3..] per name: player, name, search_key, mark
--   (player_id, display name, its search key, 1 to mark the player for the sync, else 0)
-- Returns the number of names written.

local written = 0
for i = 3, #ARGV, 4 do
  local player, name, search_key = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local write
  if ARGV[1] == 'set' then
    write = true
  elseif ARGV[1] == 'restore' then
    write = redis.call('HEXISTS', KEYS[1], player) == 0 and not redis.call('ZSCORE', KEYS[5], player)
  else
    write = redis.call('HGET', KEYS[1], player) == name and redis.call('HEXISTS', KEYS[4], player) == 0
  end
  if write then
    redis.call('HSET', KEYS[1], player, name)
    local old = redis.call('HGET', KEYS[4], player)
    if old and old ~= search_key then redis.call('ZREM', KEYS[3], old .. '\0' .. player) end
    redis.call('ZADD', KEYS[3], 0, search_key .. '\0' .. player)
    redis.call('HSET', KEYS[4], player, search_key)
    if ARGV[i + 3] == '1' then redis.call('ZADD', KEYS[2], ARGV[2], player) end
    written = written + 1
  end
end
return written
