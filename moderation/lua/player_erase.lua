-- Erase a player from everything Redis holds of a game, at once: every board and
-- hidden stash (live or kept after archiving), their name and its index entry,
-- hidden and pending marks, recent submissions, anti-spam window, idempotency
-- records, presence, live follows and link codes. A tombstone goes to the ledger so
-- that the database copy drops what it stores of them up to this point (the drain
-- and the rebuild read it in order), and the erased ZSET remembers them a while so
-- that what runs beside this (a rebuild's name restore, the player sync) cannot
-- bring them back. Erasing a player Redis does not know changes nothing but the
-- tombstone and the erased mark.
--
-- KEYS[1] names HASH, KEYS[2] name index ZSET, KEYS[3] name-keys HASH
-- KEYS[4] hidden SET, KEYS[5] pending-players ZSET, KEYS[6] recent LIST (JSON)
-- KEYS[7] boards index ZSET (board key -> expiry ms), KEYS[8] dirty ZSET
-- KEYS[9] followed ZSET, KEYS[10] erased ZSET (player_id -> when, ms)
-- KEYS[11] ledger STREAM
-- KEYS[12] the player's anti-spam ZSET, KEYS[13] their idempotency-records ZSET
-- KEYS[14] presence online ZSET, KEYS[15] last-seen ZSET, KEYS[16] joined ZSET,
-- KEYS[17] left ZSET, KEYS[18] the player's presence tabs HASH
-- KEYS[19] the player's issued link codes ZSET
-- KEYS[20 .. 19+2B] pairs: board ZSET, its hidden stash ZSET (every board of the index)
-- then the player's idempotency record STRINGs, then their link code STRINGs
-- ARGV[1] player_id, ARGV[2] now, epoch ms, ARGV[3] B (boards passed)
-- ARGV[4] how many idempotency records passed, ARGV[5] how many link codes passed
-- ARGV[6] how long the erased ZSET remembers, ms; ARGV[7] lifetime of unannounced
--   presence changes, ms; ARGV[8 ..] the link codes, in the order of their STRINGs
-- Returns {'ok', boards left, name removed 0|1, recent rows removed, idempotency
--   records removed, link codes removed, was online 0|1}, or {'retry', ''} when an
--   index lists a key the caller did not pass (read them again and call again).

local player = ARGV[1]
local now = tonumber(ARGV[2])
local boards = tonumber(ARGV[3])
local records = tonumber(ARGV[4])
local codes = tonumber(ARGV[5])
local first_record = 20 + 2 * boards
local first_code = first_record + records

-- Every key to touch must have been passed (all share the game's hash tag).
local function listed_all(index, passed)
  for _, member in ipairs(redis.call('ZRANGE', index, 0, -1)) do
    if not passed[member] then return false end
  end
  return true
end

local passed_boards, passed_records, passed_codes = {}, {}, {}
for i = 20, 19 + 2 * boards, 2 do passed_boards[KEYS[i]] = true end
for i = first_record, first_record + records - 1 do passed_records[KEYS[i]] = true end
for i = 8, 7 + codes do passed_codes[ARGV[i]] = true end
if not (listed_all(KEYS[7], passed_boards) and listed_all(KEYS[13], passed_records)
    and listed_all(KEYS[19], passed_codes)) then
  return {'retry', ''}
end

-- Boards and stashes; live boards it left are marked for the broadcaster.
local left_boards = 0
for i = 20, 19 + 2 * boards, 2 do
  local on_board = redis.call('ZREM', KEYS[i], player)
  local stashed = redis.call('ZREM', KEYS[i + 1], player)
  if on_board + stashed > 0 then left_boards = left_boards + 1 end
  local expiry = redis.call('ZSCORE', KEYS[7], KEYS[i])
  if on_board == 1 and expiry and (expiry == 'inf' or tonumber(expiry) >= now) then
    redis.call('ZADD', KEYS[8], 'NX', now, KEYS[i])
  end
end

-- The name and where a search finds it.
local named = redis.call('HDEL', KEYS[1], player)
local search_key = redis.call('HGET', KEYS[3], player)
if search_key then redis.call('ZREM', KEYS[2], search_key .. '\0' .. player) end
redis.call('HDEL', KEYS[3], player)
redis.call('SREM', KEYS[4], player)
redis.call('ZREM', KEYS[5], player)
redis.call('ZREM', KEYS[9], player)

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
  -- The broadcaster sends the recent list again with the changed boards: mark the live ones.
  for _, board in ipairs(redis.call('ZRANGEBYSCORE', KEYS[7], now, '+inf')) do
    redis.call('ZADD', KEYS[8], 'NX', now, board)
  end
end

-- Anti-spam window and idempotency records.
redis.call('DEL', KEYS[12])
local records_removed = 0
for i = first_record, first_record + records - 1 do
  records_removed = records_removed + redis.call('DEL', KEYS[i])
end
redis.call('DEL', KEYS[13])

-- Presence: an online player leaves (pages drop them), and every trace goes.
local was_online = 0
if redis.call('ZREM', KEYS[14], player) == 1 then
  was_online = 1
  redis.call('ZREM', KEYS[16], player)
  redis.call('ZADD', KEYS[17], now, player)
  redis.call('PEXPIRE', KEYS[17], ARGV[7])
else
  redis.call('ZREM', KEYS[16], player)
end
redis.call('ZREM', KEYS[15], player)
redis.call('DEL', KEYS[18])

-- Link codes not redeemed yet.
local codes_removed = 0
for i = first_code, first_code + codes - 1 do
  codes_removed = codes_removed + redis.call('DEL', KEYS[i])
end
redis.call('DEL', KEYS[19])

redis.call('ZREMRANGEBYSCORE', KEYS[10], '-inf', now - tonumber(ARGV[6]))
redis.call('ZADD', KEYS[10], now, player)
redis.call('PEXPIRE', KEYS[10], ARGV[6])
redis.call('XADD', KEYS[11], '*', 'k', 'erase', 'p', player, 't', ARGV[2])

return {'ok', left_boards, named, recent_removed, records_removed, codes_removed, was_online}
