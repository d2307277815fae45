-- An admin's score correction: apply it to every current period board of one leaderboard
-- and append it to the board's ledger, in one atomic call, so the ledger replays exactly
-- what the boards saw (archive/ledger: score_correct, leaderboards_rebuild).
--
-- Increment boards: the correction is a signed amount added to the player's total (and
-- its subscore, if one is given, to their subscore). Best and latest boards: it sets the
-- player's score (and subscore, if given; else theirs stays), so a correction may lower a
-- best score. Names and metadata are untouched. Entries as the entries prelude keys them;
-- a corrected entry counts as reaching its score now, unless it stays what it was.
--
-- KEYS[1] hidden        the board's hidden SET: a hidden player is refused (unhide them first)
-- KEYS[2] boards_index  boards index ZSET, as the submit script keeps it
-- KEYS[3] dirty         dirty ZSET
-- KEYS[4] close_jobs    close-jobs ZSET
-- KEYS[5] ledger        ledger STREAM
-- KEYS[6] tie_clock     the board's hybrid clock STRING
-- KEYS[7..] per window: board, members
--   (its period board ZSET and that board's members HASH)
-- ARGV[1] rule          'increment' (adds) | 'latest' (sets)
-- ARGV[2] now_ms        now, epoch ms
-- ARGV[3] windows       W, the number of windows
-- ARGV[4] grace         grace after a period's end before its close job runs, ms
-- ARGV[5] ties          'shared' | 'earliest' | 'subscore'
-- ARGV[6] player        player_id
-- ARGV[7] value         sort-base delta (increment) or sort base (latest)
-- ARGV[8] sub           oriented subscore delta or value; '' keeps the stored subscore
-- ARGV[9] mode          the board's mode, for the ledger
-- ARGV[10] score        the value as given (score space, for the ledger)
-- ARGV[11] subscore     the subscore as given ('' for none), for the ledger
-- ARGV[12] reason       free text ('' for none)
-- ARGV[13..] per window: name, period_id, ends_ms
--   (ends_ms '' if the period never ends)
-- Returns {'ok', (window, period id, sort base, rank, oriented subscore)...}
--   | {'err', 'hidden', ''} | {'err', 'overflow', window}

local rule = ARGV[1]
local now = tonumber(ARGV[2])
local windows = tonumber(ARGV[3])
local ties = ARGV[5]
local player = ARGV[6]
local value = tonumber(ARGV[7])

local function window_arg(i, field) return ARGV[13 + (i - 1) * 3 + field] end
local function board_of(i) return KEYS[5 + 2 * i] end
local function members_of(i) return KEYS[6 + 2 * i] end
local function sub_of(old_sub)
  if ARGV[8] ~= '' then return tonumber(ARGV[8]) end
  if rule == 'increment' then return 0 end
  return old_sub or 0
end

if redis.call('SISMEMBER', KEYS[1], player) == 1 then
  return {'err', 'hidden', ''}
end

if rule == 'increment' then
  -- Check every board before touching any: never a partial correction.
  for i = 1, windows do
    local _, base, old_sub = entry_get(board_of(i), members_of(i), ties, player)
    if not (entry_exact((base or 0) + value) and entry_exact((old_sub or 0) + sub_of(old_sub))) then
      return {'err', 'overflow', window_arg(i, 0)}
    end
  end
end

local clock = redis.call('GET', KEYS[6])
if ties ~= 'shared' then
  clock = entry_clock_next(clock, now)
  redis.call('SET', KEYS[6], clock)
end

redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
local result = {'ok'}
for i = 1, windows do
  local board, members = board_of(i), members_of(i)
  local old_member, old_base, old_sub = entry_get(board, members, ties, player)
  local base, new_sub = entry_next(rule, old_base, old_sub, value, sub_of(old_sub))
  local member = old_member
  if base then
    member = entry_member(ties, player, new_sub, clock)
    entry_put(board, members, ties, player, old_member, member, base)
  else
    base, new_sub = old_base, old_sub
  end
  table.insert(result, window_arg(i, 0))
  table.insert(result, window_arg(i, 1))
  table.insert(result, entry_text(base))
  table.insert(result, entry_rank(board, ties, member, base))
  table.insert(result, entry_text(new_sub))

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
local entry = {'k', 'correction', 'p', player, 'v', ARGV[10], 'n', '', 'm', ARGV[9], 't', ARGV[2], 'r', ARGV[12]}
if ARGV[11] ~= '' then
  table.insert(entry, 's')
  table.insert(entry, ARGV[11])
end
redis.call('XADD', KEYS[5], '*', unpack(entry))
return result
