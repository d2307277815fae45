"""Every Redis key name the product uses, and nothing else formats one.

Two hash tags, so that each script's keys share one Redis Cluster slot while a game's
boards spread over many slots:

- a **board's** keys carry ``{game.board}`` (a *board ref*, :func:`board_ref`): its period
  ZSETs and their entry metadata, the hidden copy, anti-spam, idempotency, ledger, close jobs
  and live versions: everything one submission to one board checks and writes atomically;
- a **game's** keys carry ``{game}``: names and their index, the master hidden set, recent
  submissions, presence, API limits, link codes.

Slugs are ``[a-z0-9-]``, so a tag can never contain a brace, and a game tag never a dot.
"""

from __future__ import annotations

import hashlib
import re


def _tag(slug: str) -> str:
    return "{" + slug + "}"


def board_ref(game_slug: str, board_slug: str) -> str:
    """The name of one leaderboard in keys (and in the broadcaster's change set): 'game.board'."""
    return f"{game_slug}.{board_slug}"


def split_ref(ref: str) -> tuple[str, str]:
    """(game slug, board slug) of a board ref."""
    game_slug, _, board_slug = ref.partition(".")
    return game_slug, board_slug


# --------------------------------------------------------------------------- a board's keys: {game.board}


def board(ref: str, period: str, period_id: str) -> str:
    """ZSET of one period's standings: member (the player id, after a prefix for ties
    'earliest' and 'subscore') -> sort base (core/lua/prelude/entries.lua)."""
    return f"lb:{_tag(ref)}:{period}:{period_id}"


def entry_meta(board_key: str) -> str:
    """HASH player_id -> the metadata (JSON) of their entry on one period board; expires with it."""
    return f"{board_key}:meta"


def entry_members(board_key: str) -> str:
    """HASH player_id -> their member on one period board (ties 'earliest' and 'subscore':
    the member carries a prefix); expires with it."""
    return f"{board_key}:members"


def entry_entrants(board_key: str) -> str:
    """ZSET player_id -> when they entered (ms), of a competing board's period (issue 22: a
    join, or a first score where entry is open); its size is the field's. Expires with the board."""
    return f"{board_key}:entrants"


def entry_tries(board_key: str) -> str:
    """HASH player_id -> how many of their scores a competing board's period accepted (its
    ``max_attempts``, a league's ``min_scores``). Expires with the board."""
    return f"{board_key}:tries"


def entry_extra(board_key: str) -> str:
    """HASH player_id -> attempts granted beyond ``max_attempts`` in a competing board's period.
    Expires with the board."""
    return f"{board_key}:extra"


def entry_cohorts(board_key: str) -> str:
    """ZSET player_id -> the index of their cohort (core/lua/prelude/cohorts.lua), of a competing
    board's period with ``cohort_size``: who is in which race. Expires with the board."""
    return f"{board_key}:cohorts"


def entry_cohort_sizes(board_key: str) -> str:
    """ZSET cohort index (12 digits) -> its tier's place x 2048 + its entrants: where the next
    entrant goes (the smallest cohort of a tier with room is one range read). Expires with the board."""
    return f"{board_key}:cohort-sizes"


def entry_cohort_state(board_key: str) -> str:
    """HASH of a period's cohorts: 'n:<tier place>' cohorts made, 'last:<tier place>' the newest,
    'placed' once a balanced split ran. Expires with the board."""
    return f"{board_key}:cohort-state"


def entry_ratings(board_key: str) -> str:
    """HASH player_id -> the rating they joined with (``cohort_by: rating``). Expires with the board."""
    return f"{board_key}:ratings"


def league_tiers(ref: str) -> str:
    """HASH player_id -> their tier slug on a league board: the database's copy, which
    settlement writes and a join reads (a player without one starts in ``start_tier``)."""
    return f"lb:{_tag(ref)}:league-tiers"


def tie_clock(ref: str) -> str:
    """STRING: the board's hybrid clock, the last moment given to an entry (ties 'earliest'
    and 'subscore'), so that the next is always later."""
    return f"lb:{_tag(ref)}:tie-clock"


def board_pattern(ref: str) -> str:
    return f"lb:{_tag(ref)}:*"


