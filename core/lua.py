"""The Lua loader and the typed boundary with Lua: every script is registered once, called by
SHA, and called only through the layouts bound to its contract.

Each app keeps its scripts in ``<app>/lua/<name>.lua`` and names them in its own
``scripts.py`` (``SUBMIT_SCORE = lua.load(__file__, "submit_score")``), where each script
also gets its one typed wrapper: a function that builds KEYS and ARGV from named, typed
arguments and parses the reply into a typed result (as redis-py's ``lock.py`` owns its
scripts). Nothing else builds a key list or reads a reply by position.

**The contract.** Each source opens with its KEYS / ARGV / returns header, written so a
machine reads it too::

    -- KEYS[1] board          the period board ZSET
    -- KEYS[2] meta           its entry metadata HASH
    -- KEYS[3] version?       (optional) its version counter
    -- KEYS[4..] per item: spam, idem
    -- ARGV[1] mode           'increment' | 'best' | 'latest'
    -- ARGV[2..] per window: name, period_id
    -- Returns {...}

A wrapper binds NamedTuples to it (:meth:`Script.bind`): their field names must be the
header's names, in order, or the import fails. Calls then take those tuples, so a key can
only go where its name says. All keys of one call share one hash tag (core/keys.py), so
a script stays on one Redis Cluster slot.

**Preludes.** Rules several scripts share (how a board entry is keyed and ranked) live once
in ``core/lua/prelude/<name>.lua``; ``load(..., prelude=("entries",))`` prepends them
(Redis 6.2, embedded here, has no FUNCTION libraries). core/board_rules.py is their Python
twin, and tests run both on the same inputs.

``Script.__call__`` runs EVALSHA and, when Redis has forgotten the script (a restart,
SCRIPT FLUSH), loads it and runs it again: NOSCRIPT means nothing ran, so that retry is
safe even for writes. Pipelines call :func:`ensure_loaded` first so a batch never meets
NOSCRIPT half-way.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from redis.asyncio import Redis
from redis.asyncio.client import Pipeline
from redis.asyncio.cluster import RedisCluster
from redis.exceptions import NoScriptError

KeyOrArg = str | int | float
PRELUDE_DIR = Path(__file__).resolve().parent / "lua" / "prelude"

_FIXED = re.compile(r"^-- (KEYS|ARGV)\[(\d+)\] ([a-z_][a-z0-9_]*)(\??)(?:\s|$)")
_GROUP = re.compile(r"^-- (KEYS|ARGV)\[[^\]]*\.\.\] per ([a-z_]+): ([a-z0-9_, ]+?)\s*(?:\(|$)")


class ContractError(ValueError):
    """A script's header, or a layout bound to it, that does not follow the rules above."""


class ScriptReplyError(RuntimeError):
    """A reply a wrapper does not know (an unknown refusal code, a reply of the wrong shape):
    a bug between a script and its wrapper, never a client's fault."""


@dataclass(frozen=True)
class Part:
    """The KEYS or the ARGV of a contract: fixed names (the optional ones last), then groups."""

    fixed: tuple[str, ...] = ()
    optional: tuple[str, ...] = ()
    groups: tuple[tuple[str, tuple[str, ...]], ...] = ()


@dataclass(frozen=True)
class Contract:
    keys: Part
    args: Part
    returns: str


def _part(lines: Sequence[str], what: str, script: str) -> Part:
    fixed: list[str] = []
    optional: list[str] = []
    groups: list[tuple[str, tuple[str, ...]]] = []
    for line in lines:
        group = _GROUP.match(line)
        if group and group[1] == what:
            groups.append((group[2], tuple(name.strip() for name in group[3].split(",") if name.strip())))
            continue
        match = _FIXED.match(line)
        if not match or match[1] != what:
            continue
        if groups or int(match[2]) != len(fixed) + len(optional) + 1:
            raise ContractError(f"{script}: {what}[{match[2]}] {match[3]} is out of order")
        if optional and not match[4]:
            raise ContractError(f"{script}: {what}[{match[2]}] follows an optional one")
        (optional if match[4] else fixed).append(match[3])
    return Part(tuple(fixed), tuple(optional), tuple(groups))


