-- Failed log-ins, counted in sliding windows (ZSETs scored by when each failure
-- happened), checked before the password is even looked at:
--   per username AND client address: a lock-out (someone guessing from one place);
--   per client address: a lock-out (one place spraying passwords over many names);
--   per username from anywhere: a slow-down, never a lock-out, so that nobody can
--   lock a known user out of their own account: past a number of failures, the
--   username takes one attempt per interval, from any address.
--
-- KEYS[1] pair           the (username, address) failures ZSET
-- KEYS[2] address        the address's failures ZSET
-- KEYS[3] user           the username's failures ZSET
-- KEYS[4] next_attempt   the username's next-attempt STRING (ms)
-- ARGV[1] op             'check' (before an attempt) | 'fail' (record a failed one) |
--                        'clear' (the password was just reset by e-mail: forget the username's
--                        failures, its slow-down and its lock-out from this address; the
--                        address's own count stays)
-- ARGV[2] now_ms         now, epoch ms
-- ARGV[3] window_ms      window, ms
-- ARGV[4] pair_limit     most failures per username and address
-- ARGV[5] address_limit  most failures per address
-- ARGV[6] slow_after     failures of a username before the slow-down
-- ARGV[7] slow_ms        the slow-down's interval, ms
-- ARGV[8] member         ('fail' only; 'check' ignores it) a member unique to this attempt
-- Returns {ms until an attempt may be made (0: now), 'locked' | 'slowed' | ''}
--   ('fail': after recording this failure, the lock-out it completed if any; 'clear': {0, ''})

if ARGV[1] == 'clear' then
  redis.call('DEL', KEYS[1], KEYS[3], KEYS[4])
  return {0, ''}
end

local now, window = tonumber(ARGV[2]), tonumber(ARGV[3])
local limits = {tonumber(ARGV[4]), tonumber(ARGV[5])}

if ARGV[1] == 'fail' then
  for i = 1, 3 do
    redis.call('ZADD', KEYS[i], now, ARGV[8])
    redis.call('PEXPIRE', KEYS[i], window)
  end
end

local wait = 0
for i = 1, 3 do
  redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now - window)
end
for i = 1, 2 do
  local count = redis.call('ZCARD', KEYS[i])
  if count >= limits[i] then
    local oldest = redis.call('ZRANGE', KEYS[i], count - limits[i], count - limits[i], 'WITHSCORES')
    wait = math.max(wait, tonumber(oldest[2]) + window - now, 1)
  end
end
if wait > 0 then return {wait, 'locked'} end
if ARGV[1] == 'fail' then return {0, ''} end

-- The slow-down: each attempt takes the username's next slot.
if redis.call('ZCARD', KEYS[3]) >= tonumber(ARGV[6]) then
  local next_at = tonumber(redis.call('GET', KEYS[4]) or '0')
  if next_at > now then return {next_at - now, 'slowed'} end
  redis.call('SET', KEYS[4], now + tonumber(ARGV[7]), 'PX', window)
end
return {0, ''}
