-- Grant a player extra attempts in the current period of a competing board (issue 22: a
-- studio's "one more try"), on top of the board's max_attempts; grants add up. The grant goes
-- to the board's ledger (what the database copy and a rebuild replay).
--
-- KEYS[1] extra         the period's extra-attempts HASH (player_id -> attempts granted)
-- KEYS[2] tries         the period's tries HASH (player_id -> scores accepted)
-- KEYS[3] boards_index  boards index ZSET (board key -> expiry ms, '+inf' until archived)
-- KEYS[4] close_jobs    close-jobs ZSET ('<window>:<period id>' -> when to archive it, ms)
-- KEYS[5] board         the period board ZSET (only named: indexed, never written)
-- KEYS[6] ledger        the board's ledger STREAM
-- ARGV[1] player        player_id
-- ARGV[2] add           attempts to add, at least 1
-- ARGV[3] extra_max     the most a player may be granted in one period
-- ARGV[4] window        the competing window ('weekly')
-- ARGV[5] period_id     its current period's id
-- ARGV[6] ends_ms       when that period ends ('' if it never does)
-- ARGV[7] grace         grace after a period's end before its close job runs, ms
-- ARGV[8] now_ms        now, epoch ms
-- ARGV[9] ledger_cap    at this many unstored ledger entries a grant is refused, not lost
-- Returns {'ok', extra granted in all, tries used}, or {'err', 'too_many', extra granted so far} |
--   {'err', 'ledger_full', ''}

local granted = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
local add = tonumber(ARGV[2])
if granted + add > tonumber(ARGV[3]) then
  return {'err', 'too_many', tostring(granted)}
end
if redis.call('XLEN', KEYS[6]) >= tonumber(ARGV[9]) then
  return {'err', 'ledger_full', ''}
end
granted = redis.call('HINCRBY', KEYS[1], ARGV[1], add)
redis.call('XADD', KEYS[6], '*', 'k', 'attempts', 'p', ARGV[1], 'v', ARGV[2], 't', ARGV[8])
redis.call('ZADD', KEYS[3], 'NX', '+inf', KEYS[5])
if ARGV[6] ~= '' then
  redis.call('ZADD', KEYS[4], 'NX', tonumber(ARGV[6]) + tonumber(ARGV[7]), ARGV[4] .. ':' .. ARGV[5])
end
return {'ok', granted, redis.call('HGET', KEYS[2], ARGV[1]) or '0'}
