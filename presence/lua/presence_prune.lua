-- Remove a game's expired presence members (memory only: reads apply the window
-- themselves) and queue a leave for each removed player. Atomic: two prunes
-- running at once never remove, so never announce, the same player twice.
--
-- KEYS[1] online        online ZSET (player_id -> last seen ms)
-- KEYS[2] last_seen     last-seen ZSET (the same, for players no longer online; trimmed to ARGV[5])
-- KEYS[3] joined        joined ZSET
-- KEYS[4] left          left ZSET
-- KEYS[5] watching      watching ZSET
-- ARGV[1] now_ms        now, epoch ms
-- ARGV[2] timeout_ms    timeout, ms
-- ARGV[3] announce_ms   lifetime of unannounced changes, ms
-- ARGV[4] batch         most players removed per call (bounds how long one call holds Redis)
-- ARGV[5] keep_ms       how long a last-seen time is kept, ms
-- Returns the removed player ids, oldest first; as many as ARGV[4] means call again.

local online, last_seen, joined, left, watching = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local now = tonumber(ARGV[1])
local cutoff = now - tonumber(ARGV[2])

redis.call('ZREMRANGEBYSCORE', watching, '-inf', '(' .. cutoff)
redis.call('ZREMRANGEBYSCORE', last_seen, '-inf', '(' .. (now - tonumber(ARGV[5])))

local expired = redis.call('ZRANGEBYSCORE', online, '-inf', '(' .. cutoff, 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[4]))
if #expired == 0 then return {} end
-- The expired members are exactly the lowest ranks, in the order read above.
redis.call('ZREMRANGEBYRANK', online, 0, #expired / 2 - 1)
local removed = {}
for i = 1, #expired, 2 do
  local player = expired[i]
  redis.call('ZADD', last_seen, expired[i + 1], player)
  -- The latest change wins (see presence_update.lua).
  redis.call('ZREM', joined, player)
  redis.call('ZADD', left, now, player)
  table.insert(removed, player)
end
redis.call('PEXPIRE', left, ARGV[3])
return removed
