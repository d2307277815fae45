-- Apply score submissions to every period board of a game. One call carries a
-- chunk of items (a single submission is a chunk of one); items are applied in
-- order, each completely or not at all, and the whole call is atomic.
--
-- Boards store a *sort key*: the score itself for lower-is-better games and the
-- negated score for higher-is-better ones, so that ascending order is always
-- best first and ties fall in player_id byte order on every board.
--
-- KEYS[1] names HASH (player_id -> display name)
-- KEYS[2] hidden SET (banned player ids)
-- KEYS[3] recent submissions LIST (capped)
-- KEYS[4] pending-players ZSET (rows the database must create or refresh)
-- KEYS[5] boards index ZSET (board key -> expiry ms, '+inf' for never)
-- KEYS[6] dirty ZSET (board key -> first change ms), read by the live broadcaster
-- KEYS[7] presence online ZSET, KEYS[8] presence last-seen ZSET, KEYS[9] presence
--   joined ZSET, KEYS[10] presence left ZSET: an accepted score is a heartbeat
--   (the join rule is presence_update.lua's)
-- KEYS[11] close-jobs ZSET ('<period>:<period id>' -> when to archive it, ms): a
--   period's close job is scheduled when its board is first written
-- KEYS[12] ledger STREAM: every applied item is appended, for the database copy; it
--   holds only entries not stored yet (the drain trims the rest, ledger_trim.lua)
-- KEYS[13] name index ZSET ('<search key>\0<player_id>', all scored 0: a prefix search
--   by name is a ZRANGEBYLEX), KEYS[14] name-keys HASH (player_id -> its search key)
-- KEYS[15 .. 14+P] one board ZSET per period, in the order of the period triples below
-- then per item, four each: its player's anti-spam ZSET, its idempotency STRING
--   (a placeholder key when the item has no fingerprint), its player's presence
--   tabs HASH (a score is recorded there while the player has a page open), its
--   player's idempotency-records ZSET (record key -> expiry ms: an erasure finds
--   them there)
-- ARGV[1] mode: 'increment' | 'best' | 'latest'
-- ARGV[2] now, epoch ms
-- ARGV[3] anti-spam limit per window and player, 0 for none
-- ARGV[4] anti-spam window, ms
-- ARGV[5] recent list cap
-- ARGV[6] idempotency record lifetime, ms
-- ARGV[7] largest allowed |score| (2^53-1: exact as a double)
-- ARGV[8] P, the number of periods
-- ARGV[9] presence timeout, ms ('' for an import of past scores, which is no heartbeat);
--   ARGV[10] lifetime of unannounced presence changes, ms
-- ARGV[11] grace after a period's end before its close job runs, ms
-- ARGV[12] ledger cap: at this many unstored entries new items are refused, not lost
-- ARGV[13 .. 12+3P] per board: period name, period id, period end ms ('' for all-time)
-- then per item, eight each: player_id; sort-key delta (increment) or value (best,
--   latest); display name ('' keeps the stored one; a new player gets their id);
--   a member unique to the item for the anti-spam window; the recent-list entry
--   (JSON text, stored as is); idempotency fingerprint ('' for none); the score as
--   submitted (for the ledger); the search key of the name the player ends up with
--   if it changes (of the display name, or of the id for a new player without one)
-- Returns one reply per item, in order, each one of
--   {'ok', replayed 0|1, display name, (period name, period id, sort key, rank)...}
--   {'err', 'hidden', ''} | {'err', 'player_rate_limited', retry-after ms}
--   {'err', 'overflow', period name} | {'err', 'idempotency_mismatch', ''} |
--   {'err', 'ledger_full', ''}

local mode = ARGV[1]
local now = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local window = tonumber(ARGV[4])
local max_abs = tonumber(ARGV[7])
local periods = tonumber(ARGV[8])
local first_item_key = 15 + periods
local first_item_arg = 13 + 3 * periods
local is_heartbeat = ARGV[9] ~= ''
local presence_cutoff = is_heartbeat and now - tonumber(ARGV[9]) or 0

local function heartbeat(player, tabs)
  if redis.call('EXISTS', tabs) == 1 then redis.call('HSET', tabs, '~other', now) end
  if redis.call('SISMEMBER', KEYS[2], player) == 1 then return end
  local before = redis.call('ZSCORE', KEYS[7], player)
  redis.call('ZADD', KEYS[7], 'GT', now, player)
  if before and tonumber(before) >= presence_cutoff then return end
  redis.call('ZREM', KEYS[8], player)
  redis.call('ZREM', KEYS[10], player)
  redis.call('ZADD', KEYS[9], now, player)
  redis.call('PEXPIRE', KEYS[9], ARGV[10])
end

-- Keep the player's entry in the name index on the name they now have.
local function index_name(player, search_key)
  local old = redis.call('HGET', KEYS[14], player)
  if old == search_key then return end
  if old then redis.call('ZREM', KEYS[13], old .. '\0' .. player) end
  redis.call('ZADD', KEYS[13], 0, search_key .. '\0' .. player)
  redis.call('HSET', KEYS[14], player, search_key)
end

