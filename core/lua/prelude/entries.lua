-- Board entries: how a player's entry on a period board is keyed, changed and ranked. One
-- definition, prepended to every script that writes or ranks board entries
-- (core/lua.py: load(..., prelude={'entries'})); core/board_rules.py is its Python twin and
-- tests run both on the same inputs.
--
-- A period board is a ZSET member -> sort base: the score, negated when higher is better,
-- so ascending is best first at any order, exact for every |score| <= 2^53-1. Equal bases
-- are ordered by the member, in byte order:
--   ties 'shared':   the player id (equal scores share a rank, listed by id);
--   ties 'earliest': 16 characters of when the entry reached its score, then the player id;
--   ties 'subscore': 15 characters of the subscore (oriented like the base), then the same.
-- "When" is the board's hybrid clock (12 hex digits of ms, 4 of a sequence within that ms,
-- never going back), so entries applied in the same ms still rank in the order they were.
-- The board's members HASH maps player -> member for the two prefixed rules.

local ENTRY_CLOCK_CHARS = 16
local ENTRY_SUB_CHARS = 15
local ENTRY_TWO_53 = 9007199254740992
local ENTRY_MAX_EXACT = ENTRY_TWO_53 - 1
local ENTRY_CLOCK_MS_MAX = 281474976710655 -- 16^12 - 1
local ENTRY_CLOCK_SEQ_MAX = 65535

local function entry_prefix_chars(ties)
  if ties == 'earliest' then return ENTRY_CLOCK_CHARS end
  if ties == 'subscore' then return ENTRY_SUB_CHARS + ENTRY_CLOCK_CHARS end
  return 0
end

-- An oriented subscore as 15 characters in the same byte order ('%x' takes a 64-bit long).
local function entry_sub_encode(v)
  if v < 0 then return '0' .. string.format('%014x', v + ENTRY_TWO_53) end
  return '1' .. string.format('%014x', v)
end

local function entry_sub_decode(text)
  local n = tonumber(string.sub(text, 2, ENTRY_SUB_CHARS), 16)
  if string.sub(text, 1, 1) == '0' then return n - ENTRY_TWO_53 end
  return n
end

-- The board's next clock value after state (false: none yet), at now (ms).
local function entry_clock_next(state, now)
  now = math.min(math.max(0, now), ENTRY_CLOCK_MS_MAX)
  if not state then return string.format('%012x0000', now) end
  local last = tonumber(string.sub(state, 1, 12), 16)
  local seq = tonumber(string.sub(state, 13, 16), 16)
  if now > last then return string.format('%012x0000', now) end
  if seq < ENTRY_CLOCK_SEQ_MAX then return string.format('%012x%04x', last, seq + 1) end
  if last == ENTRY_CLOCK_MS_MAX then return state end -- the year 10889: stop rather than overflow
  return string.format('%012x0000', last + 1)
end

local function entry_member(ties, player, sub, clock)
  if ties == 'shared' then return player end
  if ties == 'earliest' then return clock .. player end
  return entry_sub_encode(sub) .. clock .. player
end

-- The player id of a member.
local function entry_player(ties, member)
  local skip = entry_prefix_chars(ties)
  if skip == 0 then return member end
  return string.sub(member, skip + 1)
end

-- The oriented subscore of a member (0 unless ties 'subscore').
local function entry_sub(ties, member)
  if ties ~= 'subscore' then return 0 end
  return entry_sub_decode(string.sub(member, 1, ENTRY_SUB_CHARS))
end

-- A player's member on a board whose rule the caller may not know (hiding, erasing): the
-- members HASH has it for the prefixed rules, else it is the player id.
local function entry_member_of(members, player)
  return redis.call('HGET', members, player) or player
end

-- The player's stored entry: member, base, oriented subscore; nil when they have none.
local function entry_get(board, members, ties, player)
  local member = player
  if ties ~= 'shared' then
    member = redis.call('HGET', members, player)
    if not member then return nil end
  end
  local base = redis.call('ZSCORE', board, member)
  if not base then return nil end
  return member, tonumber(base), entry_sub(ties, member)
end

-- The (base, subscore) an entry gets from one submission, or nil to keep the stored one:
-- increment adds both; best keeps a stored pair that is no worse, compared as a whole;
-- latest sets both. An unchanged pair keeps the moment it was first reached.
local function entry_next(mode, old_base, old_sub, value, sub)
  local base, new_sub
  if mode == 'increment' then
    base, new_sub = (old_base or 0) + value, (old_sub or 0) + sub
  elseif mode == 'best' and old_base and (old_base < value or (old_base == value and old_sub <= sub)) then
    return nil
  else
    base, new_sub = value, sub
  end
  if old_base == base and old_sub == new_sub then return nil end
  return base, new_sub
end

-- Whether a base or subscore (a total) stays exact, as the API's range promises.
local function entry_exact(value)
  return math.abs(value) <= ENTRY_MAX_EXACT
end

-- Put the player's entry at (base, member), replacing their old member.
local function entry_put(board, members, ties, player, old_member, member, base)
  if old_member and old_member ~= member then redis.call('ZREM', board, old_member) end
  redis.call('ZADD', board, base, member)
  if ties ~= 'shared' then redis.call('HSET', members, player, member) end
end

-- A base as exact decimal text (Lua's tostring keeps 14 digits; %.0f prints any exact double).
local function entry_text(base)
  return string.format('%.0f', base)
end

-- The competition rank of a member with base: one more than the entries strictly ahead
-- ("1224" for ties 'shared'; with a prefix every member is distinct, and so is every rank).
local function entry_rank(board, ties, member, base)
  if ties == 'shared' then
    return redis.call('ZCOUNT', board, '-inf', '(' .. entry_text(base)) + 1
  end
  return redis.call('ZRANK', board, member) + 1
end

-- How many entries share the member's rank (1 with a prefix).
local function entry_equal(board, ties, base)
  if ties ~= 'shared' then return 1 end
  local text = entry_text(base)
  return redis.call('ZCOUNT', board, text, text)
end