def boards_index(ref: str) -> str:
    """ZSET of a game's live board keys, scored by when each expires (ms; +inf for all-time)."""
    return f"lb:{_tag(ref)}:boards"


def board_hidden(ref: str) -> str:
    """SET of hidden player ids, copied to each board so that its submit script refuses them
    atomically; hiding writes every board of the game before it returns."""
    return f"lb:{_tag(ref)}:hidden"


def hidden_stash(board_key: str) -> str:
    """ZSET holding a hidden player's entries of one board until they are unhidden."""
    return f"{board_key}:hidden"


def player_spam(ref: str, player_id: str) -> str:
    """ZSET sliding window of one player's submission times (anti-spam)."""
    return f"lb:{_tag(ref)}:spam:{player_id}"


def idempotency(ref: str, key_prefix: str, idempotency_key: str, item: int | None = None) -> str:
    """The stored outcome of one Idempotency-Key of one API key (item: position in a batch)."""
    digest = hashlib.sha256(idempotency_key.encode()).hexdigest()[:32]
    suffix = "" if item is None else f":{item}"
    return f"idem:{_tag(ref)}:{key_prefix}:{digest}{suffix}"


def player_idempotency(ref: str, player_id: str) -> str:
    """ZSET of one player's idempotency records (key -> when it expires, ms), so that
    erasing the player finds them; it lives as long as its newest record."""
    return f"idem:{_tag(ref)}:player:{player_id}"


def ledger(ref: str) -> str:
    """STREAM of every applied submission (and correction), capped by length; a beat
    task copies it to the ScoreEvent table through the consumer group below."""
    return f"lb:{_tag(ref)}:events"


def dirty(ref: str) -> str:
    """ZSET of board keys changed since the broadcaster last looked, scored by first change (ms)."""
    return f"lb:{_tag(ref)}:dirty"


def board_version(board_key: str) -> str:
    """Counter of the standings messages sent for one board; expires with the board."""
    return f"{board_key}:version"


def live_cohorts(ref: str) -> str:
    """ZSET '<window>:<cohort index>:<process>' -> when that web process's live interest in the
    cohort lapses (ms): the cohorts of a board some live socket watches, so the broadcaster
    reads only those. Goes with its last member's interest (PEXPIRE)."""
    return f"lb:{_tag(ref)}:live-cohorts"


def live_periods(ref: str) -> str:
    """HASH period -> the period id the broadcaster last saw, to announce each rollover once."""
    return f"lb:{_tag(ref)}:live-periods"


def close_jobs(ref: str) -> str:
    """ZSET of period close jobs ('<period>:<period id>') scored by when each is due (ms)."""
    return f"jobs:{_tag(ref)}:close:due"


def close_claims(ref: str) -> str:
    """ZSET of claimed close jobs scored by their visibility deadline (ms): the reaper
    returns those whose deadline passed to the due ZSET."""
    return f"jobs:{_tag(ref)}:close:claimed"


def close_attempts(ref: str) -> str:
    """HASH close job -> attempts so far (for the backoff and the dead-letter limit)."""
    return f"jobs:{_tag(ref)}:close:attempts"


def close_dead(ref: str) -> str:
    """ZSET of close jobs that failed every attempt, scored by when (ms); admin retries them."""
    return f"jobs:{_tag(ref)}:close:dead"


def close_errors(ref: str) -> str:
    """HASH close job -> its last failure (text, for admin); cleared when the job succeeds."""
    return f"jobs:{_tag(ref)}:close:errors"


def archive_lock(ref: str, period: str, period_id: str) -> str:
    """STRING holding the id of the archive run writing one period's rows; expires if it dies."""
    return f"jobs:{_tag(ref)}:archive-lock:{period}:{period_id}"


def board_rebuild(board_key: str, run: str) -> str:
    """ZSET a rebuild run writes one board into before swapping it in (expires if the run dies)."""
    return f"{board_key}:rebuild:{run}"


