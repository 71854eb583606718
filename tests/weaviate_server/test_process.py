"""The managed Weaviate: a relative data directory, and which busy port names which setting."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from rag.errors import RetrievalError
from rag.index import WeaviateIndex
from tests.conftest import index_config
from tests.rag.builders import chunk
from tests.weaviate_server.test_cli import weaviate_binary
from weaviate_server.process import LOOPBACK, ManagedWeaviate, free_ports


@pytest.fixture
def relative_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ManagedWeaviate]:
    monkeypatch.chdir(tmp_path)  # SIFT_DATA_DIR=.sift, as the default is
    server = ManagedWeaviate(weaviate_binary(), Path(".sift") / "weaviate", free_ports())
    yield server
    server.stop()


@pytest.mark.weaviate
def test_a_relative_data_dir_keeps_the_data_where_it_says(relative_server: ManagedWeaviate,
                                                          tmp_path: Path) -> None:
    relative_server.start(90)
    assert relative_server.status().running
    data = tmp_path / ".sift" / "weaviate"
    assert not (data / ".sift").exists()
    written = {p.name for p in data.iterdir()}
    assert {"weaviate.pid", "api-key", "weaviate.log"} <= written
    assert written - {"weaviate.pid", "api-key", "weaviate.log"}, "the server wrote no data here"


@pytest.fixture
def busy_port() -> Iterator[int]:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        sock.listen()
        yield int(sock.getsockname()[1])


@pytest.mark.weaviate
@pytest.mark.parametrize(("field", "setting"), [
    ("gossip", "SIFT_WEAVIATE__GOSSIP_PORT"), ("raft_rpc", "SIFT_WEAVIATE__RAFT_RPC_PORT"),
    ("profiling", "SIFT_WEAVIATE__PROFILING_PORT"), ("http", "SIFT_WEAVIATE__HTTP_PORT")])
def test_a_port_conflict_names_the_setting_of_the_busy_port(
        tmp_path: Path, busy_port: int, field: str, setting: str) -> None:
    ports = replace(free_ports(), **{field: busy_port})
    server = ManagedWeaviate(weaviate_binary(), tmp_path / "weaviate", ports)
    with pytest.raises(RetrievalError) as caught:
        server.start(5)
    message = caught.value.user_message
    assert f"{setting} ({busy_port})" in message
    others = {"SIFT_WEAVIATE__HTTP_PORT", "SIFT_WEAVIATE__GRPC_PORT",
              "SIFT_WEAVIATE__GOSSIP_PORT", "SIFT_WEAVIATE__PROFILING_PORT"} - {setting}
    assert not [name for name in others if name in message]
    assert "\n" not in message


@pytest.mark.weaviate
def test_the_memory_limit_reaches_the_servers_go_runtime(tmp_path: Path) -> None:
    server = ManagedWeaviate(weaviate_binary(), tmp_path / "weaviate", free_ports(),
                             memory_limit="1536MiB")
    server.start(60)
    try:
        pid = server.status().pid
        assert pid is not None
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        assert b"GOMEMLIMIT=1536MiB" in environ
        assert server.status().running
    finally:
        server.stop()
    unlimited = ManagedWeaviate(weaviate_binary(), tmp_path / "other", free_ports())
    unlimited.start(60)
    try:
        pid = unlimited.status().pid
        assert pid is not None
        assert not [v for v in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
                    if v.startswith(b"GOMEMLIMIT=")]
    finally:
        unlimited.stop()


def resident_through_mappings(server: ManagedWeaviate, folder: str) -> int:
    """Bytes of the files under `folder` (in the server's data directory) that the server's
    process has resident through its mappings of them (/proc/PID/smaps)."""
    pid = server.status().pid
    assert pid is not None
    resident, mapped_file = 0, ""
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        fields = line.split()
        if "-" in fields[0] and len(fields) >= 6:  # a mapping's header: the file is last
            mapped_file = fields[-1]
        elif fields[0] == "Rss:" and f"/{folder}/" in mapped_file:
            resident += int(fields[1]) * 1024
    return resident


@pytest.mark.weaviate
@pytest.mark.parametrize("disk_access", ["mmap", "pread"])
async def test_disk_access_decides_whether_read_objects_count_in_the_servers_memory(
        tmp_path: Path, disk_access: str) -> None:
    """By default Weaviate reads its segment files through mappings, so the pages a search
    touched count in its resident memory; with pread it reads them into buffers and they stay
    in the kernel's cache, outside it. Either way it finds, after a restart, what it stored."""
    server = ManagedWeaviate(weaviate_binary(), tmp_path / "weaviate", free_ports(),
                             disk_access=disk_access)
    count = 3000
    stored = [chunk(f"doc-{n}", f"Runbook {n}", f"rotate the staging key number {n}. " * 80)
              for n in range(count)]
    vectors = [[1.0, n / count, 0.5, 0.1] for n in range(count)]
    server.start(60)
    try:
        index = WeaviateIndex(index_config(server, "DiskAccess"), "test-embedder", 4)
        await index.connect()
        for start in range(0, count, 500):
            await index.upsert(stored[start:start + 500], vectors[start:start + 500])
        await index.close()
        # The first start after the writes turns them into segment files and reads those
        # through a mapping whatever the setting; the setting governs the reads after.
        for _ in range(2):
            server.stop()
            server.start(60)
        environ = Path(f"/proc/{server.status().pid}/environ").read_bytes().split(b"\0")
        assert f"PERSISTENCE_LSM_ACCESS_STRATEGY={disk_access}".encode() in environ
        index = WeaviateIndex(index_config(server, "DiskAccess"), "test-embedder", 4)
        await index.connect()
        for n in range(0, count, 7):  # every object read by some search
            hits = await index.search(f"staging key number {n}", vectors[n], limit=20)
            assert hits
        await index.close()
        objects = sum(path.stat().st_size for path in server.data_dir.rglob("lsm/objects/*.db"))
        assert objects > 10_000_000  # the stored text, flushed
        resident = resident_through_mappings(server, "lsm/objects")
        if disk_access == "mmap":
            assert resident > objects / 2, (resident, objects)
        else:
            # What stays is the segments' keys and headers, not the objects read.
            assert resident < objects / 5, (resident, objects)
    finally:
        server.stop()


def test_free_ports_are_distinct_bindable_and_outside_the_ephemeral_range() -> None:
    """Outgoing connections take their local ports from the ephemeral range: a port handed
    out there could be taken by any client socket before its server binds it."""
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    ports = list(free_ports().all())
    assert len(set(ports)) == 7 and all(1024 <= p < low for p in ports)
    for port in ports:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind((LOOPBACK, port))  # nothing listens there



def test_processes_choosing_ports_at_once_never_get_the_same_one(tmp_path: Path) -> None:
    """Parallel test workers each pick ports for servers that bind them seconds later: a port
    one process was handed, unbound still, must not be handed to another. Four processes of
    250 ports each would share some (about 40 expected among 12,000) without the claims."""
    code = ("import json; from weaviate_server.process import free_port; "
            "print(json.dumps([free_port() for _ in range(250)]))")
    runs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                             cwd=Path(__file__).resolve().parents[2]) for _ in range(4)]
    handed = [port for run in runs for port in json.loads(run.communicate(timeout=60)[0])]
    assert len(handed) == 1000
    assert len(set(handed)) == 1000
