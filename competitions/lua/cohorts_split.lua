-- The balanced split of a competing period's held entrants (issue 22), once: the worker
-- computed each one's cohort (core/competition_rules.balanced_split) from what it read; this
-- places them, then places as late comers (the smallest cohort of their tier with room) those
-- who entered after that read, so nobody stays held. Entrants who left meanwhile (an erasure)
-- are skipped. Every placement goes to the ledger. A second call finds the split done.
--
-- KEYS[1] entrants      the period's entrants ZSET
-- KEYS[2] cohorts       its cohorts ZSET (core/lua/prelude/cohorts.lua)
-- KEYS[3] sizes         its cohort sizes ZSET
-- KEYS[4] state         its cohort state HASH
-- KEYS[5] ledger        the board's ledger STREAM
-- KEYS[6] tiers         the board's league tiers HASH
-- ARGV[1] now_ms        now, epoch ms
-- ARGV[2] ledger_cap    the ledger's bound: a split that would pass it is refused, to retry
-- ARGV[3] cohort_size   entrants a cohort takes at most
-- ARGV[4] tier_slugs    a league's tier slugs bottom first, space-separated ('' outside one)
-- ARGV[5] start_tier    the tier of a player the league has no tier for
-- ARGV[6..] per entrant: player, cohort
--   (player_id, and the index of the cohort the split gives them)
-- Returns {'ok', placed, late comers placed} | {'done', 0, 0} (split before) |
--   {'err', 'ledger_full', 0}

local k = {entrants = KEYS[1], cohorts = KEYS[2], sizes = KEYS[3], state = KEYS[4], ledger = KEYS[5]}
if redis.call('HGET', k.state, 'placed') == '1' then
  return {'done', 0, 0}
end
local pairs_ = (#ARGV - 5) / 2
if redis.call('XLEN', k.ledger) + redis.call('ZCARD', k.entrants) > tonumber(ARGV[2]) then
  return {'err', 'ledger_full', 0}
end

local placed, newest = 0, {}
for i = 6, 5 + 2 * pairs_, 2 do
  local player, index = ARGV[i], tonumber(ARGV[i + 1])
  if redis.call('ZSCORE', k.entrants, player) and not redis.call('ZSCORE', k.cohorts, player) then
    cohort_count(k.sizes, index, 1)
    redis.call('ZADD', k.cohorts, index, player)
    redis.call('XADD', k.ledger, '*', 'k', 'cohort', 'p', player, 'v', ARGV[i + 1], 't', ARGV[1])
    local place = math.floor(index / COHORT_STRIDE)
    if not newest[place] or index > newest[place] then newest[place] = index end
    placed = placed + 1
  end
end
for place, index in pairs(newest) do
  redis.call('HSET', k.state, 'n:' .. place, index - place * COHORT_STRIDE, 'last:' .. place, index)
end
redis.call('HSET', k.state, 'placed', '1')

local late = 0
if redis.call('ZCARD', k.cohorts) < redis.call('ZCARD', k.entrants) then
  local size = tonumber(ARGV[3])
  for _, player in ipairs(redis.call('ZRANGE', k.entrants, 0, -1)) do
    if not redis.call('ZSCORE', k.cohorts, player) then
      local place = cohort_tier_place(KEYS[6], player, ARGV[4], ARGV[5])
      cohort_place(k, player, place, size, false, ARGV[1])
      late = late + 1
    end
  end
end
return {'ok', placed, late}