def parse_contract(source: str, script: str = "script") -> Contract:
    """The contract in a script's opening comment block."""
    header: list[str] = []
    for line in source.splitlines():
        if not line.startswith("--"):
            break
        header.append(line)
    returns = [line for line in header if line.startswith("-- Returns")]
    if not returns:
        raise ContractError(f"{script}: its header says nothing about what it returns")
    return Contract(_part(header, "KEYS", script), _part(header, "ARGV", script), returns[0][len("-- Returns") :])


def _fields(layout: type[tuple[Any, ...]]) -> tuple[str, ...]:
    fields = getattr(layout, "_fields", None)
    if fields is None:
        raise ContractError(f"{layout!r} is not a NamedTuple")
    return tuple(fields)


def _check(part: Part, fixed: type[tuple[Any, ...]] | None, groups: Sequence[type[tuple[Any, ...]]], what: str) -> None:
    want = (*part.fixed, *part.optional)
    got = _fields(fixed) if fixed is not None else ()
    if got != want:
        raise ContractError(f"{what}: the layout has {got}, the header {want}")
    got_groups = tuple(_fields(g) for g in groups)
    want_groups = tuple(names for _, names in part.groups)
    if got_groups != want_groups:
        raise ContractError(f"{what} groups: the layout has {got_groups}, the header {want_groups}")


def _flat(fixed: tuple[Any, ...] | None, groups: Iterable[Iterable[tuple[Any, ...]]]) -> list[Any]:
    # Optional (trailing) fixed values are left out when None: the script sees fewer.
    values = [] if fixed is None else [v for v in fixed if v is not None]
    for group in groups:
        for item in group:
            values.extend(item)
    return values


@dataclass
class Script:
    name: str
    source: str = field(repr=False)
    sha: str = field(repr=False)
    # The layouts a wrapper bound (bind()); None until then.
    layouts: tuple[Any, ...] | None = field(default=None, repr=False)

    @property
    def own_source(self) -> str:
        """The script without its preludes (its header opens it)."""
        return self.source.split(_PRELUDE_END, 1)[-1] if _PRELUDE_END in self.source else self.source

    @property
    def contract(self) -> Contract:
        return parse_contract(self.own_source, self.name)

    def bind(
        self,
        *,
        keys: type[tuple[Any, ...]] | None,
        args: type[tuple[Any, ...]] | None,
        key_groups: Sequence[type[tuple[Any, ...]]] = (),
        arg_groups: Sequence[type[tuple[Any, ...]]] = (),
    ) -> None:
        """Declare the NamedTuples a wrapper calls this script with; ContractError at import
        unless their fields are the header's names, in its order."""
        _check(self.contract.keys, keys, key_groups, f"{self.name} KEYS")
        _check(self.contract.args, args, arg_groups, f"{self.name} ARGV")
        self.layouts = (keys, args, tuple(key_groups), tuple(arg_groups))

    def flatten(
        self,
        keys: tuple[Any, ...] | None,
        args: tuple[Any, ...] | None,
        key_groups: Sequence[Iterable[tuple[Any, ...]]] = (),
        arg_groups: Sequence[Iterable[tuple[Any, ...]]] = (),
    ) -> tuple[list[str], list[KeyOrArg]]:
        """The raw KEYS and ARGV of one call made of bound layouts."""
        if self.layouts is None:
            raise ContractError(f"{self.name}: no layout bound (Script.bind in its scripts.py)")
        keys_type, args_type = self.layouts[0], self.layouts[1]
        if (keys_type is not None and type(keys) is not keys_type) or (
            args_type is not None and type(args) is not args_type
        ):
            raise ContractError(f"{self.name}: called with {type(keys).__name__}/{type(args).__name__}")
        return _flat(keys, key_groups), _flat(args, arg_groups)

    async def __call__(self, client: Redis, keys: Sequence[str], args: Sequence[KeyOrArg]) -> Any:
        try:
            return await client.evalsha(self.sha, len(keys), *keys, *args)
        except NoScriptError:
            await ensure_loaded(client, self, keys=keys[:1])
            return await client.evalsha(self.sha, len(keys), *keys, *args)

    def queue(self, pipe: Pipeline, keys: Sequence[str], args: Sequence[KeyOrArg]) -> None:
        """Add a call to a pipeline (after :func:`ensure_loaded`).

        As a raw command: redis-py's cluster pipeline refuses its ``evalsha`` method, but
        routes a raw EVALSHA by its keys like any other command.
        """
        pipe.execute_command("EVALSHA", self.sha, len(keys), *keys, *args)


