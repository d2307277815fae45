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
-- ARGV[1] player        player_id
-- ARGV[2] now_ms        now, epoch ms
-- ARGV[3] max_entrants  the field's size, 0 for no limit
-- ARGV[4] closes_ms     when entry closes, epoch ms ('' while the period lasts)
-- ARGV[5] ledger_cap    at this many unstored ledger entries a join is refused, not lost
-- ARGV[6] window        the competing window ('weekly')
-- ARGV[7] period_id     its current period's id
-- ARGV[8] ends_ms       when that period ends ('' if it never does)
-- ARGV[9] grace         grace after a period's end before its close job runs, ms
-- Returns {'ok', created 0|1, entered ms, entrants}, or {'err', 'hidden', ''} |
--   {'err', 'entry_closed', closes ms} | {'err', 'board_full', max entrants} |
--   {'err', 'ledger_full', ''}

local player, now = ARGV[1], tonumber(ARGV[2])
if redis.call('SISMEMBER', KEYS[2], player) == 1 then
  return {'err', 'hidden', ''}
end
local entered = redis.call('ZSCORE', KEYS[1], player)
if entered then
  return {'ok', 0, entered, redis.call('ZCARD', KEYS[1])}
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
redis.call('XADD', KEYS[3], '*', 'k', 'join', 'p', player, 't', ARGV[2])
redis.call('ZADD', KEYS[4], 'NX', '+inf', KEYS[6])
if ARGV[8] ~= '' then
  redis.call('ZADD', KEYS[5], 'NX', tonumber(ARGV[8]) + tonumber(ARGV[9]), ARGV[6] .. ':' .. ARGV[7])
end
return {'ok', 1, ARGV[2], redis.call('ZCARD', KEYS[1])}