def parse_board(key: str) -> tuple[str, str, str] | None:
    """(board ref, period, period id) of a key :func:`board` named, or None for any other key.

    Only the shape is checked (the caller validates the period and its id): other
    ``lb:`` keys have one part after the tag, or more (stashes, versions, metadata). A
    custom period's id is an instant with a colon ('2026-11-20T17:00Z'), so the id is
    what follows the period, and a colon in it only fits that shape.
    """
    if not key.startswith("lb:{"):
        return None
    ref, brace, rest = key[4:].partition("}:")
    period, colon, period_id = rest.partition(":")
    if not brace or "." not in ref or not colon or not period or not period_id:
        return None
    if ":" in period_id and not _CUSTOM_ID_IN_KEY.match(period_id):
        return None
    return ref, period, period_id


# A custom period's id, maybe of a later generation (games/periods.py: '~' and an instant without colons).
_CUSTOM_ID_IN_KEY = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}Z(~\d{8}T\d{6}\.\d{3}Z)?$")


# --------------------------------------------------------------------------- a game's keys: {game}


def names(slug: str) -> str:
    """HASH player_id -> display name."""
    return f"lb:{_tag(slug)}:names"


def name_index(slug: str) -> str:
    """ZSET of '<search key>\\0<player_id>' members, all scored 0: a search by name prefix is
    one ZRANGEBYLEX (core.text.search_key). One member per named player."""
    return f"lb:{_tag(slug)}:name-index"


def name_keys(slug: str) -> str:
    """HASH player_id -> the search key the name index holds for them (to replace it on a rename)."""
    return f"lb:{_tag(slug)}:name-keys"


def name_index_progress(slug: str) -> str:
    """STRING: how far indexing the names stored before the name index existed got (an HSCAN
    cursor, or 'done'). Lost with the names themselves, when indexing starts over."""
    return f"lb:{_tag(slug)}:name-index-progress"


def erased(slug: str) -> str:
    """ZSET of players erased lately (player_id -> when, ms), kept ERASED_MEMORY_MS: what runs
    beside an erasure (a rebuild's name restore, the player sync) must not bring them back."""
    return f"lb:{_tag(slug)}:erased"


def hidden(slug: str) -> str:
    """SET of a game's hidden (banned) player ids: the master copy, which new boards start from."""
    return f"lb:{_tag(slug)}:hidden"


def recent(slug: str) -> str:
    """LIST of recent accepted submissions (JSON), newest first, capped."""
    return f"lb:{_tag(slug)}:recent"


def recent_version(slug: str) -> str:
    """Counter of the live "recent" messages sent for a game, so sockets drop older ones."""
    return f"lb:{_tag(slug)}:recent-version"


def pending_players(slug: str) -> str:
    """ZSET of player ids whose row in the database is new or stale, scored by when (ms)."""
    return f"lb:{_tag(slug)}:pending-players"


def followed(slug: str) -> str:
    """ZSET of player ids some live page follows, scored by when that interest lapses (ms)."""
    return f"lb:{_tag(slug)}:followed"


def config_version(slug: str) -> str:
    """Counter bumped whenever a game's config or API keys change (invalidates process caches)."""
    return f"lb:{_tag(slug)}:config-version"


def config_epoch() -> str:
    """Counter bumped whenever any game's config changes: the game list is read again only
    then (config.list_games), however many games there are."""
    return "config:{all}:epoch"


def config_changes() -> str:
    """STREAM of config changes, one entry per epoch bump (fields ``game`` and ``board``, the
    board's slug or '' for the game itself), written in one transaction with the epoch: a
    process reloads only what changed since the epoch it read (config.list_games)."""
    return "config:{all}:changes"


def api_rate(slug: str, key_prefix: str) -> str:
    """GCRA state (theoretical arrival time, ms) of one API key."""
    return f"rl:{_tag(slug)}:key:{key_prefix}"


def api_items_rate(slug: str, key_prefix: str) -> str:
    """GCRA state (theoretical arrival time, ms) of one API key's item budget."""
    return f"rl:{_tag(slug)}:items:{key_prefix}"


def api_last_used(slug: str) -> str:
    """HASH key_prefix -> last request time (ms), copied to the database by a beat task."""
    return f"rl:{_tag(slug)}:key-last-used"


