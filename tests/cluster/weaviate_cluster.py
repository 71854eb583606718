"""A real Weaviate cluster on loopback: several nodes of the same binary, each on its own ports."""

from __future__ import annotations

import json
import os
import random
import secrets
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from weaviate_server.process import LOOPBACK, ManagedWeaviate, Ports, _claim, _port_in_use

# Below the kernel's ephemeral range (32768+): a node's data and Raft RPC ports are implied
# (see _node_ports), so a client socket that grabs one after the check would break the node.
# The search starts at a random port: test runs on one machine at once pick different ones.
PORT_RANGE = range(20000, 32000)

# Async replication compares the nodes every 30 s and leaves changes younger than its
# propagation delay alone; a test waits for one comparison, so compare as often as Weaviate
# allows (5 s).
CATCH_UP = {"ASYNC_REPLICATION_FREQUENCY": "5s",
            "ASYNC_REPLICATION_ALIVE_NODES_CHECKING_FREQUENCY": "1s",
            "ASYNC_REPLICATION_PROPAGATION_DELAY": "1s"}


def _free(count: int, taken: set[int], start: int) -> int:
    """The first port from `start` on (wrapping round PORT_RANGE) of `count` consecutive free
    ones not handed out before, claimed among this machine's processes as free_port() does:
    a test worker that picked one of these for its own server between this check and the
    node's bind made the node exit ("address already in use"; once in a full run). A block
    claimed only in part keeps that part until the claim lapses."""
    size = len(PORT_RANGE) - count
    for n in range(size):
        port = PORT_RANGE.start + (start - PORT_RANGE.start + n) % size
        block = range(port, port + count)
        if not taken.intersection(block) and not any(_port_in_use(p) for p in block) \
                and all(_claim(p) for p in block):
            taken.update(block)
            return port
    raise RuntimeError(f"no {count} free consecutive ports in {PORT_RANGE}")


def _node_ports(taken: set[int], start: int) -> Ports:
    """On one host (CLUSTER_IN_LOCALHOST) Weaviate finds a peer's data port at its gossip
    port + 1 and its Raft RPC port at its Raft port + 1."""
    http, grpc, profiling = (_free(1, taken, start) for _ in range(3))
    gossip, raft = (_free(2, taken, start) for _ in range(2))
    return Ports(http, grpc, gossip, gossip + 1, raft, raft + 1, profiling)


class NotYet(Exception):
    """A node answered a read with a server error (it is starting, or loading its shards)."""


class WeaviateCluster:
    """`size` nodes sharing one API key; node 0 is the one clients talk to."""

    def __init__(self, binary: Path, root: Path, size: int = 3) -> None:
        taken: set[int] = set()
        start = random.choice(PORT_RANGE)
        ports = [_node_ports(taken, start) for _ in range(size)]
        names = [f"node{i}" for i in range(size)]
        raft_join = ",".join(f"{n}:{p.raft}" for n, p in zip(names, ports, strict=True))
        key = secrets.token_urlsafe(24)
        self.nodes: list[ManagedWeaviate] = []
        for i, (name, node_ports) in enumerate(zip(names, ports, strict=True)):
            env = {"CLUSTER_HOSTNAME": name, "CLUSTER_IN_LOCALHOST": "true",
                   "RAFT_JOIN": raft_join, "RAFT_BOOTSTRAP_EXPECT": str(size), **CATCH_UP}
            if i:  # gossip: everyone finds the others through node 0
                env["CLUSTER_JOIN"] = f"{LOOPBACK}:{ports[0].gossip}"
            node = ManagedWeaviate(binary, root / name, node_ports, cluster_env=env)
            node.data_dir.mkdir(parents=True, mode=0o700)
            fd = os.open(node.key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as handle:
                handle.write(key)  # one key for the whole cluster
            self.nodes.append(node)

    @property
    def api_key(self) -> str:
        return self.nodes[0].api_key

    def start(self, timeout_s: float = 120) -> None:
        """Start every node at once: none is ready before Raft has a quorum to elect a leader."""
        with ThreadPoolExecutor(len(self.nodes)) as pool:
            list(pool.map(lambda node: node.start(timeout_s), self.nodes))

    def stop(self, timeout_s: float = 3.0) -> None:
        """Stop every node at once. Nodes that all leave together wait on each other for a
        Raft quorum until their 20 s default runs out; these data are thrown away, so after
        `timeout_s` a node is killed."""
        with ThreadPoolExecutor(len(self.nodes)) as pool:
            list(pool.map(lambda node: node.stop(timeout_s), self.nodes))

    def _get(self, via: int, path: str) -> urllib.request.Request:
        return urllib.request.Request(f"{self.nodes[via].url}{path}",
                                      headers={"Authorization": f"Bearer {self.api_key}"})

    def leader(self) -> int:
        """The node that leads Raft (the cluster's schema and shard metadata)."""
        with urllib.request.urlopen(self._get(0, "/v1/cluster/statistics"), timeout=10) as r:
            statistics = json.load(r)["statistics"]
        return next(int(s["leaderId"].removeprefix("node")) for s in statistics if s["leaderId"])

    def holds(self, node: int, collection: str, uuids: set[str], via: int = 0) -> set[str]:
        """Which of `uuids` node `node`'s own replica holds, asked through node `via` (REST
        reads with node_name go to that node only, whatever the consistency level)."""
        found = set()
        for uuid in uuids:
            request = self._get(via, f"/v1/objects/{collection}/{uuid}?node_name=node{node}")
            try:
                with urllib.request.urlopen(request, timeout=10):
                    found.add(uuid)
            except urllib.error.HTTPError as exc:
                if exc.code != 404:
                    raise NotYet(f"node{node}: {exc.code} {exc.read()[:300]!r}") from exc
        return found

    def wait(self, condition: object, timeout_s: float, what: str) -> None:
        """Poll `condition` until true; a node still starting up (5xx) counts as not yet."""
        deadline, last = time.monotonic() + timeout_s, ""
        while time.monotonic() < deadline:
            try:
                if callable(condition) and condition():
                    return
            except NotYet as exc:
                last = f" (last: {exc})"
            time.sleep(0.5)
        raise AssertionError(f"{what} within {timeout_s:.0f}s{last}")
