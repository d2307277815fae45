-- Erase a player from everything Redis holds of a game itself, at once: their name and
-- its index entry, hidden and pending marks, recent submissions, presence, live follows
-- and link codes (player_erase_board.lua erases them from each leaderboard, tombstones
-- in its ledger included). The erased ZSET remembers them a while so that what runs
-- beside this (a rebuild's name restore, the player sync) cannot bring them back.
-- Erasing a player Redis does not know changes nothing but the erased mark.
--
-- KEYS[1] names          names HASH
-- KEYS[2] name_index     name index ZSET
-- KEYS[3] name_keys      name-keys HASH
-- KEYS[4] hidden         hidden SET
-- KEYS[5] pending        pending-players ZSET
-- KEYS[6] recent         recent LIST (JSON)
-- KEYS[7] followed       followed ZSET
-- KEYS[8] erased         erased ZSET (player_id -> when, ms)
-- KEYS[9] online         presence online ZSET
-- KEYS[10] last_seen     presence last-seen ZSET
-- KEYS[11] joined        presence joined ZSET
-- KEYS[12] left          presence left ZSET
-- KEYS[13] tabs          the player's presence tabs HASH
-- KEYS[14] codes         the player's issued link codes ZSET
-- KEYS[15..] per code: code_key
--   (their link code STRINGs)
-- ARGV[1] player         player_id
-- ARGV[2] now_ms         now, epoch ms
-- ARGV[3] codes          how many link codes are passed
-- ARGV[4] memory         how long the erased ZSET remembers, ms
-- ARGV[5] announce_ttl   lifetime of unannounced presence changes, ms
-- ARGV[6..] per code: code
--   (the link codes, in the order of their STRINGs)
-- Returns {'ok', name removed 0|1, recent rows removed, link codes removed, was online
--   0|1}, or {'retry', ''} when the codes ZSET lists a code the caller did not pass.

local player = ARGV[1]
local now = tonumber(ARGV[2])
local codes = tonumber(ARGV[3])

local passed_codes = {}
for i = 6, 5 + codes do passed_codes[ARGV[i]] = true end
for _, member in ipairs(redis.call('ZRANGE', KEYS[14], 0, -1)) do
  if not passed_codes[member] then return {'retry', ''} end
end

-- The name and where a search finds it.
local named = redis.call('HDEL', KEYS[1], player)
local search_key = redis.call('HGET', KEYS[3], player)
if search_key then redis.call('ZREM', KEYS[2], search_key .. '\0' .. player) end
redis.call('HDEL', KEYS[3], player)
redis.call('SREM', KEYS[4], player)
redis.call('ZREM', KEYS[5], player)
redis.call('ZREM', KEYS[7], player)

-- Recent submissions (a short capped list): rewritten without theirs.
local rows = redis.call('LRANGE', KEYS[6], 0, -1)
local kept = {}
for _, row in ipairs(rows) do
  if cjson.decode(row)['player_id'] ~= player then table.insert(kept, row) end
end
local recent_removed = #rows - #kept
if recent_removed > 0 then
  redis.call('DEL', KEYS[6])
  for i = 1, #kept, 1000 do
    redis.call('RPUSH', KEYS[6], unpack(kept, i, math.min(i + 999, #kept)))
  end
end

-- Presence: an online player leaves (pages drop them), and every trace goes.
local was_online = 0
if redis.call('ZREM', KEYS[9], player) == 1 then
  was_online = 1
  redis.call('ZREM', KEYS[11], player)
  redis.call('ZADD', KEYS[12], now, player)
  redis.call('PEXPIRE', KEYS[12], ARGV[5])
else
  redis.call('ZREM', KEYS[11], player)
end
redis.call('ZREM', KEYS[10], player)
redis.call('DEL', KEYS[13])

-- Link codes not redeemed yet.
local codes_removed = 0
for i = 15, 14 + codes do
  codes_removed = codes_removed + redis.call('DEL', KEYS[i])
end
redis.call('DEL', KEYS[14])

redis.call('ZREMRANGEBYSCORE', KEYS[8], '-inf', now - tonumber(ARGV[4]))
redis.call('ZADD', KEYS[8], now, player)
redis.call('PEXPIRE', KEYS[8], ARGV[4])

return {'ok', named, recent_removed, codes_removed, was_online}
