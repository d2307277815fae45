-- One cohort of a competing period (issue 22): its entrants, and the entry of each who has
-- one on the period board, for the caller to rank in the board's order (ascending sort base,
-- then member bytes: core/lua/prelude/entries.lua). A cohort holds 1,000 entrants at most
-- (COHORT_SIZE_MAX), so this is bounded; ranking happens in the web worker, not in Redis.
-- Hidden players' entries are off the board (in its stash): they are entrants without one.
--
-- KEYS[1] cohorts       the period's cohorts ZSET (player_id -> cohort index)
-- KEYS[2] board         the period board ZSET
-- KEYS[3] members       the board's members HASH (ties other than 'shared')
-- KEYS[4] meta          the board's entry metadata HASH
-- KEYS[5] version?      (optional) the board's live version counter STRING: a cohort's live
--   standings take their versions from their board's counter, in the same call as the read,
--   so that a higher version is always a later snapshot (live/broadcaster.py)
-- ARGV[1] ties          'shared' | 'earliest' | 'subscore'
-- ARGV[2] by            'cohort' (ARGV[3] is its index) | 'player' (ARGV[3] is a player_id:
--   their cohort)
-- ARGV[3] at            the cohort's index, or the player_id
-- ARGV[4] version       with KEYS[5]: 'next' takes the next version, 'current' reads it; ''
--   without KEYS[5]
-- Returns {cohort index or '' (the player has none), entrants in it, version or 0,
--   (player_id, member, sort base, metadata or '') per entrant with an entry}

local version = 0
if KEYS[5] then
  if ARGV[4] == 'next' then
    version = redis.call('INCR', KEYS[5])
    local ttl = redis.call('PTTL', KEYS[2])
    if ttl > 0 then redis.call('PEXPIRE', KEYS[5], ttl) end
  else
    version = tonumber(redis.call('GET', KEYS[5]) or '0')
  end
end
local index = ARGV[3]
if ARGV[2] == 'player' then
  index = redis.call('ZSCORE', KEYS[1], ARGV[3])
  if not index then return {'', 0, version} end
end
local players = redis.call('ZRANGEBYSCORE', KEYS[1], index, index)
local result = {index, #players, version}
for _, player in ipairs(players) do
  local member = player
  if ARGV[1] ~= 'shared' then member = redis.call('HGET', KEYS[3], player) end
  local base = member and redis.call('ZSCORE', KEYS[2], member)
  if base then
    table.insert(result, player)
    table.insert(result, member)
    table.insert(result, string.format('%.0f', tonumber(base)))
    table.insert(result, redis.call('HGET', KEYS[4], player) or '')
  end
end
return result
