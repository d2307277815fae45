-- The game's part of score submissions, run right after submit_score.lua applied them to
-- their boards: display names (and the name index), the player sync's marks, the recent
-- submissions list and presence (an accepted score is a heartbeat; the join rule is
-- presence_update.lua's). Every key is the game's ({game}). Items a board refused are
-- not passed. A replayed item (a retry with its Idempotency-Key) sets its name and the
-- sync's mark again, which are idempotent: its first attempt may have died between the board
-- script and this one. It is no new activity: no recent entry (which would show twice) and
-- no heartbeat.
--
-- KEYS[1] names            names HASH (player_id -> display name)
-- KEYS[2] hidden           the game's hidden SET (hidden players never come online)
-- KEYS[3] recent           recent submissions LIST (capped)
-- KEYS[4] pending          pending-players ZSET (rows the database must create or refresh)
-- KEYS[5] online           presence online ZSET
-- KEYS[6] last_seen        presence last-seen ZSET
-- KEYS[7] joined           presence joined ZSET
-- KEYS[8] left             presence left ZSET
-- KEYS[9] name_index       name index ZSET ('<search key>\0<player_id>', all scored 0: a
--   prefix search by name is a ZRANGEBYLEX)
-- KEYS[10] name_keys       name-keys HASH (player_id -> its search key)
-- KEYS[11..] per item: tabs
--   (its player's presence tabs HASH: a score is recorded there while the player has a
--   page open)
-- ARGV[1] now_ms           now, epoch ms
-- ARGV[2] recent_cap       recent list cap
-- ARGV[3] timeout          presence timeout, ms ('' for an import of past scores, which is
--   no heartbeat)
-- ARGV[4] announce_ttl     lifetime of unannounced presence changes, ms
-- ARGV[5..] per item: player, name, search_key, recent, fresh
--   (player_id; display name ('' keeps the stored one; a new player gets their id); the
--   search key of that display name ('' with no name: a new player's is their id in lower
--   case, which is what core.text.search_key makes of an id's ASCII); the recent-list entry
--   (JSON text, stored as is); 1 if the item was applied now, 0 if it was a replay, which
--   is neither pushed to the recent list again nor a heartbeat)
-- Returns the display name of each item's player, in order, then 1 if any player was
--   marked for the player sync (a new name), else 0.

local now = tonumber(ARGV[1])
local is_heartbeat = ARGV[3] ~= ''
local presence_cutoff = is_heartbeat and now - tonumber(ARGV[3]) or 0

local function heartbeat(player, tabs)
  if redis.call('EXISTS', tabs) == 1 then redis.call('HSET', tabs, '~other', now) end
  if redis.call('SISMEMBER', KEYS[2], player) == 1 then return end
  local before = redis.call('ZSCORE', KEYS[5], player)
  redis.call('ZADD', KEYS[5], 'GT', now, player)
  if before and tonumber(before) >= presence_cutoff then return end
  redis.call('ZREM', KEYS[6], player)
  redis.call('ZREM', KEYS[8], player)
  redis.call('ZADD', KEYS[7], now, player)
  redis.call('PEXPIRE', KEYS[7], ARGV[4])
end

-- Keep the player's entry in the name index on the name they now have.
local function index_name(player, search_key)
  local old = redis.call('HGET', KEYS[10], player)
  if old == search_key then return end
  if old then redis.call('ZREM', KEYS[9], old .. '\0' .. player) end
  redis.call('ZADD', KEYS[9], 0, search_key .. '\0' .. player)
  redis.call('HSET', KEYS[10], player, search_key)
end

local names = {}
local pushed = false
local marked = 0
for item = 0, (#ARGV - 4) / 5 - 1 do
  local a = 5 + item * 5
  local player, display = ARGV[a], ARGV[a + 1]
  local name = redis.call('HGET', KEYS[1], player)
  if (not name) or (display ~= '' and display ~= name) then
    local search_key = ARGV[a + 2]
    if display ~= '' then name = display else name, search_key = player, string.lower(player) end
    redis.call('HSET', KEYS[1], player, name)
    redis.call('ZADD', KEYS[4], now, player)
    marked = 1
    index_name(player, search_key)
  end
  if ARGV[a + 4] == '1' then
    redis.call('LPUSH', KEYS[3], ARGV[a + 3])
    pushed = true
    if is_heartbeat then heartbeat(player, KEYS[11 + item]) end
  end
  table.insert(names, name or player)
end
if pushed then redis.call('LTRIM', KEYS[3], 0, tonumber(ARGV[2]) - 1) end
table.insert(names, marked)
return names
