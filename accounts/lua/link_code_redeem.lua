-- Redeem a link code, with lock-outs against guessing: the wrong codes of one
-- site user and of one client address are counted in two sliding windows
-- (ZSETs scored by when each wrong guess happened). While either is full,
-- nothing is tried and the code, if right, stays unused.
-- A code is single-use: it is deleted when read, right or not yet expired.
--
-- KEYS[1] user_fails   the user's wrong-guesses ZSET
-- KEYS[2] ip_fails     the client address's wrong-guesses ZSET
-- KEYS[3] code_key     the code's STRING ('<expiry ms>:<player id>')
-- KEYS[4] hidden       the game's hidden-players SET (read only)
-- ARGV[1] now_ms       now, epoch ms
-- ARGV[2] window_ms    window, ms
-- ARGV[3] user_limit   most wrong guesses per user and window
-- ARGV[4] ip_limit     most wrong guesses per address and window
-- ARGV[5] member       a member unique to this attempt
-- Returns {'ok', player id} | {'hidden', player id} (code used up, player hidden)
--   | {'wrong', wrong guesses left before the lock-out}
--   | {'locked', ms until a guess is allowed again}

local user_fails, ip_fails, code_key, hidden = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local now = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local user_limit = tonumber(ARGV[3])
local ip_limit = tonumber(ARGV[4])

-- Returns the number of wrong guesses in the window and how long until one more is allowed (0: now).
local function window_state(key, limit)
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
  local count = redis.call('ZCARD', key)
  if count < limit then return count, 0 end
  local oldest = redis.call('ZRANGE', key, count - limit, count - limit, 'WITHSCORES')
  return count, math.max(1, tonumber(oldest[2]) + window - now)
end

local user_count, user_wait = window_state(user_fails, user_limit)
local ip_count, ip_wait = window_state(ip_fails, ip_limit)
if user_wait > 0 or ip_wait > 0 then
  return {'locked', math.max(user_wait, ip_wait)}
end

local value = redis.call('GET', code_key)
local player = nil
if value then
  redis.call('DEL', code_key)
  local sep = string.find(value, ':', 1, true)
  if tonumber(string.sub(value, 1, sep - 1)) > now then
    player = string.sub(value, sep + 1)
  end
end

if not player then
  for _, key in ipairs({user_fails, ip_fails}) do
    redis.call('ZADD', key, now, ARGV[5])
    redis.call('PEXPIRE', key, window)
  end
  return {'wrong', math.max(0, math.min(user_limit - user_count - 1, ip_limit - ip_count - 1))}
end
if redis.call('SISMEMBER', hidden, player) == 1 then
  return {'hidden', player}
end
return {'ok', player}
