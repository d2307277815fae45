-- One event against a sliding-window limit: record it if the window has room.
--
-- KEYS[1] window     the window's ZSET (member -> when, ms)
-- ARGV[1] now_ms     now, epoch ms
-- ARGV[2] window_ms  the window, ms
-- ARGV[3] limit      most events per window
-- ARGV[4] member     a member unique to this event
-- Returns 0 (recorded) or the ms until the window has room again (nothing recorded)

local now, window, limit = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local count = redis.call('ZCARD', KEYS[1])
if count >= limit then
  local oldest = redis.call('ZRANGE', KEYS[1], count - limit, count - limit, 'WITHSCORES')
  return math.max(tonumber(oldest[2]) + window - now, 1)
end
redis.call('ZADD', KEYS[1], now, ARGV[4])
redis.call('PEXPIRE', KEYS[1], window)
return 0
