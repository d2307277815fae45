-- A rebuild's cohorts (archive/ledger/rebuild.py): the placements the ledger holds go back
-- where Redis lost them (a placement Redis still has stays), then the sizes and the state
-- are counted again from the cohorts themselves, so the next entrant goes where it would
-- have. Rare and O(entrants of the period), like the rebuild itself.
--
-- KEYS[1] cohorts       the period's cohorts ZSET (core/lua/prelude/cohorts.lua)
-- KEYS[2] sizes         its cohort sizes ZSET
-- KEYS[3] state         its cohort state HASH
-- ARGV[1] balanced      1 when cohorts are split (balanced): any placement means the split ran
-- ARGV[2..] per entrant: player, cohort
--   (player_id, and the index of their cohort as the ledger says)
-- Returns the number of entrants in cohorts afterwards

for i = 2, #ARGV, 2 do
  redis.call('ZADD', KEYS[1], 'NX', ARGV[i + 1], ARGV[i])
end
local counts, newest = {}, {}
local all = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
for i = 2, #all, 2 do
  local index = tonumber(all[i])
  counts[index] = (counts[index] or 0) + 1
  local place = math.floor(index / COHORT_STRIDE)
  if not newest[place] or index > newest[place] then newest[place] = index end
end
redis.call('DEL', KEYS[2])
for index, count in pairs(counts) do
  local place = math.floor(index / COHORT_STRIDE)
  redis.call('ZADD', KEYS[2], place * COHORT_SIZE_SPAN + count, cohort_member(index))
end
for place, index in pairs(newest) do
  local made = tonumber(redis.call('HGET', KEYS[3], 'n:' .. place) or '0')
  local number = index - place * COHORT_STRIDE
  if number > made then
    redis.call('HSET', KEYS[3], 'n:' .. place, number, 'last:' .. place, index)
  end
end
if ARGV[1] == '1' and #all > 0 then redis.call('HSET', KEYS[3], 'placed', '1') end
return #all / 2
