-- Drop a ledger consumer group's consumers that are long idle and hold nothing
-- pending (each drain process names its own consumer, so restarts leave old ones
-- behind). Atomic, so a consumer that reads between the check and the delete
-- cannot lose the entries it holds.
--
-- KEYS[1] ledger        ledger STREAM
-- ARGV[1] group         the drain's consumer group
-- ARGV[2] idle_ms       idle time after which an empty consumer is dropped, ms
-- ARGV[3] consumer      the calling consumer (never dropped)
-- Returns the number of consumers dropped.

local dropped = 0
for _, consumer in ipairs(redis.call('XINFO', 'CONSUMERS', KEYS[1], ARGV[1])) do
  local fields = {}
  for i = 1, #consumer, 2 do fields[consumer[i]] = consumer[i + 1] end
  if fields['name'] ~= ARGV[3] and tonumber(fields['pending']) == 0 and tonumber(fields['idle']) >= tonumber(ARGV[2]) then
    redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], fields['name'])
    dropped = dropped + 1
  end
end
return dropped