class Call(NamedTuple):
    """One script call's raw KEYS and ARGV, as :meth:`Script.flatten` makes them."""

    keys: list[str]
    args: list[KeyOrArg]


# Ends the preludes of a script's source (its own text follows).
_PRELUDE_END = "-- (end of preludes)\n"

# Every script loaded so far, in load order (for warming a fresh Redis, and the benchmarks).
REGISTERED: list[Script] = []


def load(module_file: str, name: str, *, prelude: Sequence[str] = ()) -> Script:
    """The script ``lua/<name>.lua`` of the app of ``module_file`` (pass ``__file__``: the
    ``lua/`` folder beside it, or beside its package), with the named preludes of
    core/lua/prelude/ before it."""
    folder = Path(module_file).resolve().parent
    if not (folder / "lua").is_dir():
        folder = folder.parent
    own = (folder / "lua" / f"{name}.lua").read_text()
    shared = [(PRELUDE_DIR / f"{part}.lua").read_text() for part in prelude]
    source = "".join(f"{text}\n" for text in shared) + (_PRELUDE_END if shared else "") + own
    script = Script(name, source, hashlib.sha1(source.encode()).hexdigest())
    REGISTERED.append(script)
    return script


async def ensure_loaded(client: Redis, *scripts: Script, keys: Sequence[str] = ()) -> None:
    """Load the scripts Redis does not have. On a Redis Cluster, on the nodes serving
    ``keys`` (those a pipeline is about to call them on): a master lost elsewhere does not
    stop this pipeline."""
    if not isinstance(client, RedisCluster):
        present = await client.script_exists(*(s.sha for s in scripts))
        for script, exists in zip(scripts, present, strict=True):
            if not exists:
                await client.script_load(script.source)
        return
    await client.initialize()  # a new client learns the layout first (a no-op after)
    nodes = {node.name: node for node in (client.get_node_from_key(key) for key in keys)}
    for node in nodes.values():
        present = await client.execute_command("SCRIPT EXISTS", *(s.sha for s in scripts), target_nodes=node)
        for script, exists in zip(scripts, present, strict=True):
            if not int(exists):
                await client.execute_command("SCRIPT LOAD", script.source, target_nodes=node)


async def pipelined(
    client: Redis,
    calls: Sequence[tuple[Script, Call]],
    *,
    then: Callable[[Pipeline], None] | None = None,
    raise_on_error: bool = True,
) -> list[Any]:
    """Run script calls in one round trip (then the plain commands ``then`` queues, whose
    replies are dropped) and return the scripts' replies, in order.

    No SCRIPT EXISTS first: a call Redis answers NOSCRIPT (it forgot the script, so nothing
    of that call ran) is loaded and run again, alone; any other error is raised, or with
    ``raise_on_error=False`` left in its place among the replies (the other calls ran: a
    caller of independent calls may still act on theirs).
    """
    pipe = client.pipeline(transaction=False)
    for script, call in calls:
        script.queue(pipe, call.keys, call.args)
    if then is not None:
        then(pipe)
    replies = list(await pipe.execute(raise_on_error=False))[: len(calls)]
    missing = [i for i, reply in enumerate(replies) if isinstance(reply, NoScriptError)]
    if missing:
        forgotten = {calls[i][0].sha: calls[i][0] for i in missing}
        await ensure_loaded(
            client, *forgotten.values(), keys=[calls[i][1].keys[0] for i in missing if calls[i][1].keys]
        )
        again = client.pipeline(transaction=False)
        for i in missing:
            calls[i][0].queue(again, calls[i][1].keys, calls[i][1].args)
        for i, reply in zip(missing, await again.execute(raise_on_error=False), strict=True):
            replies[i] = reply
    if raise_on_error:
        for reply in replies:
            if isinstance(reply, Exception):
                raise reply
    return replies
