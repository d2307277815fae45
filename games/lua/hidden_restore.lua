-- Give a game's hidden SET back its players after Redis lost it (the rebuild): the
-- database's hidden players are added only if the set does not exist, so a set Redis
-- still holds (the newest state there is) is never touched.
--
-- KEYS[1] hidden        the game's hidden SET
-- ARGV[1..] per player: player_id
--   (hidden player ids from the database)
-- Returns how many were added (0 when the set existed).

if #ARGV == 0 or redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
return redis.call('SADD', KEYS[1], unpack(ARGV))
