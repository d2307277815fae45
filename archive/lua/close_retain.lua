-- After a period's archive is complete (never before), give its Redis board the
-- retention expiry: the board, its hidden-player stash, its live version counter,
-- its entries' metadata and a competing period's entrants, attempts and cohorts expire together, and the boards index records when (set_player_hidden.lua
-- reads expiries from there; submit_score.lua trims entries once they pass).
-- Idempotent: a key that already has an expiry keeps it, and so does its index
-- entry, so a repeated archive call never extends the retention.
--
-- KEYS[1] board         the period board ZSET
-- KEYS[2] boards_index  boards index ZSET (board key -> expiry ms, '+inf' until archived)
-- KEYS[3] stash         the board's hidden-players stash ZSET
-- KEYS[4] version       the board's version counter STRING
-- KEYS[5] meta          the board's entry metadata HASH
-- KEYS[6] members       the board's members HASH
-- KEYS[7] entrants      a competing period's entrants ZSET (issue 22)
-- KEYS[8] tries         its tries HASH
-- KEYS[9] extra         its extra-attempts HASH
-- KEYS[10] cohorts      its cohorts ZSET
-- KEYS[11] sizes        its cohort sizes ZSET
-- KEYS[12] state        its cohort state HASH
-- KEYS[13] ratings      its ratings HASH
-- ARGV[1] retention_ms  retention, ms
-- ARGV[2] expires_ms    the expiry as an epoch ms (index score)
-- Returns 1 if the board existed, 0 if not (its stash, counter and index entry are
--   handled either way)

for i, key in ipairs(KEYS) do
  -- Every key of the period but the boards index (KEYS[2]), which outlives its boards.
  if i ~= 2 and redis.call('PTTL', key) == -1 then redis.call('PEXPIRE', key, ARGV[1]) end
end
local indexed = redis.call('ZSCORE', KEYS[2], KEYS[1])
if (not indexed) or indexed == 'inf' then
  redis.call('ZADD', KEYS[2], ARGV[2], KEYS[1])
end
return redis.call('EXISTS', KEYS[1])
