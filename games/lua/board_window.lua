-- Read a window of a board with competition ranks ("1224") and each entry's metadata.
-- Ranks: equal sort bases share a rank under ties 'shared'; the next distinct base gets its
-- position (with ties 'earliest' or 'subscore' members are distinct, and so are ranks).
-- Display names are the game's (another hash tag): the caller reads them next.
--
-- KEYS[1] board      board ZSET (ascending sort base = best first; members: entries prelude)
-- KEYS[2] meta       the board's entry metadata HASH (player_id -> JSON)
-- KEYS[3] members    the board's members HASH (player_id -> member; ties other than 'shared')
-- KEYS[4] version?   (optional) the board's version counter STRING, for live standings
-- ARGV[1] ties       'shared' | 'earliest' | 'subscore'
-- ARGV[2] view       'page' or 'around'
-- ARGV[3] at         page: the offset; around: the player_id
-- ARGV[4] size       page: the limit; around: the radius (entries each side; the window
--   shifts at either end of the board to stay 2*radius+1 long)
-- ARGV[5] version    with KEYS[4]: 'next' takes the next version (the broadcaster's snapshot,
--   so versions follow snapshot order) or 'current' reads it; '' without KEYS[4]
-- Returns {total, offset of first entry, found 0|1, version or 0, rows,
--   (player_id, sort base, rank) per row, then for ties 'subscore' each row's oriented
--   subscore, then (row number, metadata JSON) for each row that has metadata}
--   (found is 1 for 'page'; for 'around' it is 0, with no rows, if the player is absent;
--   metadata is sparse: most boards carry none, and a row each of '' cost a fifth of a read)

local board = KEYS[1]
local ties = ARGV[1]
local total = redis.call('ZCARD', board)
local version = 0
if KEYS[4] then
  if ARGV[5] == 'next' then
    version = redis.call('INCR', KEYS[4])
    local ttl = redis.call('PTTL', board)
    if ttl > 0 then redis.call('PEXPIRE', KEYS[4], ttl) end
  else
    version = tonumber(redis.call('GET', KEYS[4]) or '0')
  end
end
local offset, stop
if ARGV[2] == 'around' then
  local member = ARGV[3]
  if ties ~= 'shared' then member = redis.call('HGET', KEYS[3], ARGV[3]) end
  local position = member and redis.call('ZRANK', board, member)
  if not position then return {total, 0, 0, version, 0} end
  local radius = tonumber(ARGV[4])
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
  offset = tonumber(ARGV[3])
  stop = offset + tonumber(ARGV[4]) - 1
end

if offset >= total or stop < offset then return {total, offset, 1, version, 0} end
local rows = redis.call('ZRANGE', board, offset, stop, 'WITHSCORES')
-- Per row in plain loops with indexed stores (no table.insert, no call per row where the
-- member is the player): the archive reads thousands of rows per call.
local count = #rows / 2
local ids = {}
local skip = entry_prefix_chars(ties)
if skip == 0 then
  for r = 1, count do ids[r] = rows[2 * r - 1] end
else
  for r = 1, count do ids[r] = string.sub(rows[2 * r - 1], skip + 1) end
end
-- Most boards carry no metadata: an empty hash is not asked for a thousand missing fields.
local metadata = {}
if redis.call('HLEN', KEYS[2]) > 0 then metadata = redis.call('HMGET', KEYS[2], unpack(ids)) end
local result = {total, offset, 1, version, count}
local n = 5
if ties == 'shared' then
  -- Equal sort bases share a rank: the first row's from the board, then each new base
  -- takes its position.
  local rank = entry_rank(board, ties, rows[1], tonumber(rows[2]))
  local previous = rows[2]
  for r = 1, count do
    local base = rows[2 * r]
    if base ~= previous then
      rank = offset + r
      previous = base
    end
    result[n + 1], result[n + 2], result[n + 3] = ids[r], base, rank
    n = n + 3
  end
else
  for r = 1, count do
    result[n + 1], result[n + 2], result[n + 3] = ids[r], rows[2 * r], offset + r
    n = n + 3
  end
  if ties == 'subscore' then
    for r = 1, count do result[n + r] = entry_text(entry_sub(ties, rows[2 * r - 1])) end
    n = n + count
  end
end
for r = 1, count do
  local text = metadata[r]
  if text then
    result[n + 1], result[n + 2] = r, text
    n = n + 2
  end
end
return result
