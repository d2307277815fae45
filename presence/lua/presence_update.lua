-- Presence heartbeats and leaves of a game: a game server's batch, or one open
-- page of a signed-in user linked to a player. A player is online while their
-- last-seen time (the online ZSET's score, ms) is within the game's timeout;
-- every read applies that window itself, so pruning is only for memory.
--
-- A join (a player who was not online per that window) or a leave (a player
-- removed from the online ZSET) is queued for the broadcaster in the joined / left
-- ZSETs. Only a player's latest change is kept: a leave replaces a join not yet
-- announced (a page may already show that player from its snapshot), and a join
-- replaces a leave. A player removed after their window passed (before the prune
-- got to them) is announced as left too, with their last heartbeat as last seen,
-- exactly as the prune would have done. Hidden (banned) players never come online.
-- Each player sits in at most one of the online ZSET and the last-seen ZSET.
--
-- Open pages: a player's tabs HASH holds each socket (socket id -> expiry ms), so
-- a user with two tabs stays online until both close. While it exists, game-server
-- heartbeats and scores record their time in it ('~other'; submit_score.lua does
-- the same), and a server's offline clears it, so that closing the last page takes
-- the player offline only if no other source still counts.
--
-- KEYS[1] online       online ZSET (player_id -> last seen ms)
-- KEYS[2] last_seen    last-seen ZSET
-- KEYS[3] joined       joined ZSET
-- KEYS[4] left         left ZSET
-- KEYS[5] hidden       hidden SET
-- KEYS[6..] per player: tabs  (server: the tabs HASH of each id, in the order of the ids
--   below; page_beat/page_leave: the player's tabs HASH, once)
-- ARGV[1] op           'server' | 'page_beat' | 'page_leave'
-- ARGV[2] now_ms       now, epoch ms
-- ARGV[3] timeout_ms   timeout, ms
-- ARGV[4] announce_ms  lifetime of unannounced changes, ms
-- ARGV[5] n_or_player  server: n, how many of the ids are now online; page_beat/page_leave:
--   the player id
-- ARGV[6..] per item: id  (server: the ids, the n now online first, the rest now offline;
--   page_beat/page_leave: one, the socket id)
-- Returns server: {joined, left} counts (left: of the offline ids, those who were
--   online); page_beat: 1 if the player joined, else 0; page_leave: 'left' (went
--   offline), 'stay' (another page or source keeps them online) or 'gone' (was
--   not online)

local online, last_seen, joined, left, hidden = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local op = ARGV[1]
local now = tonumber(ARGV[2])
local timeout = tonumber(ARGV[3])
local cutoff = now - timeout
local announce_ms = ARGV[4]

local function announce(from, to, player)
  redis.call('ZREM', from, player)
  redis.call('ZADD', to, now, player)
  redis.call('PEXPIRE', to, announce_ms)
end

-- Returns 1 if the player was not online before.
local function seen(player)
  if redis.call('SISMEMBER', hidden, player) == 1 then return 0 end
  local before = redis.call('ZSCORE', online, player)
  redis.call('ZADD', online, 'GT', now, player)
  if before and tonumber(before) >= cutoff then return 0 end
  redis.call('ZREM', last_seen, player)
  announce(left, joined, player)
  return 1
end

-- Returns 1 if the player was online (within the window) until now.
local function gone(player)
  local before = redis.call('ZSCORE', online, player)
  if not before then return 0 end
  local was_online = tonumber(before) >= cutoff
  redis.call('ZREM', online, player)
  redis.call('ZADD', last_seen, was_online and now or tonumber(before), player)
  announce(joined, left, player)
  if was_online then return 1 end
  return 0
end

if op == 'server' then
  local n = tonumber(ARGV[5])
  local joins, leaves = 0, 0
  for i = 6, 5 + n do
    joins = joins + seen(ARGV[i])
    if redis.call('EXISTS', KEYS[i]) == 1 then redis.call('HSET', KEYS[i], '~other', now) end
  end
  for i = 6 + n, #ARGV do
    leaves = leaves + gone(ARGV[i])
    redis.call('HDEL', KEYS[i], '~other')
  end
  return {joins, leaves}
end

local tabs, player, socket = KEYS[6], ARGV[5], ARGV[6]

if op == 'page_beat' then
  if redis.call('EXISTS', tabs) == 0 then
    -- The first open page: whatever set the player's time so far was another source.
    local before = redis.call('ZSCORE', online, player)
    if before then redis.call('HSET', tabs, '~other', before) end
  end
  local joined_now = seen(player)
  redis.call('HSET', tabs, socket, now + timeout)
  redis.call('PEXPIRE', tabs, 2 * timeout)
  return joined_now
end

-- page_leave
local other
if redis.call('EXISTS', tabs) == 0 then
  -- No page of this player is known (its beat never landed): only other sources set their time.
  other = tonumber(redis.call('ZSCORE', online, player) or '-1')
else
  redis.call('HDEL', tabs, socket)
  local fields = redis.call('HGETALL', tabs)
  for i = 1, #fields, 2 do
    local name = fields[i]
    if string.sub(name, 1, 1) ~= '~' then
      -- Inclusive, like the read window: a page beat at T counts until T + timeout.
      if tonumber(fields[i + 1]) >= now then return 'stay' end
      redis.call('HDEL', tabs, name)  -- a page whose process died without saying goodbye
    end
  end
  other = tonumber(redis.call('HGET', tabs, '~other') or '-1')
  redis.call('DEL', tabs)
end
if not redis.call('ZSCORE', online, player) then return 'gone' end
if other >= cutoff then
  -- Still online through a game server or a score: back to when that source saw them.
  redis.call('ZADD', online, other, player)
  return 'stay'
end
if gone(player) == 1 then return 'left' end
return 'gone'