def game_patterns(slug: str) -> tuple[str, ...]:
    """SCAN patterns that together match every key of one game and its boards (and no other
    game's: a game tag has no dot): what deleting the game removes."""
    games = tuple(f"{family}:{_tag(slug)}:*" for family in ("lb", "presence", "rl", "idem", "jobs", "link"))
    boards = tuple(f"{family}:{{{slug}.*}}:*" for family in ("lb", "idem", "jobs"))
    return games + boards


def board_patterns(ref: str) -> tuple[str, ...]:
    """SCAN patterns of every key of one board (deleting a board's live state)."""
    return tuple(f"{family}:{_tag(ref)}:*" for family in ("lb", "idem", "jobs"))


def every_board_pattern() -> str:
    """SCAN pattern of every board's ``lb:`` keys (the catch-up pass looks for period boards)."""
    return "lb:{*.*}:*"


# --------------------------------------------------------------------------- presence


def presence_online(slug: str) -> str:
    """ZSET player_id -> last seen (ms). Online means last seen within the game's timeout."""
    return f"presence:{_tag(slug)}:online"


def presence_watching(slug: str) -> str:
    """ZSET of open pages of viewers not listed as players (socket id -> last seen, ms)."""
    return f"presence:{_tag(slug)}:watching"


def presence_tabs(slug: str, player_id: str) -> str:
    """HASH of a linked player's open pages (socket id -> expiry ms), plus the last
    page-written and other-source last-seen times ('~page', '~other'); expires when idle."""
    return f"presence:{_tag(slug)}:tabs:{player_id}"


def presence_last_seen(slug: str) -> str:
    """ZSET player_id -> last seen (ms) of players no longer in the online ZSET; the prune
    task drops entries older than presence.services.PRESENCE_LAST_SEEN_KEEP_SECS."""
    return f"presence:{_tag(slug)}:last-seen"


def presence_joined(slug: str) -> str:
    """ZSET of joins not yet announced (player_id -> when, ms); the broadcaster pops it."""
    return f"presence:{_tag(slug)}:joined"


def presence_left(slug: str) -> str:
    """ZSET of leaves not yet announced (player_id -> when, ms); the broadcaster pops it."""
    return f"presence:{_tag(slug)}:left"


def presence_announcer(slug: str) -> str:
    """STRING: the broadcaster that announces this game's presence (a lease, PX). One at a
    time, because presence messages are changes: out of order, a socket would drop some."""
    return f"presence:{_tag(slug)}:announcer"


def presence_version(slug: str) -> str:
    """Counter of the presence messages sent for a game, so sockets drop older ones."""
    return f"presence:{_tag(slug)}:version"


# --------------------------------------------------------------------------- the live core


def live_changes() -> str:
    """ZSET of board refs changed since the broadcaster last looked (ref -> first change, ms):
    a tick visits these boards only, so idle boards cost nothing. A hint written after the
    board's own script; the board's dirty ZSET says which of its windows changed."""
    return "live:{changes}:boards"


def live_presence_changes() -> str:
    """ZSET of game slugs whose presence changed (a join, a leave, a watcher come or gone) since
    the broadcaster last looked (slug -> first change, ms): a tick announces these games only."""
    return "live:{changes}:presence"


# --------------------------------------------------------------------------- background work sets
# On the live change set's tag: a submission marks them in the pipeline that marks that set, so
# on a cluster they add no node to it (core/worksets.py).


def work_ledger() -> str:
    """ZSET of board refs whose ledger stream may hold entries not yet stored (ref -> first mark,
    ms): the drain visits these boards only. Marked after the write (core/worksets.py)."""
    return "work:{changes}:ledger"


def work_players() -> str:
    """ZSET of game slugs with players waiting for the player sync (slug -> first mark, ms): the
    sync visits these games only; writers mark after writing, the sync unmarks then checks again."""
    return "work:{changes}:players"


def work_close_due() -> str:
    """ZSET board ref -> when its close jobs next need a visit (ms): never later than its earliest
    due job or claim deadline. The close-job run visits the refs scored up to now only."""
    return "work:{changes}:close-due"


def work_close_dead() -> str:
    """ZSET of board refs holding dead close jobs (ref -> first seen, ms): what the dead-jobs
    gauge reads instead of every board's queue."""
    return "work:{changes}:close-dead"


