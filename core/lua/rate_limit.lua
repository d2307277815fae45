-- Per-API-key rate limit with GCRA: O(1) memory (one number) per key, exact
-- spacing, bursts up to the whole per-window limit.
--
-- KEYS[1] GCRA state STRING: the theoretical arrival time (TAT), epoch ms
-- KEYS[2] last-used HASH (key prefix -> epoch ms), copied to the database by a beat task
-- KEYS[3] the game's config version counter (read only)
-- ARGV[1] now, epoch ms
-- ARGV[2] limit: requests per window
-- ARGV[3] window, ms
-- ARGV[4] key prefix
-- Returns {allowed 0|1, remaining, retry-after ms, ms until the quota is full again, config version}

local now = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local window = tonumber(ARGV[3])
local interval = window / limit
local version = redis.call('GET', KEYS[3]) or '0'

local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then tat = now end
local new_tat = tat + interval
local allow_at = new_tat - window
if now < allow_at then
  return {0, 0, math.ceil(allow_at - now), math.ceil(tat - now), version}
end
redis.call('SET', KEYS[1], string.format('%.3f', new_tat), 'PX', math.max(1, math.ceil(new_tat - now)))
redis.call('HSET', KEYS[2], ARGV[4], ARGV[1])
local remaining = math.floor((window - (new_tat - now)) / interval)
return {1, remaining, 0, math.ceil(new_tat - now), version}
