-- Issue one link code for a player: at most LIMIT live codes per player, counted
-- with a ZSET of the player's codes scored by when each expires, so the window
-- of the limit is the codes' lifetime and the count needs no separate counter.
-- The code's value carries its expiry so redemption can judge it by the
-- caller's clock as well as by Redis's TTL.
--
-- KEYS[1] issued     the player's issued-codes ZSET (code -> expiry ms)
-- KEYS[2] code_key   the new code's STRING
-- KEYS[3] hidden     the game's hidden-players SET (read only)
-- ARGV[1] now_ms     now, epoch ms
-- ARGV[2] ttl_ms     code lifetime, ms
-- ARGV[3] limit      most live codes per player
-- ARGV[4] player     player id
-- ARGV[5] code       the new code
-- Returns {'ok', expiry ms} | {'limit', ms until the oldest live code expires}
--   | {'hidden', 0} | {'collision', 0} (the code is taken: draw another)

local issued, code_key, hidden = KEYS[1], KEYS[2], KEYS[3]
local now = tonumber(ARGV[1])
local ttl = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local player = ARGV[4]

if redis.call('SISMEMBER', hidden, player) == 1 then
  return {'hidden', 0}
end

redis.call('ZREMRANGEBYSCORE', issued, '-inf', now)
local live = redis.call('ZCARD', issued)
if live >= limit then
  -- Issuance reopens when enough of the oldest codes have expired to go under the limit.
  local oldest = redis.call('ZRANGE', issued, live - limit, live - limit, 'WITHSCORES')
  return {'limit', math.max(1, tonumber(oldest[2]) - now)}
end

local expires = now + ttl
if not redis.call('SET', code_key, expires .. ':' .. player, 'NX', 'PX', ttl) then
  return {'collision', 0}
end
redis.call('ZADD', issued, expires, ARGV[5])
-- The newest member expires last, so the set lives exactly as long as its live codes.
redis.call('PEXPIRE', issued, ttl)
return {'ok', expires}