def work_sweep() -> str:
    """HASH of the background safety net's cursors: the last board (pk) it visited, and one
    keyspace SCAN cursor per Redis node, so each run takes the next slice."""
    return "work:{sweep}:cursors"


# --------------------------------------------------------------------------- live sockets


def address_sockets(address: str) -> str:
    """ZSET of the open websockets of one client address (socket id -> lapse ms); the cap counts it."""
    return f"ws:{_tag(address)}:sockets"


# --------------------------------------------------------------------------- account links


def link_code(slug: str, code: str) -> str:
    """STRING '<expiry ms>:<player_id>' of one unused link code; expires with the code."""
    return f"link:{_tag(slug)}:code:{code}"


def link_codes_issued(slug: str, player_id: str) -> str:
    """ZSET of a player's link codes scored by when each expires (ms): count the live ones."""
    return f"link:{_tag(slug)}:issued:{player_id}"


def link_failures_user(slug: str, user_id: int) -> str:
    """ZSET sliding window of one site user's wrong link codes in a game."""
    return f"link:{_tag(slug)}:fail-user:{user_id}"


def link_failures_ip(slug: str, ip: str) -> str:
    """ZSET sliding window of one client address's (IPv6: one /64's) wrong link codes in a game."""
    return f"link:{_tag(slug)}:fail-ip:{ip}"


def _username_digest(username: str) -> str:
    # Hashed: usernames are free text (and case does not make another account).
    return hashlib.sha256(username.lower().encode()).hexdigest()[:32]


def login_failures_pair(username: str, ip: str) -> str:
    """ZSET sliding window of failed log-ins for one username from one address (IPv6: one /64)."""
    return f"login:{{accounts}}:fail-pair:{_username_digest(username)}:{ip}"


def login_failures_user(username: str) -> str:
    """ZSET sliding window of failed log-ins for one username from anywhere (the slow-down)."""
    return f"login:{{accounts}}:fail-user:{_username_digest(username)}"


def login_next_attempt(username: str) -> str:
    """STRING: when a slowed-down username takes its next attempt (ms); expires with the window."""
    return f"login:{{accounts}}:next:{_username_digest(username)}"


def login_failures_ip(ip: str) -> str:
    """ZSET sliding window of failed log-ins from one client address (IPv6: one /64)."""
    return f"login:{{accounts}}:fail-ip:{ip}"


def signups_ip(ip: str) -> str:
    """ZSET sliding window of accounts created from one client address (IPv6: one /64)."""
    return f"signup:{{accounts}}:ip:{ip}"


def password_resets_ip(ip: str) -> str:
    """ZSET sliding window of password-reset mails asked for from one client address (IPv6: one /64)."""
    return f"pwreset:{{accounts}}:ip:{ip}"


# Webhook deliveries (webhooks/): one queue for the whole service, under one hash tag, so that
# a claim, an ack and a reap each touch one slot. Its size is the pending deliveries, which
# the database bounds and the sweep keeps in step.
_WEBHOOKS = "{webhooks}"


def webhook_due() -> str:
    """ZSET '<endpoint pk>:<delivery pk, 12 digits>' -> when due (ms); ties go in delivery order."""
    return f"jobs:{_WEBHOOKS}:due"


def webhook_claims() -> str:
    """ZSET of claimed deliveries scored by their visibility deadline (ms), which is the claim's
    token: the reaper makes those whose deadline passed due again."""
    return f"jobs:{_WEBHOOKS}:claimed"


def webhook_parked() -> str:
    """ZSET of due deliveries of endpoints at their concurrency limit, all scored 0, so that an
    endpoint's sort together by name ('<endpoint>:<delivery>') and leave in delivery order as
    its requests finish."""
    return f"jobs:{_WEBHOOKS}:parked"


def webhook_inflight() -> str:
    """HASH endpoint pk -> its claimed deliveries (at most WEBHOOK_ENDPOINT_CONCURRENCY)."""
    return f"jobs:{_WEBHOOKS}:inflight"


def webhook_runner() -> str:
    """STRING lock held by the one delivery run at a time (expires if its process dies)."""
    return f"jobs:{_WEBHOOKS}:runner"
