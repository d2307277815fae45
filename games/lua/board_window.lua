-- Read a window of a board with competition ranks ("1224") and each entry's metadata.
-- Ranks: equal sort keys share a rank; the next distinct key gets its position (with
-- ties 'earliest' keys are distinct, and so are ranks). Display names are the game's
-- (another hash tag): the caller reads them next.
--
-- KEYS[1] board ZSET (ascending sort key = best first)
-- KEYS[2] the board's entry metadata HASH (player_id -> JSON)
-- KEYS[3] (optional) the board's version counter STRING, for live standings
-- ARGV[1] 'page' or 'around'
-- page:   ARGV[2] offset, ARGV[3] limit
-- around: ARGV[2] player_id, ARGV[3] radius (entries each side; the window
--         shifts at either end of the board to stay 2*radius+1 long)
-- ARGV[4] with KEYS[3]: 'next' takes the next version (the broadcaster's
--         snapshot, so versions follow snapshot order) or 'current' reads it
-- Returns {total, offset of first entry, found 0|1, version or 0, (player_id, sort key, rank, metadata or '')...}
--   (found is 1 for 'page'; for 'around' it is 0, with no entries, if the player is absent)

local board = KEYS[1]
local total = redis.call('ZCARD', board)
local version = 0
if KEYS[3] then
  if ARGV[4] == 'next' then
    version = redis.call('INCR', KEYS[3])
    local ttl = redis.call('PTTL', board)
    if ttl > 0 then redis.call('PEXPIRE', KEYS[3], ttl) end
  else
    version = tonumber(redis.call('GET', KEYS[3]) or '0')
  end
end
local offset, stop
if ARGV[1] == 'around' then
  local position = redis.call('ZRANK', board, ARGV[2])
  if not position then return {total, 0, 0, version} end
  local radius = tonumber(ARGV[3])
  offset = position - radius
  stop = position + radius
  if stop > total - 1 then
    offset = offset - (stop - (total - 1))
    stop = total - 1
  end
  if offset < 0 then
    stop = math.min(total - 1, stop - offset)
    offset = 0
  end
else
  offset = tonumber(ARGV[2])
  stop = offset + tonumber(ARGV[3]) - 1
end

local result = {total, offset, 1, version}
if offset >= total or stop < offset then return result end
local rows = redis.call('ZRANGE', board, offset, stop, 'WITHSCORES')
local ids = {}
for i = 1, #rows, 2 do table.insert(ids, rows[i]) end
local metadata = redis.call('HMGET', KEYS[2], unpack(ids))
local rank = redis.call('ZCOUNT', board, '-inf', '(' .. rows[2]) + 1
local previous = rows[2]
for i = 1, #rows, 2 do
  local position = offset + (i - 1) / 2
  if rows[i + 1] ~= previous then
    rank = position + 1
    previous = rows[i + 1]
  end
  table.insert(result, rows[i])
  table.insert(result, rows[i + 1])
  table.insert(result, rank)
  table.insert(result, metadata[(i + 1) / 2] or '')
end
return result
