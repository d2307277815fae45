-- An admin's score correction: apply it to every current period board of a game
-- and append it to the ledger, in one atomic call, so the ledger replays exactly
-- what the boards saw (archive/ledger.py: score_correct, leaderboards_rebuild).
--
-- Increment games: the correction is a signed amount added to the player's total
-- (ZINCRBY of the sort-key delta). Best and latest games: it sets the player's
-- score (plain ZADD), so a correction may lower a best score. Names are untouched.
--
-- KEYS[1] names HASH: a player unknown to the game is refused (a typo in an admin
--   form must not create a player)
-- KEYS[2] hidden SET: a hidden player is refused (unhide them first)
-- KEYS[3] boards index ZSET, KEYS[4] dirty ZSET, KEYS[5] close-jobs ZSET: as the
--   submit script keeps them (games/lua/submit_score.lua)
-- KEYS[6] ledger STREAM
-- KEYS[7 .. 6+P] one board ZSET per period, in the order of the triples below
-- ARGV[1] mode: 'increment' | 'best' | 'latest'
-- ARGV[2] now, epoch ms
-- ARGV[3] largest allowed |score| (2^53-1)
-- ARGV[4] P, the number of periods
-- ARGV[5] grace after a period's end before its close job runs, ms
-- ARGV[6] player_id
-- ARGV[7] sort-key delta (increment) or sort key (best, latest)
-- ARGV[8] the value as given (score space, for the ledger)
-- ARGV[9] the reason, free text ('' for none)
-- ARGV[10 .. 9+3P] per board: period name, period id, period end ms ('' for all-time)
-- Returns {'ok', (period name, period id, sort key, rank)...}
--   | {'err', 'unknown', ''} | {'err', 'hidden', ''} | {'err', 'overflow', period name}

local mode = ARGV[1]
local now = tonumber(ARGV[2])
local max_abs = tonumber(ARGV[3])
local periods = tonumber(ARGV[4])
local player = ARGV[6]
local value = ARGV[7]

if redis.call('HEXISTS', KEYS[1], player) == 0 then
  return {'err', 'unknown', ''}
end
if redis.call('SISMEMBER', KEYS[2], player) == 1 then
  return {'err', 'hidden', ''}
end

if mode == 'increment' then
  -- Check every board before touching any: never a partial correction.
  local delta = tonumber(value)
  for i = 1, periods do
    local current = tonumber(redis.call('ZSCORE', KEYS[6 + i], player) or '0')
    if math.abs(current + delta) > max_abs then
      return {'err', 'overflow', ARGV[10 + (i - 1) * 3]}
    end
  end
end

redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
local result = {'ok'}
for i = 1, periods do
  local board = KEYS[6 + i]
  if mode == 'increment' then
    redis.call('ZINCRBY', board, value, player)
  else
    redis.call('ZADD', board, value, player)
  end
  local key = redis.call('ZSCORE', board, player)
  table.insert(result, ARGV[10 + (i - 1) * 3])
  table.insert(result, ARGV[11 + (i - 1) * 3])
  table.insert(result, key)
  table.insert(result, redis.call('ZCOUNT', board, '-inf', '(' .. key) + 1)

  -- As the submit script: a written board is indexed, gets its close job, and is marked changed.
  redis.call('ZADD', KEYS[3], 'NX', '+inf', board)
  local ends = ARGV[12 + (i - 1) * 3]
  if ends ~= '' then
    local job = ARGV[10 + (i - 1) * 3] .. ':' .. ARGV[11 + (i - 1) * 3]
    redis.call('ZADD', KEYS[5], 'NX', tonumber(ends) + tonumber(ARGV[5]), job)
  end
  redis.call('ZADD', KEYS[4], 'NX', now, board)
end

-- No cap here: corrections are rare admin actions and must not be refused for load.
redis.call('XADD', KEYS[6], '*',
  'k', 'correction', 'p', player, 'v', ARGV[8], 'n', '', 'm', mode, 't', ARGV[2], 'r', ARGV[9])
return result
