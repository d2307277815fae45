-- Hide a player from (or restore them to) every live period board of one leaderboard
-- at once (the caller runs it for each leaderboard of the game, and sets the game's own
-- hidden SET). A hidden player's entry moves to a stash beside each board, with the
-- board's expiry (from the index), and comes back unchanged when they are unhidden (its
-- member, so the moment it reached its score, stays in the board's members HASH).
--
-- KEYS[1] hidden        the leaderboard's hidden SET (its submit script refuses those players)
-- KEYS[2] boards_index  boards index ZSET (board key -> expiry ms)
-- KEYS[3] dirty         dirty ZSET
-- KEYS[4..] per board: board, stash, members
--   (a period board ZSET, its stash ZSET and its members HASH)
-- ARGV[1] player        player_id
-- ARGV[2] action        'hide' | 'unhide'
-- ARGV[3] now_ms        now, epoch ms
-- Returns {'ok', boards changed} or {'retry', ''} when the index lists a live
-- board the caller did not pass (a period began meanwhile): read it and call again.

local player = ARGV[1]
local now = tonumber(ARGV[3])
local passed = {}
for i = 4, #KEYS, 3 do passed[KEYS[i]] = true end
for _, board in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], now, '+inf')) do
  if not passed[board] then return {'retry', ''} end
end

if ARGV[2] == 'hide' then
  redis.call('SADD', KEYS[1], player)
else
  redis.call('SREM', KEYS[1], player)
end

local changed = 0
for i = 4, #KEYS, 3 do
  local from, to = KEYS[i], KEYS[i + 1]
  if ARGV[2] == 'unhide' then from, to = KEYS[i + 1], KEYS[i] end
  local member = entry_member_of(KEYS[i + 2], player)
  local key = redis.call('ZSCORE', from, member)
  if key then
    redis.call('ZADD', to, key, member)
    redis.call('ZREM', from, member)
    -- The board may have vanished with its last member: its expiry lives in the index.
    local expiry = redis.call('ZSCORE', KEYS[2], KEYS[i])
    if expiry and expiry ~= 'inf' then
      -- Relative to ARGV[3]: the index holds instants of the product's clock, not Redis's.
      redis.call('PEXPIRE', to, math.max(1, tonumber(expiry) - now))
    end
    redis.call('ZADD', KEYS[3], 'NX', now, KEYS[i])
    changed = changed + 1
  end
end
return {'ok', changed}
