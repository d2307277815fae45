-- Apply score submissions to every window of one leaderboard. One call carries a
-- chunk of items for that board (a single submission is a chunk of one); items are
-- applied in order, each completely or not at all, and the whole call is atomic.
-- Every key is the board's ({game.board}); what belongs to the game (names, recent
-- submissions, presence) is written next by submit_game.lua, for the items applied.
--
-- Boards store a *sort key*, ascending = best first: the sort base (the score, negated
-- when higher is better) times 2^bits, plus, for ties 'earliest', the ms since the
-- period started when the entry reached its score (bits = 0 for ties 'shared', where
-- equal scores share a key and are listed by player_id).
--
-- KEYS[1] the board's hidden SET (a copy of the game's: those players are refused)
-- KEYS[2] boards index ZSET (board key -> expiry ms, '+inf' for never)
-- KEYS[3] dirty ZSET (board key -> first change ms), read by the live broadcaster
-- KEYS[4] close-jobs ZSET ('<window>:<period id>' -> when to archive it, ms): a
--   period's close job is scheduled when its board is first written
-- KEYS[5] ledger STREAM: every applied item is appended, for the database copy; it
--   holds only entries not stored yet (the drain trims the rest, ledger_trim.lua)
-- KEYS[6 .. 5+2W] per window, in the order of the window groups below: its period
--   board ZSET, and that board's entry metadata HASH (player_id -> JSON)
-- then per item, three each: its player's anti-spam ZSET, its idempotency STRING (a
--   placeholder key when the item has no fingerprint), its player's idempotency-records
--   ZSET (record key -> expiry ms: an erasure finds them there)
-- ARGV[1] mode: 'increment' | 'best' | 'latest'
-- ARGV[2] now, epoch ms
-- ARGV[3] anti-spam limit per minute, player and board, 0 for none; ARGV[4] its window, ms
-- ARGV[5] idempotency record lifetime, ms
-- ARGV[6] W, the number of windows
-- ARGV[7] grace after a period's end before its close job runs, ms
-- ARGV[8] ledger cap: at this many unstored entries new items are refused, not lost
-- ARGV[9 .. 8+6W] per window: name, period id, period end ms ('' if it never ends),
--   tie bits, largest |sort base| kept exact, period start ms (0 if it has none)
-- then per item, seven each: player_id; the sort-base delta (increment) or the sort
--   base (best, latest); a member unique to the item for the anti-spam window;
--   idempotency fingerprint ('' for none); the score as submitted and the display name
--   as submitted ('' keeps the stored one), both for the ledger; the metadata (JSON
--   text, '' for none)
-- Returns one reply per item, in order, each one of
--   {'ok', replayed 0|1, (window, period id, sort base, rank)...}
--   {'err', 'hidden', ''} | {'err', 'player_rate_limited', retry-after ms}
--   {'err', 'overflow', window} | {'err', 'idempotency_mismatch', ''} |
--   {'err', 'ledger_full', ''}

local mode = ARGV[1]
local now = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local spam_window = tonumber(ARGV[4])
local windows = tonumber(ARGV[6])
local first_item_key = 6 + 2 * windows
local first_item_arg = 9 + 6 * windows

local function window_arg(i, field) return ARGV[9 + (i - 1) * 6 + field] end
local function board_of(i) return KEYS[4 + 2 * i] end
local function meta_of(i) return KEYS[5 + 2 * i] end

-- The sort base of a stored key, and the unit that scales it (2^bits).
local function unit_of(i) return 2 ^ tonumber(window_arg(i, 3)) end
local function base_of(key, unit) return math.floor(tonumber(key) / unit) end

local function tie_offset(i)
  if tonumber(window_arg(i, 3)) == 0 then return 0 end
  return now - tonumber(window_arg(i, 5))
end

-- The key the entry should have on window i after this item, or nil to keep the stored one.
local function next_key(i, player, value)
  local unit = unit_of(i)
  local stored = redis.call('ZSCORE', board_of(i), player)
  local old_base = stored and base_of(stored, unit)
  local base
  if mode == 'increment' then
    base = (old_base or 0) + value
  elseif mode == 'best' then
    if old_base and old_base <= value then return nil end
    base = value
  else
    base = value
  end
  -- The same score again keeps the moment it was first reached.
  if old_base == base then return nil end
  return base * unit + tie_offset(i), base
