-- Put rebuilt boards in place of a game's live ones, all at once (manage.py
-- rebuild_leaderboards, archive/ledger.py). Each rebuilt board was written to a
-- temporary key beside it, holding every player the ledger put there, hidden
-- players included: this script renames it over the live board and moves the
-- hidden players' entries to the board's stash as set_player_hidden.lua would,
-- so the hidden set read here, not an earlier copy, decides who is shown.
--
-- Refuses when the ledger stream holds an entry the rebuild has not replayed (a
-- submission landed meanwhile): the caller replays it, updates the temporary
-- keys and calls again, so no accepted score is lost to the swap.
--
-- KEYS[1] hidden         hidden SET
-- KEYS[2] boards_index   boards index ZSET (board key -> expiry ms, '+inf' until archived)
-- KEYS[3] dirty          dirty ZSET (boards changed, for the live broadcaster)
-- KEYS[4] close_jobs     close-jobs ZSET
-- KEYS[5] close_claims   claimed close jobs ZSET
-- KEYS[6] close_dead     dead close jobs ZSET
-- KEYS[7] ledger         ledger STREAM
-- KEYS[8] tie_clock      the board's hybrid clock STRING (entries prelude)
-- KEYS[9..] per board: board, rebuilt, members, rebuilt_members, stash
--   (the live board ZSET, its rebuilt temporary ZSET, the live members HASH, the rebuilt
--   one (absent for ties 'shared'), and the board's hidden-players stash ZSET)
-- ARGV[1] now_ms         now, epoch ms
-- ARGV[2] cursor_ms      the first stream id not replayed yet: ms
-- ARGV[3] cursor_seq     ... and sequence
-- ARGV[4] clock          the latest clock value the rebuild gave an entry ('' for none): the
--   board's clock is moved up to it, never back
-- ARGV[5] hidden_count   H, the number of hidden player ids that follow
-- ARGV[6..] per hidden: player_id
--   (hidden player ids from the database, added to the hidden SET only if it does not
--   exist: Redis lost its data)
-- ARGV[6+H..] per board: job, due_ms
--   (its close job ('<period>:<period id>', '' for all-time) and when that job is due, ms)
-- Returns {'ok', boards swapped, entries stashed} | {'retry', ''} (replay the stream's new
--   entries first) | {'missing', board key} (its temporary key is gone: write it again)

local now = tonumber(ARGV[1])
local cursor_ms, cursor_seq = tonumber(ARGV[2]), tonumber(ARGV[3])

local newest = redis.call('XREVRANGE', KEYS[7], '+', '-', 'COUNT', 1)
if #newest > 0 then
  local id = newest[1][1]
  local dash = string.find(id, '-', 1, true)
  local ms, seq = tonumber(string.sub(id, 1, dash - 1)), tonumber(string.sub(id, dash + 1))
  if ms > cursor_ms or (ms == cursor_ms and seq >= cursor_seq) then
    return {'retry', ''}
  end
end

-- A temporary key that expired (a run slower than its lifetime) must not empty a live board.
for i = 9, #KEYS, 5 do
  if redis.call('EXISTS', KEYS[i + 1]) == 0 then return {'missing', KEYS[i]} end
end

local from_db = tonumber(ARGV[5])
if from_db > 0 and redis.call('EXISTS', KEYS[1]) == 0 then
  for i = 6, 5 + from_db do redis.call('SADD', KEYS[1], ARGV[i]) end
end
local hidden = redis.call('SMEMBERS', KEYS[1])

local clock = redis.call('GET', KEYS[8])
if ARGV[4] ~= '' and ((not clock) or ARGV[4] > clock) then redis.call('SET', KEYS[8], ARGV[4]) end

local swapped, stashed = 0, 0
local first_job_arg = 6 + from_db
for i = 9, #KEYS, 5 do
  local board, rebuilt, members, rebuilt_members, stash = KEYS[i], KEYS[i + 1], KEYS[i + 2], KEYS[i + 3], KEYS[i + 4]
  local a = first_job_arg + (i - 9) / 5 * 2
  redis.call('RENAME', rebuilt, board)
  if redis.call('EXISTS', rebuilt_members) == 1 then
    redis.call('RENAME', rebuilt_members, members)
  else
    redis.call('DEL', members)
  end
  redis.call('DEL', stash)
  for _, player in ipairs(hidden) do
    local member = entry_member_of(members, player)
    local key = redis.call('ZSCORE', board, member)
    if key then
      redis.call('ZADD', stash, key, member)
      redis.call('ZREM', board, member)
      stashed = stashed + 1
    end
  end

  -- The board keeps the expiry the index gives it (an archived board's retention);
  -- one the index does not know is unarchived: no expiry, '+inf' in the index.
  local expiry = redis.call('ZSCORE', KEYS[2], board)
  if not expiry then
    redis.call('ZADD', KEYS[2], '+inf', board)
    expiry = 'inf'
  end
  if expiry == 'inf' then
    redis.call('PERSIST', board)
    redis.call('PERSIST', members)
    -- Unarchived: make sure its close job exists, unless a worker holds it or it is dead-lettered.
    local job = ARGV[a]
    if job ~= '' and not redis.call('ZSCORE', KEYS[5], job) and not redis.call('ZSCORE', KEYS[6], job) then
      redis.call('ZADD', KEYS[4], 'NX', ARGV[a + 1], job)
    end
  else
    -- Relative to ARGV[1]: the index holds instants of the product's clock, which
    -- Redis's own clock need not agree with.
    local ttl = math.max(1, tonumber(expiry) - now)
    redis.call('PEXPIRE', board, ttl)
    redis.call('PEXPIRE', stash, ttl)
    if redis.call('EXISTS', members) == 1 then redis.call('PEXPIRE', members, ttl) end
  end
  redis.call('ZADD', KEYS[3], 'NX', now, board)
  swapped = swapped + 1
end
return {'ok', swapped, stashed}
