-- Cohorts of a competing board's period (issue 22): where an entrant is placed. One
-- definition, prepended to every script that places entrants (a join, an open board's
-- first score, a balanced split's late comers); core/competition_rules.py is the twin
-- (cohort_name, balanced_split, late_cohort) and tests run both on the same inputs.
--
-- A cohort's index is its tier's place (0 outside a league) x COHORT_STRIDE + its number
-- within the tier, from 1. Three keys of the period board (core/keys.py) hold them:
--   cohorts  ZSET player -> cohort index;
--   sizes    ZSET cohort index as 12 digits -> tier place x COHORT_SIZE_SPAN + entrants, so
--            the smallest cohort of a tier with room is one range read (equal sizes: the
--            lowest index, by the digits' byte order);
--   state    HASH 'n:<place>' cohorts made in a tier, 'last:<place>' its newest, 'placed'
--            once a balanced split ran (entrants before it wait, unplaced).
-- Every placement goes to the ledger ('cohort', the index in 'v'): a rebuild restores it.

local COHORT_STRIDE = 1000000000
local COHORT_SIZE_SPAN = 2048 -- above COHORT_SIZE_MAX (1,000)

local function cohort_member(index)
  return string.format('%012d', index)
end

-- The tier place a player races in: their tier (league tiers HASH) among the slugs listed
-- (space-separated, bottom first), the start tier for a newcomer; 0 with no list.
local function cohort_tier_place(tiers_key, player, slugs, start)
  if slugs == '' then return 0 end
  local tier = redis.call('HGET', tiers_key, player) or start
  local place, fallback = 0, 0
  for slug in string.gmatch(slugs, '%S+') do
    if slug == tier then return place end
    if slug == start then fallback = place end
    place = place + 1
  end
  return fallback -- a tier the league no longer has: start again
end

-- Count one more (or, with -1, one fewer) entrant in a cohort.
local function cohort_count(sizes, index, by)
  local member = cohort_member(index)
  local place = math.floor(index / COHORT_STRIDE)
  if not redis.call('ZSCORE', sizes, member) then
    redis.call('ZADD', sizes, place * COHORT_SIZE_SPAN, member)
  end
  redis.call('ZINCRBY', sizes, by, member)
end

-- A new cohort in a tier: its index.
local function cohort_open(state, place)
  local number = redis.call('HINCRBY', state, 'n:' .. place, 1)
  local index = place * COHORT_STRIDE + number
  redis.call('HSET', state, 'last:' .. place, index)
  return index
end

-- Place a player (not placed yet) in tier place ``place`` with cohorts of at most ``size``:
-- first come, the tier's newest cohort while it has room; otherwise (after a balanced split)
-- the smallest cohort below ``size``, the first of equals; else a new one. Returns the index.
local function cohort_place(k, player, place, size, first_come, now_text)
  local low = place * COHORT_SIZE_SPAN
  local index
  if first_come then
    local last = redis.call('HGET', k.state, 'last:' .. place)
    local count = last and redis.call('ZSCORE', k.sizes, cohort_member(last))
    if count and tonumber(count) - low < size then index = tonumber(last) end
  else
    local open = redis.call('ZRANGEBYSCORE', k.sizes, low, low + size - 1, 'LIMIT', 0, 1)
    if open[1] then index = tonumber(open[1]) end
  end
  if not index then index = cohort_open(k.state, place) end
  cohort_count(k.sizes, index, 1)
  redis.call('ZADD', k.cohorts, index, player)
  redis.call('XADD', k.ledger, '*', 'k', 'cohort', 'p', player, 'v', index, 't', now_text)
  return index
end

-- A new entrant's cohort on a board with cohorts (size > 0): placed now when cohorts fill
-- first come, or once the balanced split ran; a balanced period's first entrant after its
-- split time, with nobody held, opens the cohorts at once (there is nobody to balance).
-- ``formed_ms``: when the split is due ('' for first come). Returns the index, or nil (held).
local function cohort_enter(k, player, place, size, first_come, formed_ms, now, now_text)
  if not first_come and redis.call('HGET', k.state, 'placed') ~= '1' then
    if now < tonumber(formed_ms) or redis.call('ZCARD', k.entrants) > 1 then return nil end
    redis.call('HSET', k.state, 'placed', '1')
  end
  return cohort_place(k, player, place, size, first_come, now_text)
end
