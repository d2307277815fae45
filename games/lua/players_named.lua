-- Find players by the start of their name (one ZRANGEBYLEX of the name index), hidden
-- players left out, with their current display names. A player whose id is the
-- query exactly comes first.
--
-- KEYS[1] name_index    name index ZSET ('<search key>\0<player_id>', scored 0)
-- KEYS[2] names         names HASH
-- KEYS[3] hidden        hidden SET
-- ARGV[1] prefix        the start of a search key (core.text.search_key of what was typed)
-- ARGV[2] limit         most players to return
-- ARGV[3] exact         a player id to try exactly ('' for none)
-- Returns {player_id, display name, ...}, exact id first, then by search key and id.

local limit = tonumber(ARGV[2])
local found, seen = {}, {}

local function add(player)
  if seen[player] or redis.call('SISMEMBER', KEYS[3], player) == 1 then return end
  local name = redis.call('HGET', KEYS[2], player)
  if not name then return end
  seen[player] = true
  table.insert(found, player)
  table.insert(found, name)
end

if ARGV[3] ~= '' then add(ARGV[3]) end
-- Hidden players are skipped as they come: read a few pages at most.
local low, high = '[' .. ARGV[1], '[' .. ARGV[1] .. '\255'
local offset = 0
for _ = 1, 5 do
  if #found >= 2 * limit then break end
  local members = redis.call('ZRANGEBYLEX', KEYS[1], low, high, 'LIMIT', offset, 2 * limit)
  for _, member in ipairs(members) do
    if #found >= 2 * limit then break end
    add(string.sub(member, string.find(member, '\0', 1, true) + 1))
  end
  if #members < 2 * limit then break end
  offset = offset + #members
end
return found