local function apply(spam, idem, idem_index, player, value, display, member, entry, fingerprint, search_key)
  if fingerprint ~= '' then
    local stored = redis.call('GET', idem)
    if stored then
      local sep = string.find(stored, '\n', 1, true)
      if string.sub(stored, 1, sep - 1) ~= fingerprint then
        return {'err', 'idempotency_mismatch', ''}
      end
      local result = cjson.decode(string.sub(stored, sep + 1))
      result[2] = 1
      return result
    end
  end

  if redis.call('SISMEMBER', KEYS[2], player) == 1 then
    return {'err', 'hidden', ''}
  end

  if redis.call('XLEN', KEYS[12]) >= tonumber(ARGV[12]) then
    -- The database copy fell this far behind: refuse rather than accept what could be lost.
    return {'err', 'ledger_full', ''}
  end

  if limit > 0 then
    redis.call('ZREMRANGEBYSCORE', spam, '-inf', now - window)
    if redis.call('ZCARD', spam) >= limit then
      local oldest = redis.call('ZRANGE', spam, 0, 0, 'WITHSCORES')
      return {'err', 'player_rate_limited', tostring(tonumber(oldest[2]) + window - now)}
    end
  end

  if mode == 'increment' then
    -- Check every board before touching any: never a partial update.
    local delta = tonumber(value)
    for i = 1, periods do
      local current = tonumber(redis.call('ZSCORE', KEYS[14 + i], player) or '0')
      if math.abs(current + delta) > max_abs then
        return {'err', 'overflow', ARGV[13 + (i - 1) * 3]}
      end
    end
  end

  if limit > 0 then
    redis.call('ZADD', spam, now, member)
    redis.call('PEXPIRE', spam, window)
  end

  local name = redis.call('HGET', KEYS[1], player)
  if (not name) or (display ~= '' and display ~= name) then
    if display ~= '' then name = display else name = player end
    redis.call('HSET', KEYS[1], player, name)
    redis.call('ZADD', KEYS[4], now, player)
    index_name(player, search_key)
  end

  redis.call('LPUSH', KEYS[3], entry)

  local result = {'ok', 0, name}
  for i = 1, periods do
    local board = KEYS[14 + i]
    if mode == 'increment' then
      redis.call('ZINCRBY', board, value, player)
    elseif mode == 'best' then
      redis.call('ZADD', board, 'LT', value, player)
    else
      redis.call('ZADD', board, value, player)
    end
    local key = redis.call('ZSCORE', board, player)
    table.insert(result, ARGV[13 + (i - 1) * 3])
    table.insert(result, ARGV[14 + (i - 1) * 3])
    table.insert(result, key)
    table.insert(result, redis.call('ZCOUNT', board, '-inf', '(' .. key) + 1)
  end

  if fingerprint ~= '' then
    local ttl = tonumber(ARGV[6])
    redis.call('SET', idem, fingerprint .. '\n' .. cjson.encode(result), 'PX', ttl)
    -- The index lives as long as its newest record, and drops the expired ones.
    redis.call('ZREMRANGEBYSCORE', idem_index, '-inf', now)
    redis.call('ZADD', idem_index, now + ttl, idem)
    redis.call('PEXPIRE', idem_index, ttl)
  end
  return result
end

local replies = {}
local changed = false
local n = (#ARGV - first_item_arg + 1) / 8
for item = 0, n - 1 do
  local k = first_item_key + item * 4
  local a = first_item_arg + item * 8
  local reply = apply(KEYS[k], KEYS[k + 1], KEYS[k + 3], ARGV[a], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4],
    ARGV[a + 5], ARGV[a + 7])
  if reply[1] == 'ok' and reply[2] == 0 then
    changed = true
    if is_heartbeat then heartbeat(ARGV[a], KEYS[k + 2]) end
    -- The ledger: what was applied, when (its period ids follow from 't'), under which mode.
    redis.call('XADD', KEYS[12], '*',
      'k', 'submit', 'p', ARGV[a], 'v', ARGV[a + 6], 'n', ARGV[a + 2], 'm', mode, 't', ARGV[2])
  end
  table.insert(replies, reply)
end

-- Once per call: bound the recent list, index the boards, schedule their close
-- jobs, mark the boards changed. A board has no expiry until its period is archived
-- (the close job then sets one and updates the index): it never expires unarchived.
if changed then
  redis.call('LTRIM', KEYS[3], 0, tonumber(ARGV[5]) - 1)
  redis.call('ZREMRANGEBYSCORE', KEYS[5], '-inf', now)
  for i = 1, periods do
    local board = KEYS[14 + i]
    local ends = ARGV[15 + (i - 1) * 3]
    redis.call('ZADD', KEYS[5], 'NX', '+inf', board)
    if ends ~= '' then
      local job = ARGV[13 + (i - 1) * 3] .. ':' .. ARGV[14 + (i - 1) * 3]
      redis.call('ZADD', KEYS[11], 'NX', tonumber(ends) + tonumber(ARGV[11]), job)
    end
    redis.call('ZADD', KEYS[6], 'NX', now, board)
  end
end
return replies
