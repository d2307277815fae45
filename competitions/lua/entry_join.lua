-- A player joins the current period of a competing board (issue 22): once, while entry is
-- open and the field has room. Atomic with the count it checks, so concurrent joins never
-- overfill a field. The join goes to the board's ledger (what the database copy and a
-- rebuild replay), and the period board is indexed and its close job scheduled as a first
-- score does, so that what the period holds expires with it even if nobody scores.
--
-- KEYS[1] entrants      the period's entrants ZSET (player_id -> when they entered, ms)
-- KEYS[2] hidden        the board's hidden SET (those players are refused)
-- KEYS[3] ledger        the board's ledger STREAM
-- KEYS[4] boards_index  boards index ZSET (board key -> expiry ms, '+inf' until archived)
-- KEYS[5] close_jobs    close-jobs ZSET ('<window>:<period id>' -> when to archive it, ms)
-- KEYS[6] board         the period board ZSET (only named: indexed, never written)
-- KEYS[7] cohorts       the period's cohorts ZSET (player_id -> cohort index; prelude cohorts)
-- KEYS[8] sizes         its cohort sizes ZSET
-- KEYS[9] state         its cohort state HASH
-- KEYS[10] ratings      the period's ratings HASH (player_id -> the rating they joined with)
-- KEYS[11] tiers        the board's league tiers HASH (player_id -> tier slug)
-- KEYS[12] tries        the period's attempts used HASH (player_id -> count; read only)
-- KEYS[13] extra        the period's attempts granted beyond the limit HASH (read only)
-- ARGV[1] player        player_id
-- ARGV[2] now_ms        now, epoch ms
-- ARGV[3] max_entrants  the field's size, 0 for no limit
-- ARGV[4] closes_ms     when entry closes, epoch ms ('' while the period lasts)
-- ARGV[5] ledger_cap    at this many unstored ledger entries a join is refused, not lost
-- ARGV[6] window        the competing window ('weekly')
-- ARGV[7] period_id     its current period's id
-- ARGV[8] ends_ms       when that period ends ('' if it never does)
-- ARGV[9] grace         grace after a period's end before its close job runs, ms
-- ARGV[10] rating       the rating given ('' for none)
-- ARGV[11] cohort_size  entrants a cohort takes at most, 0 for a board without cohorts
-- ARGV[12] fill         'first_come' | 'balanced'
-- ARGV[13] formed_ms    balanced: when the period's split is due, epoch ms ('' for first come)
-- ARGV[14] tier_slugs   a league's tier slugs bottom first, space-separated, when cohorts are
--   formed within tiers ('' otherwise)
-- ARGV[15] start_tier   the tier of a player the league has no tier for
-- ARGV[16] needs_rating '1' where cohorts are bands of rating: a new entrant without a rating
--   is refused (one who entered already joins again without it)
-- Returns {'ok', created 0|1, entered ms, entrants, cohort index or '', attempts used, extra
--   attempts}, or {'err', 'hidden', ''} | {'err', 'rating_required', ''} |
--   {'err', 'entry_closed', closes ms} | {'err', 'board_full', max entrants} |
--   {'err', 'ledger_full', ''}

local player, now = ARGV[1], tonumber(ARGV[2])
-- The player's attempts in the period, returned with every join.
local function tries()
  return tonumber(redis.call('HGET', KEYS[12], player) or '0'), tonumber(redis.call('HGET', KEYS[13], player) or '0')
end
local entered = redis.call('ZSCORE', KEYS[1], player)
if not entered and ARGV[16] == '1' and ARGV[10] == '' then
  return {'err', 'rating_required', ''}
end
if redis.call('SISMEMBER', KEYS[2], player) == 1 then
  return {'err', 'hidden', ''}
end
if entered then
  local used, extra = tries()
  return {'ok', 0, entered, redis.call('ZCARD', KEYS[1]), redis.call('ZSCORE', KEYS[7], player) or '', used, extra}
end
if ARGV[4] ~= '' and now >= tonumber(ARGV[4]) then
  return {'err', 'entry_closed', ARGV[4]}
end
local limit = tonumber(ARGV[3])
if limit > 0 and redis.call('ZCARD', KEYS[1]) >= limit then
  return {'err', 'board_full', ARGV[3]}
end
if redis.call('XLEN', KEYS[3]) >= tonumber(ARGV[5]) then
  return {'err', 'ledger_full', ''}
end

redis.call('ZADD', KEYS[1], now, player)
if ARGV[10] ~= '' then
  redis.call('HSET', KEYS[10], player, ARGV[10])
  redis.call('XADD', KEYS[3], '*', 'k', 'join', 'p', player, 'v', ARGV[10], 't', ARGV[2])
else
  redis.call('XADD', KEYS[3], '*', 'k', 'join', 'p', player, 't', ARGV[2])
end
local cohort = ''
local size = tonumber(ARGV[11])
if size > 0 then
  local k = {entrants = KEYS[1], ledger = KEYS[3], cohorts = KEYS[7], sizes = KEYS[8], state = KEYS[9]}
  local place = cohort_tier_place(KEYS[11], player, ARGV[14], ARGV[15])
  cohort = cohort_enter(k, player, place, size, ARGV[12] == 'first_come', ARGV[13], now, ARGV[2]) or ''
end
redis.call('ZADD', KEYS[4], 'NX', '+inf', KEYS[6])
if ARGV[8] ~= '' then
  redis.call('ZADD', KEYS[5], 'NX', tonumber(ARGV[8]) + tonumber(ARGV[9]), ARGV[6] .. ':' .. ARGV[7])
end
local used, extra = tries()
return {'ok', 1, ARGV[2], redis.call('ZCARD', KEYS[1]), cohort, used, extra}
