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
-- KEYS[1] hidden SET
-- KEYS[2] boards index ZSET (board key -> expiry ms, '+inf' until archived)
-- KEYS[3] dirty ZSET (boards changed, for the live broadcaster)
-- KEYS[4] close-jobs ZSET, KEYS[5] claimed close jobs ZSET, KEYS[6] dead close jobs ZSET
-- KEYS[7] ledger STREAM
-- KEYS[8 ..] triples: live board ZSET, its rebuilt temporary ZSET, its hidden-players stash ZSET
-- ARGV[1] now, epoch ms
-- ARGV[2], ARGV[3] the first stream id not replayed yet: ms, sequence
-- ARGV[4] H, then ARGV[5 .. 4+H] hidden player ids from the database, added to the
--   hidden SET only if it does not exist (Redis lost its data)
-- then per board, two each: its close job ('<period>:<period id>', '' for all-time),
--   when that job is due (ms)
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
for i = 8, #KEYS, 3 do
  if redis.call('EXISTS', KEYS[i + 1]) == 0 then return {'missing', KEYS[i]} end
end

local from_db = tonumber(ARGV[4])
if from_db > 0 and redis.call('EXISTS', KEYS[1]) == 0 then
  for i = 5, 4 + from_db do redis.call('SADD', KEYS[1], ARGV[i]) end
end
local hidden = redis.call('SMEMBERS', KEYS[1])

local swapped, stashed = 0, 0
local first_job_arg = 5 + from_db
for i = 8, #KEYS, 3 do
  local board, rebuilt, stash = KEYS[i], KEYS[i + 1], KEYS[i + 2]
  local a = first_job_arg + (i - 8) / 3 * 2
  redis.call('RENAME', rebuilt, board)
  redis.call('DEL', stash)
  for _, player in ipairs(hidden) do
    local key = redis.call('ZSCORE', board, player)
    if key then
      redis.call('ZADD', stash, key, player)
      redis.call('ZREM', board, player)
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
  end
  redis.call('ZADD', KEYS[3], 'NX', now, board)
  swapped = swapped + 1
end
return {'ok', swapped, stashed}