end

local function apply(spam, idem, idem_index, player, value, member, fingerprint, metadata)
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

  if redis.call('SISMEMBER', KEYS[1], player) == 1 then
    return {'err', 'hidden', ''}
  end

  if redis.call('XLEN', KEYS[5]) >= tonumber(ARGV[8]) then
    -- The database copy fell this far behind: refuse rather than accept what could be lost.
    return {'err', 'ledger_full', ''}
  end

  if limit > 0 then
    redis.call('ZREMRANGEBYSCORE', spam, '-inf', now - spam_window)
    if redis.call('ZCARD', spam) >= limit then
      local oldest = redis.call('ZRANGE', spam, 0, 0, 'WITHSCORES')
      return {'err', 'player_rate_limited', tostring(tonumber(oldest[2]) + spam_window - now)}
    end
  end

  value = tonumber(value)
  if mode == 'increment' then
    -- Check every window before touching any: never a partial update.
    for i = 1, windows do
      local stored = redis.call('ZSCORE', board_of(i), player)
      local total = (stored and base_of(stored, unit_of(i)) or 0) + value
      if math.abs(total) > tonumber(window_arg(i, 4)) then
        return {'err', 'overflow', window_arg(i, 0)}
      end
    end
  end

  if limit > 0 then
    redis.call('ZADD', spam, now, member)
    redis.call('PEXPIRE', spam, spam_window)
  end

  local result = {'ok', 0}
  for i = 1, windows do
    local board = board_of(i)
    local key = next_key(i, player, value)
    if key then redis.call('ZADD', board, key, player) end
    -- Metadata goes with the submission that set the entry: in best mode only an
    -- improvement; otherwise the latest submission, with or without metadata.
    if key or mode ~= 'best' then
      if metadata ~= '' then
        redis.call('HSET', meta_of(i), player, metadata)
      else
        redis.call('HDEL', meta_of(i), player)
      end
    end
    local stored = redis.call('ZSCORE', board, player)
    table.insert(result, window_arg(i, 0))
    table.insert(result, window_arg(i, 1))
    -- As text: Lua's tostring and cjson keep 14 digits only; %.0f prints any exact double.
    table.insert(result, string.format('%.0f', base_of(stored, unit_of(i))))
    table.insert(result, redis.call('ZCOUNT', board, '-inf', '(' .. stored) + 1)
  end

  if fingerprint ~= '' then
    local ttl = tonumber(ARGV[5])
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
local n = (#ARGV - first_item_arg + 1) / 7
for item = 0, n - 1 do
  local k = first_item_key + item * 3
  local a = first_item_arg + item * 7
  local reply = apply(KEYS[k], KEYS[k + 1], KEYS[k + 2], ARGV[a], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 6])
  if reply[1] == 'ok' and reply[2] == 0 then
    changed = true
    -- The ledger: what was applied, when (its period ids follow from 't'), under which mode.
    local entry = {'k', 'submit', 'p', ARGV[a], 'v', ARGV[a + 4], 'n', ARGV[a + 5], 'm', mode, 't', ARGV[2]}
    if ARGV[a + 6] ~= '' then
      table.insert(entry, 'x')
      table.insert(entry, ARGV[a + 6])
    end
    redis.call('XADD', KEYS[5], '*', unpack(entry))
  end
  table.insert(replies, reply)
end

-- Once per call: index the boards, schedule their close jobs, mark them changed. A
-- board has no expiry until its period is archived (the close job then sets one on it
-- and its metadata, and updates the index): it never expires unarchived.
if changed then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
  for i = 1, windows do
    local board = board_of(i)
    local ends = window_arg(i, 2)
    redis.call('ZADD', KEYS[2], 'NX', '+inf', board)
    if ends ~= '' then
      local job = window_arg(i, 0) .. ':' .. window_arg(i, 1)
      redis.call('ZADD', KEYS[4], 'NX', tonumber(ends) + tonumber(ARGV[7]), job)
    end
    redis.call('ZADD', KEYS[3], 'NX', now, board)
  end
end
return replies
