-- Convert one period board of a ties 'earliest' leaderboard from the retired key format
-- (before 2026-11: member = player id, score = base * 2^bits + ms since the period started,
-- which only held bounded scores) to the entries prelude's (score = base, member = the
-- moment it was reached + player id, a members HASH beside it). Its hidden stash likewise.
-- Idempotent: a board that has a members HASH, or no entries, is left as it is.
--
-- KEYS[1] board       the period board ZSET
-- KEYS[2] stash       its hidden stash ZSET
-- KEYS[3] members     its members HASH (absent until converted)
-- KEYS[4] tie_clock   the leaderboard's hybrid clock STRING
-- ARGV[1] bits        the low bits the retired key kept for the ms offset
-- ARGV[2] start_ms    when the period started, epoch ms
-- Returns the number of entries converted (0: nothing to do)

if redis.call('EXISTS', KEYS[3]) == 1 then return 0 end
local unit = 2 ^ tonumber(ARGV[1])
local start = tonumber(ARGV[2])
local latest = redis.call('GET', KEYS[4])
local converted = 0
for _, zset in ipairs({KEYS[1], KEYS[2]}) do
  local rows = redis.call('ZRANGE', zset, 0, -1, 'WITHSCORES')
  for i = 1, #rows, 2 do
    local player, key = rows[i], tonumber(rows[i + 1])
    local base = math.floor(key / unit)
    local clock = entry_clock_next(false, start + (key - base * unit))
    local member = entry_member('earliest', player, 0, clock)
    redis.call('ZREM', zset, player)
    redis.call('ZADD', zset, base, member)
    redis.call('HSET', KEYS[3], player, member)
    if (not latest) or clock > latest then latest = clock end
    converted = converted + 1
  end
end
if latest then redis.call('SET', KEYS[4], latest) end
local ttl = redis.call('PTTL', KEYS[1])
if ttl > 0 then redis.call('PEXPIRE', KEYS[3], ttl) end
return converted
