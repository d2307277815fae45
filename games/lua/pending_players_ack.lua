-- Acknowledge players written to the database, unless they were marked again
-- after the read (a new display name): those stay for the next batch. A player
-- erased after the read's mark, and not marked since, had their row written after
-- the erasure deleted it: the caller deletes it again.
--
-- KEYS[1] pending     pending-players ZSET
-- KEYS[2] erased      erased ZSET (player_id -> when, ms)
-- ARGV[1..] per player: player, marked
--   (player_id, the marked-at ms seen by the read)
-- Returns {number removed, player ids whose rows must go...}

local removed = 0
local erased = {}
for i = 1, #ARGV, 2 do
  local player, marked = ARGV[i], ARGV[i + 1]
  local now_marked = redis.call('ZSCORE', KEYS[1], player)
  if now_marked == marked then
    removed = removed + redis.call('ZREM', KEYS[1], player)
  elseif not now_marked then
    local erased_at = redis.call('ZSCORE', KEYS[2], player)
    if erased_at and tonumber(erased_at) >= tonumber(marked) then table.insert(erased, player) end
  end
end
return {removed, unpack(erased)}
