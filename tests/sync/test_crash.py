"""kill -9 of a real `sift sync` process mid-run, then a rerun: the index equals a clean run's."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import weaviate
from weaviate.exceptions import WeaviateQueryError

from rag.index import WeaviateIndex
from tests.conftest import index_config, unique_collection
from tests.sync.conftest import article, paragraph, write
from tests.sync.harness import connect, read_collection
from weaviate_server.process import ManagedWeaviate

pytestmark = [pytest.mark.weaviate, pytest.mark.slow]
SIFT = Path(__file__).resolve().parents[2] / ".venv" / "bin" / "sift"


class Site:
    """One Sift installation: its own collection, database, data dir and sift.toml."""

    def __init__(self, root: Path, server: ManagedWeaviate, kb: Path) -> None:
        self.server = server
        self.collection = unique_collection("Crash")
        root.mkdir(parents=True)
        config = root / "sift.toml"
        config.write_text(f'[[sources]]\nname = "kb"\nkind = "folder"\npath = "{kb}"\n')
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("SIFT_")} | {
            "SIFT_CONFIG": str(config), "SIFT_DATA_DIR": str(root / "data"),
            "SIFT_DATABASE_URL": f"sqlite:///{root / 'sift.db'}",
            "SIFT_WEAVIATE_URL": server.url, "SIFT_WEAVIATE_API_KEY": server.api_key,
            "SIFT_WEAVIATE__GRPC_URL": f"127.0.0.1:{server.ports.grpc}",
            "SIFT_WEAVIATE__COLLECTION": self.collection,
            # Small chunks and batches: many writes, so that the kill lands between two.
            "SIFT_SYNC__TARGET_TOKENS": "80", "SIFT_SYNC__OVERLAP_TOKENS": "10",
            "SIFT_SYNC__MIN_TOKENS": "15", "SIFT_SYNC__EMBED_BATCH": "8",
            "SIFT_LOG_LEVEL": "WARNING"}
        self._client: weaviate.WeaviateClient | None = None

    def start(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen([str(SIFT), "sync", "--json", *args], env=self.env, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def sync(self, *args: str) -> str:
        done = subprocess.run([str(SIFT), "sync", "--json", *args], env=self.env, text=True,
                              capture_output=True, timeout=300, check=False)
        assert done.returncode == 0, done.stderr
        return done.stdout

    @property
    def client(self) -> weaviate.WeaviateClient:
        """One client for all the polling: a new one per poll (TLS contexts, a gRPC channel,
        the server's meta) cost more CPU than the sync being watched."""
        if self._client is None:
            self._client = connect(index_config(self.server, self.collection))
        return self._client

    def count(self) -> int:
        if not self.client.collections.exists(self.collection):
            return 0
        collection = self.client.collections.use(self.collection)
        try:
            return int(collection.aggregate.over_all(total_count=True).total_count or 0)
        except WeaviateQueryError as exc:
            # Just after the sync creates the collection, its schema exists a moment
            # before its index does: nothing is written yet, so poll again.
            if "non-existing index" in str(exc):
                return 0
            raise

    def snapshot(self) -> dict[str, tuple[str, str, str, str]]:
        index = WeaviateIndex(index_config(self.server, self.collection), "", 0)
        return read_collection(index, self.client)

    def kill_when(self, process: subprocess.Popen[str], at_least: int) -> int:
        """SIGKILL the run once `at_least` chunks are in the index; return how many were."""
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            if process.poll() is not None:
                pytest.fail(f"the sync finished before the kill: {process.stderr.read()}"
                            if process.stderr else "the sync finished before the kill")
            written = self.count()
            if written >= at_least:
                process.send_signal(signal.SIGKILL)
                process.wait()
                return written
            time.sleep(0.02)
        process.kill()
        pytest.fail("the sync wrote nothing within 240s")

    def kill_when_changed(self, process: subprocess.Popen[str]) -> None:
        """SIGKILL the run as soon as the index content differs from before it started."""
        baseline = self.snapshot()
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            if process.poll() is not None:
                pytest.fail("the sync finished before the kill")
            if self.snapshot() != baseline:
                process.send_signal(signal.SIGKILL)
                process.wait()
                return
            time.sleep(0.05)
        process.kill()
        pytest.fail("the update wrote nothing within 240s")

    def drop(self) -> None:
        """Delete the collection and close the client."""
        self.client.collections.delete(self.collection)
        self.client.close()
        self._client = None


def corpus(kb: Path, version: int) -> None:
    """Thirty documents; version 2 rewrites some (longer and shorter), deletes and adds some."""
    for i in range(30):
        path = kb / f"team{i % 4}" / f"doc{i}.md"
        if version == 2 and i % 10 == 3:
            path.unlink(missing_ok=True)
            continue
        sentences = 16 if version == 1 or i % 3 else (4 if i % 2 else 30)
        write(kb, path.relative_to(kb).as_posix(), article(
            f"Document {i}", f"## Part one\n\n{paragraph(f'topic{i}v{version}', sentences)}"
            f"\n\n## Part two\n\n{paragraph(f'other{i}', 6)}"), age_s=0 if version == 2 else 3600)
    if version == 2:
        for i in range(30, 33):
            write(kb, f"new/doc{i}.md", article(f"New {i}", paragraph(f"fresh{i}", 12)), age_s=0)


Sites = Callable[[str, Path], Site]


@pytest.fixture
def sites(tmp_path: Path, weaviate_server: ManagedWeaviate) -> Iterator[Sites]:
    made: list[Site] = []

    def site(name: str, kb: Path) -> Site:
        made.append(Site(tmp_path / name, weaviate_server, kb))
        return made[-1]

    yield site
    for s in made:
        s.drop()


def test_kill_9_during_the_first_sync_then_rerun_converges(tmp_path: Path, sites: Sites) -> None:
    kb = tmp_path / "kb"
    corpus(kb, 1)
    crashed = sites("crashed", kb)
    written = crashed.kill_when(crashed.start(), at_least=16)
    assert written > 0
    crashed.sync()  # the kernel dropped the lock with the process: no "already running"
    clean = sites("clean", kb)
    clean.sync()
    assert crashed.snapshot() == clean.snapshot()
    assert '"unchanged": 30' in crashed.sync("--full")  # and it is quiet afterwards


def test_kill_9_during_an_update_then_rerun_converges(tmp_path: Path, sites: Sites) -> None:
    kb = tmp_path / "kb"
    corpus(kb, 1)
    crashed = sites("crashed", kb)
    crashed.sync()
    corpus(kb, 2)
    crashed.kill_when_changed(crashed.start("--full"))
    crashed.sync("--full")
    clean = sites("clean", kb)
    clean.sync()
    assert crashed.snapshot() == clean.snapshot()
