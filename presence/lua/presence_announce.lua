-- The broadcaster's claim of a game's unannounced presence changes, with the
-- counts to send beside them. ZPOPMIN hands each change to exactly one caller, and
-- only the holder of the announcer lease claims at all: presence messages are
-- changes, so they must leave one sender in version order (a socket drops a
-- version older than one it has). Another broadcaster takes over when the lease
-- lapses.
--
-- KEYS[1] joined       joined ZSET
-- KEYS[2] left         left ZSET
-- KEYS[3] online       online ZSET
-- KEYS[4] watching     watching ZSET
-- KEYS[5] version      version counter
-- KEYS[6] names        names HASH
-- KEYS[7] announcer    announcer lease STRING
-- ARGV[1] now_ms       now, epoch ms
-- ARGV[2] timeout_ms   timeout, ms
-- ARGV[3] max          most joins and most leaves per call
-- ARGV[4] token        the caller's token
-- ARGV[5] lease_ms     lease length, ms
-- Returns {0} when another broadcaster holds the lease, else {version, online count,
--   watching count, {player_id, display name, joined ms, ...}, {player_id, ...}, when the
--   next member lapses (ms, '' if nobody is online or watching)}; the version only increases.

local holder = redis.call('GET', KEYS[7])
if holder and holder ~= ARGV[4] then return {0} end
redis.call('SET', KEYS[7], ARGV[4], 'PX', ARGV[5])

local cutoff = tonumber(ARGV[1]) - tonumber(ARGV[2])
local max = tonumber(ARGV[3])
local popped_joins = redis.call('ZPOPMIN', KEYS[1], max)
local popped_leaves = redis.call('ZPOPMIN', KEYS[2], max)
local joins, leaves = {}, {}
for i = 1, #popped_joins, 2 do
  local player = popped_joins[i]
  table.insert(joins, player)
  table.insert(joins, redis.call('HGET', KEYS[6], player) or player)
  table.insert(joins, popped_joins[i + 1])
end
for i = 1, #popped_leaves, 2 do table.insert(leaves, popped_leaves[i]) end
local version = redis.call('INCR', KEYS[5])

-- The counts fall when a member's last sighting leaves the window, with no event to say
-- so: the caller comes back then (the first sighting still inside the window + timeout).
local lapse = nil
for _, key in ipairs({KEYS[3], KEYS[4]}) do
  local first = redis.call('ZRANGEBYSCORE', key, cutoff, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
  if #first > 0 then
    local at = tonumber(first[2]) + tonumber(ARGV[2]) + 1
    if not lapse or at < lapse then lapse = at end
  end
end
return {
  version,
  redis.call('ZCOUNT', KEYS[3], cutoff, '+inf'),
  redis.call('ZCOUNT', KEYS[4], cutoff, '+inf'),
  joins,
  leaves,
  lapse and string.format('%.0f', lapse) or '',
}
