-- The background's safety net looks at one board (archive/services/catch_up.py): what it
-- holds of the background's work, in one call, so that a sweep costs one command a board.
-- Read only.
--
-- KEYS[1] ledger        ledger STREAM
-- KEYS[2] due           close jobs due ZSET (job -> when due, ms)
-- KEYS[3] claims        claims ZSET (job -> visibility deadline, ms)
-- KEYS[4] dead          dead-letter ZSET (job -> when it died, ms)
-- KEYS[5] boards_index  boards index ZSET (board key -> expiry ms, '+inf' until archived)
-- ARGV[1] now_ms        now, epoch ms
-- ARGV[2] prefix        the prefix of the board's period keys ('lb:{game.board}:'): a period
--   board's key is that prefix and its close job's name ('<period>:<period id>')
-- Returns {ledger entries not stored, its earliest due job or claim deadline (ms; '' if none),
--   dead jobs, then pairs: the job of an indexed period board that is neither due, claimed nor
--   dead, and 1 if that board has its retention expiry (its archive completed) else 0}

local result = {redis.call('XLEN', KEYS[1]), '', redis.call('ZCARD', KEYS[4])}
for _, queue in ipairs({KEYS[2], KEYS[3]}) do
  local first = redis.call('ZRANGE', queue, 0, 0, 'WITHSCORES')
  if first[2] and (result[2] == '' or tonumber(first[2]) < tonumber(result[2])) then result[2] = first[2] end
end
local prefix = ARGV[2]
-- Entries whose expiry passed name boards already gone (submit_score.lua trims them).
local indexed = redis.call('ZRANGEBYSCORE', KEYS[5], ARGV[1], '+inf', 'WITHSCORES')
for i = 1, #indexed, 2 do
  if string.sub(indexed[i], 1, #prefix) == prefix then
    local job = string.sub(indexed[i], #prefix + 1)
    if not (redis.call('ZSCORE', KEYS[2], job) or redis.call('ZSCORE', KEYS[3], job)
        or redis.call('ZSCORE', KEYS[4], job)) then
      table.insert(result, job)
      table.insert(result, indexed[i + 1] == 'inf' and 0 or 1)
    end
  end
end
return result
