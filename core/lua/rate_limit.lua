-- Per-API-key rate limits with GCRA: O(1) memory (one number) per key and budget,
-- exact spacing, bursts up to the whole per-window limit. Two budgets, taken
-- together or not at all: requests, and items (a batch of 1,000 scores is one
-- request but 1,000 items: each may leave an idempotency record behind).
--
-- KEYS[1] requests        the request budget's GCRA STRING: the theoretical arrival time (TAT), epoch ms
-- KEYS[2] items           the item budget's GCRA STRING: likewise
-- KEYS[3] last_used       last-used HASH (key prefix -> epoch ms), copied to the database by a beat task
-- KEYS[4] config_version  the game's config version counter (read only)
-- ARGV[1] now_ms          now, epoch ms
-- ARGV[2] window_ms       the window, ms
-- ARGV[3] prefix          the API key's prefix
-- ARGV[4] requests_limit  requests per window
-- ARGV[5] items_limit     items per window
-- ARGV[6] items           items in this request
-- Returns {allowed 0|1, refused by 'requests' | 'items' | '', retry-after ms,
--   requests remaining, ms until the request budget is full again,
--   items remaining, ms until the item budget is full again, config version}

local now, window = tonumber(ARGV[1]), tonumber(ARGV[2])
local version = redis.call('GET', KEYS[4]) or '0'

-- One budget: {new TAT, ms before it allows this cost (0: now), its state after}.
-- A stored TAT is at most a window ahead of the time it was written (a later one is never stored);
-- one further ahead was written before the clock stepped back, and is forgotten rather than
-- holding the key refused until the old time comes round again.
local function budget(key, limit, cost)
  local interval = window / limit
  local stored = tonumber(redis.call('GET', key) or '0')
  if stored > now + window then stored = now end
  local tat = math.max(stored, now)
  local new_tat = tat + cost * interval
  local allow_at = new_tat - window
  local wait = 0
  if now < allow_at then wait = math.ceil(allow_at - now) end
  return {tat = tat, new_tat = new_tat, wait = wait, interval = interval}
end

local requests = budget(KEYS[1], tonumber(ARGV[4]), 1)
local items = budget(KEYS[2], tonumber(ARGV[5]), tonumber(ARGV[6]))

local function remaining(b, tat)
  return math.max(0, math.floor((window - (tat - now)) / b.interval))
end

if requests.wait > 0 or items.wait > 0 then
  local which = 'requests'
  if items.wait > requests.wait then which = 'items' end
  return {0, which, math.max(requests.wait, items.wait),
    remaining(requests, requests.tat), math.ceil(requests.tat - now),
    remaining(items, items.tat), math.ceil(items.tat - now), version}
end
for i, b in ipairs({requests, items}) do
  redis.call('SET', KEYS[i], string.format('%.3f', b.new_tat), 'PX', math.max(1, math.ceil(b.new_tat - now)))
end
redis.call('HSET', KEYS[3], ARGV[3], ARGV[1])
return {1, '', 0,
  remaining(requests, requests.new_tat), math.ceil(requests.new_tat - now),
  remaining(items, items.new_tat), math.ceil(items.new_tat - now), version}
