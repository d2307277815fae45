-- Open websockets of one client address (an IPv4 address or an IPv6 /64), across
-- every web process and node: a socket is admitted while the address holds fewer
-- than the cap, keeps its place by beating, and gives it up when it closes. A
-- socket whose process died stops beating and ages out after its lifetime.
--
-- KEYS[1] sockets       the address's sockets ZSET (socket id -> when its place lapses, ms)
-- ARGV[1] op            'admit' (also a socket's beat) | 'release'
-- ARGV[2] socket        socket id
-- ARGV[3] now_ms        now, epoch ms
-- ARGV[4] lifetime      a place's lifetime, ms
-- ARGV[5] cap           most open sockets per address
-- Returns 1 (admitted, or its place renewed; 'release': done), 0 (refused: the address is at its cap)

local now = tonumber(ARGV[3])
if ARGV[1] == 'release' then
  redis.call('ZREM', KEYS[1], ARGV[2])
  return 1
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if not redis.call('ZSCORE', KEYS[1], ARGV[2]) and redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[5]) then
  return 0
end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[4]), ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1
