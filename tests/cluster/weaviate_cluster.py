"""A real Weaviate cluster on loopback: several nodes of the same binary, each on its own ports."""

from __future__ import annotations

import os
import secrets
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bot.weaviate.process import LOOPBACK, ManagedWeaviate, Ports, _port_in_use

# Below the kernel's ephemeral range (32768+): a node's data and Raft RPC ports are implied
# (see _node_ports), so a client socket that grabs one after the check would break the node.
PORT_RANGE = range(22100, 23000)


def _free(count: int, taken: set[int]) -> int:
    """The first port of `count` consecutive free ones in PORT_RANGE not handed out before."""
    for port in PORT_RANGE:
        block = range(port, port + count)
        if not taken.intersection(block) and not any(_port_in_use(p) for p in block):
            taken.update(block)
            return port
    raise RuntimeError(f"no {count} free consecutive ports in {PORT_RANGE}")


def _node_ports(taken: set[int]) -> Ports:
    """On one host (CLUSTER_IN_LOCALHOST) Weaviate finds a peer's data port at its gossip
    port + 1 and its Raft RPC port at its Raft port + 1."""
    http, grpc, profiling = _free(1, taken), _free(1, taken), _free(1, taken)
    gossip, raft = _free(2, taken), _free(2, taken)
    return Ports(http, grpc, gossip, gossip + 1, raft, raft + 1, profiling)


class WeaviateCluster:
    """`size` nodes sharing one API key; node 0 is the one clients talk to."""

    def __init__(self, binary: Path, root: Path, size: int = 3) -> None:
        taken: set[int] = set()
        ports = [_node_ports(taken) for _ in range(size)]
        names = [f"node{i}" for i in range(size)]
        raft_join = ",".join(f"{n}:{p.raft}" for n, p in zip(names, ports, strict=True))
        key = secrets.token_urlsafe(24)
        self.nodes: list[ManagedWeaviate] = []
        for i, (name, node_ports) in enumerate(zip(names, ports, strict=True)):
            env = {"CLUSTER_HOSTNAME": name, "CLUSTER_IN_LOCALHOST": "true",
                   "RAFT_JOIN": raft_join, "RAFT_BOOTSTRAP_EXPECT": str(size)}
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

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()

    def holds(self, node: str, collection: str, uuids: set[str]) -> set[str]:
        """Which of `uuids` the named node's own replica holds (REST reads with node_name go
        to that node only, whatever the consistency level)."""
        found = set()
        for uuid in uuids:
            request = urllib.request.Request(
                f"{self.nodes[0].url}/v1/objects/{collection}/{uuid}?node_name={node}",
                headers={"Authorization": f"Bearer {self.api_key}"})
            try:
                with urllib.request.urlopen(request, timeout=10):
                    found.add(uuid)
            except urllib.error.HTTPError as exc:
                if exc.code != 404:
                    raise
        return found

    def wait(self, condition: object, timeout_s: float, what: str) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if callable(condition) and condition():
                return
            time.sleep(0.5)
        raise AssertionError(f"{what} within {timeout_s:.0f}s")
