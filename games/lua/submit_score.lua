-- Apply one score submission to every period board of a game, atomically.
--
-- Boards store a *sort key*: the score itself for lower-is-better games and the
-- negated score for higher-is-better ones, so that ascending order is always
-- best first and ties fall in player_id byte order on every board.
--
-- KEYS[1] names HASH (player_id -> display name)
-- KEYS[2] hidden SET (banned player ids)
-- KEYS[3] anti-spam ZSET of this player (sliding window of submission times)
-- KEYS[4] recent submissions LIST (capped)
-- KEYS[5] idempotency STRING (ignored when ARGV[11] is '')
-- KEYS[6] pending-players ZSET (rows the database must create or refresh)
-- KEYS[7] boards index ZSET (board key -> expiry ms, '+inf' for never)
-- KEYS[8] dirty ZSET (board key -> first change ms), read by the live broadcaster
-- KEYS[9..] one board ZSET per period, in the order of the period triples below
-- ARGV[1] player_id
-- ARGV[2] sort-key delta (increment) or value (best, latest)
-- ARGV[3] mode: 'increment' | 'best' | 'latest'
-- ARGV[4] display name, '' to keep the stored one (a new player gets their id)
-- ARGV[5] now, epoch ms
-- ARGV[6] anti-spam limit per window, 0 for none
-- ARGV[7] anti-spam window, ms
-- ARGV[8] a member unique to this submission for the anti-spam window
-- ARGV[9] recent-submission entry (JSON text, stored as is)
-- ARGV[10] recent list cap
-- ARGV[11] idempotency fingerprint of the request, '' when no Idempotency-Key
-- ARGV[12] idempotency record lifetime, ms
-- ARGV[13] largest allowed |score| (2^53-1: exact as a double)
-- ARGV[14..] per board, three each: period name, period id, expiry ms ('' for never)
-- Returns one of
--   {'ok', replayed 0|1, display name, (period name, period id, sort key, rank)...}
--   {'err', 'hidden', ''} | {'err', 'player_rate_limited', retry-after ms}
--   {'err', 'overflow', period name} | {'err', 'idempotency_mismatch', ''}

local player = ARGV[1]
local value = ARGV[2]
local mode = ARGV[3]
local now = tonumber(ARGV[5])
local fingerprint = ARGV[11]

if fingerprint ~= '' then
  local stored = redis.call('GET', KEYS[5])
  if stored then
    local sep = string.find(stored, '\n', 1, true)
    if string.sub(stored, 1, sep - 1) ~= fingerprint then
      return {'err', 'idempotency_mismatch', ''}
    end
    local result = cjson.decode(string.sub(stored, sep + 1))
    result[2] = 1
    return result
  end
end

if redis.call('SISMEMBER', KEYS[2], player) == 1 then
  return {'err', 'hidden', ''}
end

local limit = tonumber(ARGV[6])
if limit > 0 then
  local window = tonumber(ARGV[7])
  redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now - window)
  if redis.call('ZCARD', KEYS[3]) >= limit then
    local oldest = redis.call('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES')
    return {'err', 'player_rate_limited', tostring(tonumber(oldest[2]) + window - now)}
  end
end

local n = (#ARGV - 13) / 3
local max_abs = tonumber(ARGV[13])
if mode == 'increment' then
  -- Check every board before touching any: never a partial update.
  local delta = tonumber(value)
  for i = 1, n do
    local current = tonumber(redis.call('ZSCORE', KEYS[8 + i], player) or '0')
    if math.abs(current + delta) > max_abs then
      return {'err', 'overflow', ARGV[14 + (i - 1) * 3]}
    end
  end
end

if limit > 0 then
  redis.call('ZADD', KEYS[3], now, ARGV[8])
  redis.call('PEXPIRE', KEYS[3], ARGV[7])
end

local name = redis.call('HGET', KEYS[1], player)
if (not name) or (ARGV[4] ~= '' and ARGV[4] ~= name) then
  if ARGV[4] ~= '' then name = ARGV[4] else name = player end
  redis.call('HSET', KEYS[1], player, name)
  redis.call('ZADD', KEYS[6], now, player)
end

redis.call('LPUSH', KEYS[4], ARGV[9])
redis.call('LTRIM', KEYS[4], 0, tonumber(ARGV[10]) - 1)
redis.call('ZREMRANGEBYSCORE', KEYS[7], '-inf', now)

local result = {'ok', 0, name}
for i = 1, n do
  local board = KEYS[8 + i]
  local base = 14 + (i - 1) * 3
  if mode == 'increment' then
    redis.call('ZINCRBY', board, value, player)
  elseif mode == 'best' then
    redis.call('ZADD', board, 'LT', value, player)
  else
    redis.call('ZADD', board, value, player)
  end
  local key = redis.call('ZSCORE', board, player)
  local rank = redis.call('ZCOUNT', board, '-inf', '(' .. key) + 1
  local expiry = ARGV[base + 2]
  if expiry ~= '' then
    redis.call('PEXPIREAT', board, expiry)
    redis.call('ZADD', KEYS[7], expiry, board)
  else
    redis.call('ZADD', KEYS[7], '+inf', board)
  end
  redis.call('ZADD', KEYS[8], 'NX', now, board)
  table.insert(result, ARGV[base])
  table.insert(result, ARGV[base + 1])
  table.insert(result, key)
  table.insert(result, rank)
end

if fingerprint ~= '' then
  redis.call('SET', KEYS[5], fingerprint .. '\n' .. cjson.encode(result), 'PX', ARGV[12])
end
return result
