-- One page of a game's online players, most recently seen first, with the counts.
--
-- KEYS[1] online       online ZSET
-- KEYS[2] watching     watching ZSET
-- KEYS[3] names        names HASH
-- KEYS[4] version      presence version counter (the broadcaster's; a live page drops
--   messages not newer than this read)
-- ARGV[1] now_ms       now, epoch ms
-- ARGV[2] timeout_ms   timeout, ms
-- ARGV[3] offset       offset
-- ARGV[4] limit        limit
-- Returns {version, online count, watching count, player_id, display name, last seen ms, ...}

local cutoff = tonumber(ARGV[1]) - tonumber(ARGV[2])
local reply = {
  tonumber(redis.call('GET', KEYS[4]) or '0'),
  redis.call('ZCOUNT', KEYS[1], cutoff, '+inf'),
  redis.call('ZCOUNT', KEYS[2], cutoff, '+inf'),
}
local page = redis.call('ZREVRANGEBYSCORE', KEYS[1], '+inf', cutoff, 'WITHSCORES', 'LIMIT', tonumber(ARGV[3]), tonumber(ARGV[4]))
for i = 1, #page, 2 do
  table.insert(reply, page[i])
  table.insert(reply, redis.call('HGET', KEYS[3], page[i]) or page[i])
  table.insert(reply, page[i + 1])
end
return reply
