-- Erase a player from everything Redis holds of one leaderboard, at once: every period
-- board, hidden stash, entry metadata and competition entry (live or kept after archiving), their hidden
-- mark, anti-spam window and idempotency records. A tombstone goes to the board's ledger
-- so that the database copy drops what it stores of them up to this point (the drain and
-- the rebuild read it in order). player_erase.lua erases what the game holds.
--
-- KEYS[1] boards_index   boards index ZSET (board key -> expiry ms)
-- KEYS[2] dirty          dirty ZSET
-- KEYS[3] ledger         ledger STREAM
-- KEYS[4] hidden         the board's hidden SET
-- KEYS[5] spam           the player's anti-spam ZSET
-- KEYS[6] records        their idempotency-records ZSET
-- KEYS[7] tiers          the board's league tiers HASH
-- KEYS[8..] per board: board, stash, meta, members, entrants, tries, extra, cohorts, sizes, ratings
--   (every board of the index: its period board ZSET, hidden stash ZSET, metadata HASH,
--   members HASH, and a competing period's entrants ZSET, tries and extra-attempts HASHes,
--   cohorts ZSET, cohort sizes ZSET and ratings HASH)
-- KEYS[8+10B..] per record: record
--   (the player's idempotency record STRINGs)
-- ARGV[1] player         player_id
-- ARGV[2] now_ms         now, epoch ms
-- ARGV[3] boards         B, the number of boards passed
-- ARGV[4] records        how many idempotency records are passed
-- Returns {'ok', boards left, idempotency records removed}, or {'retry', ''} when an
--   index lists a key the caller did not pass (read them again and call again).

local player = ARGV[1]
local now = tonumber(ARGV[2])
local boards = tonumber(ARGV[3])
local records = tonumber(ARGV[4])
local first_record = 8 + 10 * boards

local function listed_all(index, passed)
  for _, member in ipairs(redis.call('ZRANGE', index, 0, -1)) do
    if not passed[member] then return false end
  end
  return true
end

local passed_boards, passed_records = {}, {}
for i = 8, 7 + 10 * boards, 10 do passed_boards[KEYS[i]] = true end
for i = first_record, first_record + records - 1 do passed_records[KEYS[i]] = true end
if not (listed_all(KEYS[1], passed_boards) and listed_all(KEYS[6], passed_records)) then
  return {'retry', ''}
end

-- Boards, stashes, metadata, members and entries; live boards it left are marked for the broadcaster.
local left_boards = 0
redis.call('HDEL', KEYS[7], player)
for i = 8, 7 + 10 * boards, 10 do
  local member = entry_member_of(KEYS[i + 3], player)
  local on_board = redis.call('ZREM', KEYS[i], member)
  local stashed = redis.call('ZREM', KEYS[i + 1], member)
  redis.call('HDEL', KEYS[i + 2], player)
  redis.call('HDEL', KEYS[i + 3], player)
  redis.call('ZREM', KEYS[i + 4], player)
  redis.call('HDEL', KEYS[i + 5], player)
  redis.call('HDEL', KEYS[i + 6], player)
  local cohort = redis.call('ZSCORE', KEYS[i + 7], player)
  if cohort then
    redis.call('ZREM', KEYS[i + 7], player)
    redis.call('ZINCRBY', KEYS[i + 8], -1, string.format('%012d', tonumber(cohort)))
  end
  redis.call('HDEL', KEYS[i + 9], player)
  if on_board + stashed > 0 then left_boards = left_boards + 1 end
  local expiry = redis.call('ZSCORE', KEYS[1], KEYS[i])
  if on_board == 1 and expiry and (expiry == 'inf' or tonumber(expiry) >= now) then
    redis.call('ZADD', KEYS[2], 'NX', now, KEYS[i])
  end
end

redis.call('SREM', KEYS[4], player)
redis.call('DEL', KEYS[5])
local records_removed = 0
for i = first_record, first_record + records - 1 do
  records_removed = records_removed + redis.call('DEL', KEYS[i])
end
redis.call('DEL', KEYS[6])

redis.call('XADD', KEYS[3], '*', 'k', 'erase', 'p', player, 't', ARGV[2])
return {'ok', left_boards, records_removed}
