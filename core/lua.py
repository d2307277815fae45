"""The Lua loader: every script is registered once and called by SHA.

Each app keeps its scripts in ``<app>/lua/<name>.lua`` and names them in its own
``scripts.py`` (``SUBMIT_SCORE = lua.load(__file__, "submit_score")``). Each
source opens with its KEYS / ARGV / returns contract, and all keys one call
touches share one hash tag (core/keys.py), so a script stays on one Redis
Cluster slot.

``Script.__call__`` runs EVALSHA and, when Redis has forgotten the script (a
restart, SCRIPT FLUSH), loads it and runs it again: NOSCRIPT means nothing ran,
so that retry is safe even for writes. Pipelines call :func:`ensure_loaded`
first so a batch never meets NOSCRIPT half-way.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from redis.asyncio import Redis
from redis.asyncio.client import Pipeline
from redis.asyncio.cluster import RedisCluster
from redis.exceptions import NoScriptError

KeyOrArg = str | int | float


@dataclass(frozen=True)
class Script:
    name: str
    source: str = field(repr=False)
    sha: str = field(repr=False)

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


# Every script loaded so far, in load order (for warming a fresh Redis, and the benchmarks).
REGISTERED: list[Script] = []


def load(module_file: str, name: str) -> Script:
    """The script ``lua/<name>.lua`` beside the module ``module_file`` (pass ``__file__``)."""
    source = (Path(module_file).resolve().parent / "lua" / f"{name}.lua").read_text()
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
