-- Apply score submissions to every window of one leaderboard. One call carries a
-- chunk of items for that board (a single submission is a chunk of one); items are
-- applied in order, each completely or not at all, and the whole call is atomic.
-- Every key is the board's ({game.board}); what belongs to the game (names, recent
-- submissions, presence) is written next by submit_game.lua, for the items applied.
-- Entries are keyed and ranked by the entries prelude (core/lua/prelude/entries.lua).
--
-- KEYS[1] hidden        the board's hidden SET (a copy of the game's: those players are refused)
-- KEYS[2] boards_index  boards index ZSET (board key -> expiry ms, '+inf' for never)
-- KEYS[3] dirty         dirty ZSET (board key -> first change ms), read by the live broadcaster
-- KEYS[4] close_jobs    close-jobs ZSET ('<window>:<period id>' -> when to archive it, ms): a
--   period's close job is scheduled when its board is first written
-- KEYS[5] ledger        ledger STREAM: every applied item is appended, for the database copy;
--   it holds only entries not stored yet (the drain trims the rest, ledger_trim.lua)
-- KEYS[6] tie_clock     the board's hybrid clock STRING (ties 'earliest' and 'subscore')
-- KEYS[7] entrants      a competing board (issue 22): its competing window's period entrants ZSET
--   (player_id -> when they entered, ms); on a board that does not compete, names never touched
-- KEYS[8] tries         that period's tries HASH (player_id -> scores accepted)
-- KEYS[9] extra         that period's extra-attempts HASH (player_id -> attempts granted)
-- KEYS[10] cohorts      that period's cohorts ZSET (core/lua/prelude/cohorts.lua: an open
--   board's first score places its player)
-- KEYS[11] sizes        its cohort sizes ZSET
-- KEYS[12] state        its cohort state HASH
-- KEYS[13] tiers        the board's league tiers HASH
-- KEYS[14..] per window: board, meta, members
--   (its period board ZSET, that board's entry metadata HASH player_id -> JSON, and its
--   members HASH player_id -> member)
-- KEYS[14+3W..] per item: spam, idem, idem_index
--   (its player's anti-spam ZSET, its idempotency STRING, a placeholder key when the item
--   has no fingerprint, and its player's idempotency-records ZSET: record key -> expiry ms,
--   where an erasure finds them)
-- ARGV[1] mode          'increment' | 'best' | 'latest'
-- ARGV[2] now_ms        now, epoch ms
-- ARGV[3] spam_limit    anti-spam limit per minute, player and board, 0 for none
-- ARGV[4] spam_window   its window, ms
-- ARGV[5] idem_ttl      idempotency record lifetime, ms
-- ARGV[6] windows       W, the number of windows
-- ARGV[7] grace         grace after a period's end before its close job runs, ms
-- ARGV[8] ledger_cap    at this many unstored ledger entries new items are refused, not lost
-- ARGV[9] ties          'shared' | 'earliest' | 'subscore'
-- ARGV[10] competing    the competing window's place among the windows (from 1), 0 if none: an
--   item of a player not entered enters it ('open'), or is refused ('join'); one past the
--   player's attempts is refused; an applied one counts in tries
-- ARGV[11] entry        'open' | 'join'
-- ARGV[12] max_entrants the field's size, 0 for no limit
-- ARGV[13] closes_ms    when entry closes, epoch ms ('' while the period lasts)
-- ARGV[14] max_attempts scores a player may have accepted in the period, 0 for no limit
-- ARGV[15] cohort_size  entrants a cohort takes at most, 0 for a board without cohorts
-- ARGV[16] fill         'first_come' | 'balanced'
-- ARGV[17] formed_ms    balanced: when the period's split is due, epoch ms ('' for first come)
-- ARGV[18] tier_slugs   a league's tier slugs bottom first, space-separated, when cohorts are
--   formed within tiers ('' otherwise)
-- ARGV[19] start_tier   the tier of a player the league has no tier for
-- ARGV[20..] per window: name, period_id, ends_ms
--   (ends_ms '' if the period never ends)
-- ARGV[20+3W..] per item: player, value, sub, spam_member, fingerprint, score, subscore, name, metadata
--   (player_id; the sort-base delta (increment) or the sort base (best, latest); the
--   oriented subscore likewise (0 unless ties 'subscore'); a member unique to the item for
--   the anti-spam window; idempotency fingerprint ('' for none); the score and the subscore
--   as submitted ('' for none) and the display name as submitted ('' keeps the stored one),
--   for the ledger; the metadata (JSON text, '' for none))
-- Returns one reply per item, in order, each one of
--   {'ok', replayed 0|1, (window, period id, sort base, rank, oriented subscore)...}
--   {'err', 'hidden', ''} | {'err', 'player_rate_limited', retry-after ms} |
--   {'err', 'overflow', window} | {'err', 'idempotency_mismatch', ''} |
--   {'err', 'ledger_full', ''} | {'err', 'not_entered', period id} |
--   {'err', 'entry_closed', 'closes ms period id'} | {'err', 'board_full', 'max entrants period id'} |
--   {'err', 'attempts_exhausted', 'used allowed period id'}

local mode = ARGV[1]
local now = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local spam_window = tonumber(ARGV[4])
local windows = tonumber(ARGV[6])
local ties = ARGV[9]
local competing = tonumber(ARGV[10])
local first_item_key = 14 + 3 * windows
local first_item_arg = 20 + 3 * windows
local clock = redis.call('GET', KEYS[6])
local clock_moved = false

