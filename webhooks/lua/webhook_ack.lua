-- Let go of a claimed webhook delivery after its attempt: forget the claim, free its endpoint's
-- slot and make the endpoint's first parked delivery (in delivery order) due now in its place;
-- due again at `again_ms` when it is to be retried. Only the claim holder may (see
-- webhook_claim.lua: the token is the deadline).
--
-- KEYS[1] claims        claims ZSET (job -> visibility deadline, ms)
-- KEYS[2] inflight      inflight HASH (endpoint -> claimed deliveries)
-- KEYS[3] due           due ZSET (job -> when due, ms)
-- KEYS[4] parked        parked ZSET (job -> 0)
-- ARGV[1] job           the job ('<endpoint>:<delivery>')
-- ARGV[2] token         the claim token (its deadline, ms)
-- ARGV[3] again_ms      when it is due again, ms; 0: it is done
-- ARGV[4] now_ms        now, epoch ms
-- Returns 1 if let go, 0 if the claim was no longer this worker's

local held = redis.call('ZSCORE', KEYS[1], ARGV[1])
if (not held) or tonumber(held) ~= tonumber(ARGV[2]) then return 0 end
redis.call('ZREM', KEYS[1], ARGV[1])
local endpoint = string.match(ARGV[1], '^([^:]+):')
if redis.call('HINCRBY', KEYS[2], endpoint, -1) <= 0 then redis.call('HDEL', KEYS[2], endpoint) end
if tonumber(ARGV[3]) > 0 then redis.call('ZADD', KEYS[3], ARGV[3], ARGV[1]) end
local next = redis.call('ZRANGEBYLEX', KEYS[4], '[' .. endpoint .. ':', '[' .. endpoint .. ';', 'LIMIT', 0, 1)
if next[1] then
  redis.call('ZREM', KEYS[4], next[1])
  redis.call('ZADD', KEYS[3], ARGV[4], next[1])
end
return 1
