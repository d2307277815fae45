-- An admin's score correction: apply it to every current period board of one leaderboard
-- and append it to the board's ledger, in one atomic call, so the ledger replays exactly
-- what the boards saw (archive/ledger: score_correct, leaderboards_rebuild).
--
-- Increment boards: the correction is a signed amount added to the player's total.
-- Best and latest boards: it sets the player's score, so a correction may lower a best
-- score. Names and metadata are untouched. Sort keys as submit_score.lua makes them
-- (base * 2^bits + ms since the period started, bits 0 for ties 'shared'); a corrected
-- entry counts as reaching its score now, unless the score stays what it was.
--
-- KEYS[1] the board's hidden SET: a hidden player is refused (unhide them first)
-- KEYS[2] boards index ZSET, KEYS[3] dirty ZSET, KEYS[4] close-jobs ZSET: as the
--   submit script keeps them (games/lua/submit_score.lua)
-- KEYS[5] ledger STREAM
-- KEYS[6 .. 5+W] one board ZSET per window, in the order of the window groups below
-- ARGV[1] mode: 'increment' | 'best' | 'latest'
-- ARGV[2] now, epoch ms
-- ARGV[3] W, the number of windows
-- ARGV[4] grace after a period's end before its close job runs, ms
-- ARGV[5] player_id
-- ARGV[6] sort-base delta (increment) or sort base (best, latest)
-- ARGV[7] the value as given (score space, for the ledger)
-- ARGV[8] the reason, free text ('' for none)
-- ARGV[9 .. 8+6W] per window: name, period id, period end ms ('' if it never ends),
--   tie bits, largest |sort base| kept exact, period start ms (0 if none)
-- Returns {'ok', (window, period id, sort base, rank)...}
--   | {'err', 'hidden', ''} | {'err', 'overflow', window}

local mode = ARGV[1]
local now = tonumber(ARGV[2])
local windows = tonumber(ARGV[3])
local player = ARGV[5]
local value = tonumber(ARGV[6])

local function window_arg(i, field) return ARGV[9 + (i - 1) * 6 + field] end
local function unit_of(i) return 2 ^ tonumber(window_arg(i, 3)) end
local function base_of(key, unit) return math.floor(tonumber(key) / unit) end

if redis.call('SISMEMBER', KEYS[1], player) == 1 then
  return {'err', 'hidden', ''}
end

if mode == 'increment' then
  -- Check every board before touching any: never a partial correction.
  for i = 1, windows do
    local stored = redis.call('ZSCORE', KEYS[5 + i], player)
    local total = (stored and base_of(stored, unit_of(i)) or 0) + value
    if math.abs(total) > tonumber(window_arg(i, 4)) then
      return {'err', 'overflow', window_arg(i, 0)}
    end
  end
end

redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
local result = {'ok'}
for i = 1, windows do
  local board = KEYS[5 + i]
  local unit = unit_of(i)
  local stored = redis.call('ZSCORE', board, player)
  local old_base = stored and base_of(stored, unit)
  local base = value
  if mode == 'increment' then base = (old_base or 0) + value end
  if base ~= old_base then
    local offset = 0
    if tonumber(window_arg(i, 3)) > 0 then offset = now - tonumber(window_arg(i, 5)) end
    redis.call('ZADD', board, base * unit + offset, player)
  end
  local key = redis.call('ZSCORE', board, player)
  table.insert(result, window_arg(i, 0))
  table.insert(result, window_arg(i, 1))
  table.insert(result, string.format('%.0f', base_of(key, unit)))
  table.insert(result, redis.call('ZCOUNT', board, '-inf', '(' .. key) + 1)

  -- As the submit script: a written board is indexed, gets its close job, and is marked changed.
  redis.call('ZADD', KEYS[2], 'NX', '+inf', board)
  local ends = window_arg(i, 2)
  if ends ~= '' then
    local job = window_arg(i, 0) .. ':' .. window_arg(i, 1)
    redis.call('ZADD', KEYS[4], 'NX', tonumber(ends) + tonumber(ARGV[4]), job)
  end
  redis.call('ZADD', KEYS[3], 'NX', now, board)
end

-- No cap here: corrections are rare admin actions and must not be refused for load.
redis.call('XADD', KEYS[5], '*',
  'k', 'correction', 'p', player, 'v', ARGV[7], 'n', '', 'm', mode, 't', ARGV[2], 'r', ARGV[8])
return result
