-- Drop the ledger entries the database already holds, so that the stream's length
-- is exactly what is not stored yet (the submit script refuses new scores when that
-- reaches its cap: back-pressure instead of losing accepted scores). Safe against a
-- drain reading meanwhile: entries read later are newer than the floor kept here.
--
-- KEYS[1] ledger        ledger STREAM
-- ARGV[1] group         the drain's consumer group
-- Returns how many entries were trimmed (0 when the stream or group is missing)

local groups = redis.pcall('XINFO', 'GROUPS', KEYS[1])
if type(groups) ~= 'table' or groups.err then return 0 end
local delivered
for _, group in ipairs(groups) do
  local name, last
  for i = 1, #group, 2 do
    if group[i] == 'name' then name = group[i + 1] elseif group[i] == 'last-delivered-id' then last = group[i + 1] end
  end
  if name == ARGV[1] then delivered = last end
end
if not delivered then return 0 end

-- Keep every entry still pending (read, not acknowledged), and everything not yet read.
local floor
local pending = redis.call('XPENDING', KEYS[1], ARGV[1])
if tonumber(pending[1]) > 0 then
  floor = pending[2]
else
  local ms, seq = string.match(delivered, '^(%d+)-(%d+)$')
  floor = ms .. '-' .. string.format('%d', tonumber(seq) + 1)
end
return redis.call('XTRIM', KEYS[1], 'MINID', floor)
