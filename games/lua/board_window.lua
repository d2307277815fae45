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
--   {(player_id, sort base) per row},
--   {(row number, rank) for each row whose rank is not offset + row number},
--   {each row's oriented subscore, for ties 'subscore'},
--   {(row number, metadata JSON) for each row that has metadata}}
--   (found is 1 for 'page'; for 'around' it is 0, with no rows, if the player is absent).
--   Only what a reader cannot infer is sent per row: with 'shared' ties the pairs are the
--   ZRANGE reply itself, ranks differ from positions only where scores tie, and most boards
--   carry no metadata (a row each of '' and of rank cost a third of a read's Redis time).

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
  if not position then return {total, 0, 0, version, 0, {}, {}, {}, {}} end
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

if offset >= total or stop < offset then return {total, offset, 1, version, 0, {}, {}, {}, {}} end
local rows = redis.call('ZRANGE', board, offset, stop, 'WITHSCORES')
local count = #rows / 2
-- Plain loops with indexed stores (no table.insert, no call per row): the archive reads
-- thousands of rows per call. Where the member is the player, the reply's pairs are ZRANGE's.
local pairs_out, ids = rows, nil
local skip = entry_prefix_chars(ties)
if skip > 0 then
  pairs_out, ids = {}, {}
  for r = 1, count do
    local id = string.sub(rows[2 * r - 1], skip + 1)
    ids[r], pairs_out[2 * r - 1], pairs_out[2 * r] = id, id, rows[2 * r]
  end
end
local ranks = {}
if ties == 'shared' then
  -- Equal sort bases share a rank: the first row's from the board, then each new base takes
  -- its position; only ranks that differ from the position are sent.
  local rank = entry_rank(board, ties, rows[1], tonumber(rows[2]))
  local previous, n = rows[2], 0
  for r = 1, count do
    local base = rows[2 * r]
    if base ~= previous then
      rank = offset + r
      previous = base
    end
    if rank ~= offset + r then
      ranks[n + 1], ranks[n + 2] = r, rank
      n = n + 2
    end
  end
end
local subs = {}
if ties == 'subscore' then
  for r = 1, count do subs[r] = entry_text(entry_sub(ties, rows[2 * r - 1])) end
end
-- An empty metadata hash is not asked for a thousand missing fields.
local metadata = {}
if redis.call('HLEN', KEYS[2]) > 0 then
  if not ids then
    ids = {}
    for r = 1, count do ids[r] = rows[2 * r - 1] end
  end
  local found, n = redis.call('HMGET', KEYS[2], unpack(ids)), 0
  for r = 1, count do
    if found[r] then
      metadata[n + 1], metadata[n + 2] = r, found[r]
      n = n + 2
    end
  end
end
return {total, offset, 1, version, count, pairs_out, ranks, subs, metadata}
