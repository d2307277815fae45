-- Presence heartbeats and leaves of a game: a game server's batch, or one open
-- page of a signed-in user linked to a player. A player is online while their
-- last-seen time (the online ZSET's score, ms) is within the game's timeout;
-- every read applies that window itself, so pruning is only for memory.
--
-- A join (a player who was not online per that window) or a leave (an online
-- player removed) is queued for the broadcaster in the joined / left ZSETs. Only a
-- player's latest change is kept: a leave replaces a join not yet announced (a page
-- may already show that player from its snapshot), and a join replaces a leave.
-- Each player sits in exactly one of the online ZSET and the last-seen HASH.
--
-- Open pages: a player's tabs HASH holds each socket (socket id -> expiry ms), so
-- a user with two tabs stays online until both close. It also remembers the
-- last-seen time this script wrote for pages ('~page') and the latest one another
-- source wrote ('~other': a game server's heartbeat or a score), so that closing
-- the last page takes the player offline only if no other source still counts.
--
-- KEYS[1] online ZSET, KEYS[2] last-seen HASH, KEYS[3] joined ZSET, KEYS[4] left ZSET
-- KEYS[5] (page ops only) the player's tabs HASH
-- ARGV[1] op: 'server' | 'page_beat' | 'page_leave'
-- ARGV[2] now, epoch ms; ARGV[3] timeout, ms; ARGV[4] lifetime of unannounced changes, ms
-- server:          ARGV[5] n; ARGV[6 .. 5+n] ids now online; the rest, ids now offline
-- page_beat/leave: ARGV[5] player id; ARGV[6] socket id
-- Returns server: {joined, left} counts; page_beat: 1 if the player joined, else 0;
--   page_leave: 'left' (went offline), 'stay' (another page or source keeps them
--   online) or 'gone' (already offline)

local online, last_seen, joined, left = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local op = ARGV[1]
local now = tonumber(ARGV[2])
local cutoff = now - tonumber(ARGV[3])
local announce_ms = ARGV[4]

local function announce(from, to, player)
  redis.call('ZREM', from, player)
  redis.call('ZADD', to, now, player)
  redis.call('PEXPIRE', to, announce_ms)
end

-- Returns 1 if the player was not online before.
local function seen(player)
  local before = redis.call('ZSCORE', online, player)
  redis.call('ZADD', online, 'GT', now, player)
  if before and tonumber(before) >= cutoff then return 0 end
  redis.call('HDEL', last_seen, player)
  announce(left, joined, player)
  return 1
end

-- Returns 1 if the player was online and is now announced as left.
local function gone(player, at)
  local before = redis.call('ZSCORE', online, player)
  if not before then return 0 end
  redis.call('ZREM', online, player)
  redis.call('HSET', last_seen, player, math.max(tonumber(before), at))
  if tonumber(before) < cutoff then return 0 end
  announce(joined, left, player)
  return 1
end

if op == 'server' then
  local n = tonumber(ARGV[5])
  local joins, leaves = 0, 0
  for i = 6, 5 + n do joins = joins + seen(ARGV[i]) end
  for i = 6 + n, #ARGV do leaves = leaves + gone(ARGV[i], now) end
  return {joins, leaves}
end

local tabs, player, socket = KEYS[5], ARGV[5], ARGV[6]

if op == 'page_beat' then
  local current = redis.call('ZSCORE', online, player)
  local page = redis.call('HGET', tabs, '~page')
  if current and (not page or tonumber(current) > tonumber(page)) then
    -- Written since this script last wrote for pages: another source saw them then.
    redis.call('HSET', tabs, '~other', current)
  end
  local joined_now = seen(player)
  redis.call('HSET', tabs, '~page', redis.call('ZSCORE', online, player), socket, now + tonumber(ARGV[3]))
  redis.call('PEXPIRE', tabs, 2 * tonumber(ARGV[3]))
  return joined_now
end

-- page_leave
redis.call('HDEL', tabs, socket)
local fields = redis.call('HGETALL', tabs)
for i = 1, #fields, 2 do
  local name = fields[i]
  if string.sub(name, 1, 1) ~= '~' then
    if tonumber(fields[i + 1]) > now then return 'stay' end
    redis.call('HDEL', tabs, name)  -- a page whose process died without saying goodbye
  end
end
local current = redis.call('ZSCORE', online, player)
local page = tonumber(redis.call('HGET', tabs, '~page') or '0')
local other = tonumber(redis.call('HGET', tabs, '~other') or '0')
redis.call('DEL', tabs)
if not current then return 'gone' end
if tonumber(current) > page then other = math.max(other, tonumber(current)) end
if other >= cutoff then
  -- Still online through a game server or a score: back to when that source saw them.
  redis.call('ZADD', online, other, player)
  return 'stay'
end
if gone(player, now) == 1 then return 'left' end
return 'gone'