local function window_arg(i, field) return ARGV[20 + (i - 1) * 3 + field] end
local function board_of(i) return KEYS[11 + 3 * i] end
local function meta_of(i) return KEYS[12 + 3 * i] end
local function members_of(i) return KEYS[13 + 3 * i] end
local cohort_size = tonumber(ARGV[15])
local cohort_keys = {entrants = KEYS[7], ledger = KEYS[5], cohorts = KEYS[10], sizes = KEYS[11], state = KEYS[12]}

local function replay(idem, fingerprint)
  local stored = redis.call('GET', idem)
  if not stored then return nil end
  local sep = string.find(stored, '\n', 1, true)
  if string.sub(stored, 1, sep - 1) ~= fingerprint then
    return {'err', 'idempotency_mismatch', ''}
  end
  local result = cjson.decode(string.sub(stored, sep + 1))
  result[2] = 1
  return result
end

-- A competing board's entry and attempts (issue 22); nil when the item may go on.
local function entry_refusal(player)
  if competing == 0 then return nil end
  local period_id = window_arg(competing, 1)
  if not redis.call('ZSCORE', KEYS[7], player) then
    if ARGV[11] == 'join' then return {'err', 'not_entered', period_id} end
    if ARGV[13] ~= '' and now >= tonumber(ARGV[13]) then
      return {'err', 'entry_closed', ARGV[13] .. ' ' .. period_id}
    end
    local cap = tonumber(ARGV[12])
    if cap > 0 and redis.call('ZCARD', KEYS[7]) >= cap then
      return {'err', 'board_full', ARGV[12] .. ' ' .. period_id}
    end
  end
  local allowed = tonumber(ARGV[14])
  if allowed > 0 then
    local used = tonumber(redis.call('HGET', KEYS[8], player) or '0')
    allowed = allowed + tonumber(redis.call('HGET', KEYS[9], player) or '0')
    if used >= allowed then return {'err', 'attempts_exhausted', used .. ' ' .. allowed .. ' ' .. period_id} end
  end
  return nil
end

-- Refusals that leave everything as it was; nil when the item may go on.
local function refusal(spam, player, value, sub)
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
  local gated = entry_refusal(player)
  if gated then return gated end
  if mode == 'increment' then
    -- Check every window before touching any: never a partial update.
    for i = 1, windows do
      local _, base, old_sub = entry_get(board_of(i), members_of(i), ties, player)
      if not (entry_exact((base or 0) + value) and entry_exact((old_sub or 0) + sub)) then
        return {'err', 'overflow', window_arg(i, 0)}
      end
    end
  end
  return nil
end

local function apply(spam, idem, idem_index, a)
  local player, fingerprint, metadata = ARGV[a], ARGV[a + 4], ARGV[a + 8]
  local value, sub = tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2])
  if fingerprint ~= '' then
    local replayed = replay(idem, fingerprint)
    if replayed then return replayed end
  end
  local refused = refusal(spam, player, value, sub)
  if refused then return refused end

  if limit > 0 then
    redis.call('ZADD', spam, now, ARGV[a + 3])
    redis.call('PEXPIRE', spam, spam_window)
  end
  if competing > 0 then
    -- An open board's first score enters, and places its player where there are cohorts.
    if redis.call('ZADD', KEYS[7], 'NX', now, player) == 1 and cohort_size > 0 then
      local place = cohort_tier_place(KEYS[13], player, ARGV[18], ARGV[19])
      cohort_enter(cohort_keys, player, place, cohort_size, ARGV[16] == 'first_come', ARGV[17], now, ARGV[2])
    end
    redis.call('HINCRBY', KEYS[8], player, 1)
  end
  -- Every applied item moves the board's clock once (the rebuild replays it the same way).
  if ties ~= 'shared' then
    clock = entry_clock_next(clock, now)
    clock_moved = true
  end

  local result = {'ok', 0}
  for i = 1, windows do
    local board, members = board_of(i), members_of(i)
    local old_member, old_base, old_sub = entry_get(board, members, ties, player)
    local base, new_sub = entry_next(mode, old_base, old_sub, value, sub)
    local member = old_member
    local moved = base ~= nil
    if moved then
      member = entry_member(ties, player, new_sub, clock)
      entry_put(board, members, ties, player, old_member, member, base)
    else
      base, new_sub = old_base, old_sub
    end
    -- Metadata goes with the submission that set the entry: in best mode only an
    -- improvement; otherwise the latest submission, with or without metadata.
    if moved or mode ~= 'best' then
      if metadata ~= '' then
        redis.call('HSET', meta_of(i), player, metadata)
      else
        redis.call('HDEL', meta_of(i), player)
      end
    end
    table.insert(result, window_arg(i, 0))
    table.insert(result, window_arg(i, 1))
    table.insert(result, entry_text(base))
    table.insert(result, entry_rank(board, ties, member, base))
    table.insert(result, entry_text(new_sub))
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
local n = (#ARGV - first_item_arg + 1) / 9
for item = 0, n - 1 do
  local k = first_item_key + item * 3
  local a = first_item_arg + item * 9
  local reply = apply(KEYS[k], KEYS[k + 1], KEYS[k + 2], a)
  if reply[1] == 'ok' and reply[2] == 0 then
    changed = true
    -- The ledger: what was applied, when (its period ids follow from 't'), under which mode.
    local entry = {'k', 'submit', 'p', ARGV[a], 'v', ARGV[a + 5], 'n', ARGV[a + 7], 'm', mode, 't', ARGV[2]}
    if ARGV[a + 6] ~= '' then
      table.insert(entry, 's')
      table.insert(entry, ARGV[a + 6])
    end
    if ARGV[a + 8] ~= '' then
      table.insert(entry, 'x')
      table.insert(entry, ARGV[a + 8])
    end
    redis.call('XADD', KEYS[5], '*', unpack(entry))
  end
  table.insert(replies, reply)
end
if clock_moved then redis.call('SET', KEYS[6], clock) end

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
