-- The latest accepted submissions of a game, with their current names, hidden
-- players left out, and the version of the game's live "recent" messages: taking
-- a new version in the same call as the read keeps versions in snapshot order,
-- however many broadcasters run.
--
-- KEYS[1] recent        recent submissions LIST (JSON, newest first)
-- KEYS[2] names         names HASH
-- KEYS[3] hidden        hidden SET
-- KEYS[4] version       recent version STRING (a counter)
-- ARGV[1] limit         how many submissions
-- ARGV[2] take          'next' (a new version) | 'current'
-- Returns {version, (entry JSON, name or false)...} for the shown entries, newest first.

local rows = redis.call('LRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1)
local version
if ARGV[2] == 'next' then
  version = redis.call('INCR', KEYS[4])
else
  version = tonumber(redis.call('GET', KEYS[4]) or '0')
end
local reply = {version}
for _, row in ipairs(rows) do
  local player = cjson.decode(row)['player_id']
  if redis.call('SISMEMBER', KEYS[3], player) == 0 then
    table.insert(reply, row)
    table.insert(reply, redis.call('HGET', KEYS[2], player) or false)
  end
end
return reply
