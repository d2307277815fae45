-- Failed log-ins, counted in two sliding windows (ZSETs scored by when each
-- failure happened): one per username, one per client address. 'check' runs
-- before the password is even looked at; 'fail' records a failed attempt.
--
-- KEYS[1] the username's failures ZSET
-- KEYS[2] the client address's failures ZSET
-- ARGV[1] op: 'check' | 'fail'
-- ARGV[2] now, epoch ms
-- ARGV[3] window, ms
-- ARGV[4] most failures per username and window
-- ARGV[5] most failures per address and window
-- ARGV[6] ('fail' only) a member unique to this attempt
-- Returns ms until a log-in may be tried again: 0 when not locked out
--   ('fail': after recording this failure)

local now = tonumber(ARGV[2])
local window = tonumber(ARGV[3])
local limits = {tonumber(ARGV[4]), tonumber(ARGV[5])}

if ARGV[1] == 'fail' then
  for i = 1, 2 do
    redis.call('ZADD', KEYS[i], now, ARGV[6])
    redis.call('PEXPIRE', KEYS[i], window)
  end
end

local wait = 0
for i = 1, 2 do
  redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now - window)
  local count = redis.call('ZCARD', KEYS[i])
  if count >= limits[i] then
    local oldest = redis.call('ZRANGE', KEYS[i], count - limits[i], count - limits[i], 'WITHSCORES')
    wait = math.max(wait, tonumber(oldest[2]) + window - now, 1)
  end
end
return wait
