"""The entries prelude (core/lua/prelude/entries.lua) and its Python twin (core/board_rules.py)
give the same answers: every script that keys or ranks board entries runs the Lua, the ledger
rebuild and the model-based references run the Python."""

from __future__ import annotations

import functools
from typing import Any

import pytest
import redis
from django.conf import settings
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from core import board_rules
from core.lua import PRELUDE_DIR

MAX = board_rules.MAX_EXACT
# Values near the edges of what a double holds exactly, and ordinary ones.
exact_ints = st.one_of(
    st.integers(-MAX, MAX),
    st.sampled_from([0, 1, -1, MAX, -MAX, MAX - 1, -MAX + 1, 2**52, -(2**52), 2**31, -(2**31)]),
)
clock_ms = st.one_of(st.integers(0, 2**48 - 1), st.sampled_from([0, 1_764_000_000_000, 2**48 - 1]))
clock_states = st.one_of(
    st.none(),
    st.builds(lambda ms, seq: f"{ms:012x}{seq:04x}", clock_ms, st.sampled_from([0, 1, 0xFFFE, 0xFFFF])),
)

# A script made of the prelude and a dispatcher, for this test only.
_PROBE = (
    (PRELUDE_DIR / "entries.lua").read_text()
    + """
local op = ARGV[1]
if op == 'sub' then
  local v = tonumber(ARGV[2])
  local text = entry_sub_encode(v)
  return {text, entry_text(entry_sub_decode(text))}
elseif op == 'clock' then
  local state = ARGV[2]
  if state == '' then state = false end
  return entry_clock_next(state, tonumber(ARGV[3]))
elseif op == 'next' then
  local old_base, old_sub = nil, nil
  if ARGV[3] ~= '' then old_base, old_sub = tonumber(ARGV[3]), tonumber(ARGV[4]) end
  local base, sub = entry_next(ARGV[2], old_base, old_sub, tonumber(ARGV[5]), tonumber(ARGV[6]))
  if base == nil then return {} end
  return {entry_text(base), entry_text(sub)}
elseif op == 'member' then
  local member = entry_member(ARGV[2], ARGV[3], tonumber(ARGV[4]), ARGV[5])
  return {member, entry_player(ARGV[2], member), entry_text(entry_sub(ARGV[2], member))}
elseif op == 'exact' then
  if entry_exact(tonumber(ARGV[2]) + tonumber(ARGV[3])) then return 1 end
  return 0
end
"""
)


@functools.cache
def _client() -> redis.Redis:
    # One plain connection for the whole module: hundreds of probes, none of them async.
    return redis.Redis.from_url(settings.REDIS_URL, decode_responses=True, socket_timeout=30)


def _probe(*args: Any) -> Any:
    return _client().eval(_PROBE, 0, *args)


@hypothesis_settings(max_examples=300, deadline=None)
@given(exact_ints)
def test_it_encodes_subscores_alike_in_lua_and_python(value: int) -> None:
    text, decoded = _probe("sub", value)
    assert text == board_rules.subscore_encode(value)
    assert int(decoded) == board_rules.subscore_decode(text) == value
    assert len(text) == board_rules.SUBSCORE_CHARS


@hypothesis_settings(max_examples=200, deadline=None)
@given(exact_ints, exact_ints)
def test_it_orders_subscore_texts_as_their_values(a: int, b: int) -> None:
    ta, tb = board_rules.subscore_encode(a), board_rules.subscore_encode(b)
    assert (ta < tb) == (a < b)
    assert (ta == tb) == (a == b)


@hypothesis_settings(max_examples=300, deadline=None)
@given(clock_states, clock_ms)
def test_it_moves_the_clock_alike_in_lua_and_python(state: str | None, now_ms: int) -> None:
    moved = _probe("clock", state or "", now_ms)
    assert moved == board_rules.clock_next(state, now_ms)
    if state is not None and state != "ffffffffffffffff":
        assert moved > state  # never back, never the same (but at the end of its range)
    assert len(moved) == board_rules.CLOCK_CHARS


@hypothesis_settings(max_examples=400, deadline=None)
@given(
    st.sampled_from(["increment", "best", "latest"]),
    st.one_of(st.none(), st.tuples(exact_ints, exact_ints)),
    exact_ints,
    exact_ints,
)
def test_it_changes_entries_alike_in_lua_and_python(
    mode: str, stored: tuple[int, int] | None, value: int, sub: int
) -> None:
    # The scripts refuse a total past the exact range before calling entry_next.
    too_big = stored is not None and not (board_rules.exact(stored[0] + value) and board_rules.exact(stored[1] + sub))
    if mode == "increment" and too_big:
        return
    old = ("", "") if stored is None else stored
    lua = _probe("next", mode, *old, value, sub)
    python = board_rules.next_entry(mode=mode, stored=stored, value=value, sub=sub)
    assert (None if lua == [] else (int(lua[0]), int(lua[1]))) == python


@hypothesis_settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(board_rules.TIES),
    st.from_regex(r"[A-Za-z0-9_.:-]{1,64}", fullmatch=True),
    exact_ints,
    clock_states.filter(lambda s: s is not None),
)
def test_it_makes_and_reads_members_alike_in_lua_and_python(ties: str, player: str, sub: int, clock: str) -> None:
    member, back, sub_back = _probe("member", ties, player, sub, clock)
    assert member == board_rules.member_of(ties, player, sub=sub, clock=clock)
    parts = board_rules.member_parts(ties, member)
    assert back == parts.player_id == player
    assert int(sub_back) == parts.sub == (sub if ties == board_rules.SUBSCORE else 0)


@pytest.mark.parametrize(
    ("a", "b", "exact"),
    [(MAX, 0, True), (MAX, 1, False), (-MAX, -1, False), (MAX, -MAX, True), (MAX, MAX, False), (-MAX, -MAX, False)],
)
def test_it_finds_totals_past_the_exact_range(a: int, b: int, exact: bool) -> None:
    assert _probe("exact", a, b) == int(exact)
    assert board_rules.exact(a + b) is exact
