"""One sync per source: the file lock, in one process and across processes (even after kill -9)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rag.errors import SyncError
from sync.connectors.folder import FolderConnector
from sync.lock import SourceLock, SyncBusy
from sync.runner import SyncRunner, SyncSource
from tests.fakes.memory_index import MemoryIndex
from tests.fakes.memory_sync_state import MemorySyncState
from tests.sync.conftest import HashEmbedder, write

HOLD = """
import sys, time
from pathlib import Path
from sync.lock import SourceLock
lock = SourceLock(Path(sys.argv[1]), "sample")
lock.acquire()
print("locked", flush=True)
time.sleep(60)
"""


def test_second_lock_in_the_same_process_is_refused(tmp_path: Path) -> None:
    with SourceLock(tmp_path, "sample"):
        with pytest.raises(SyncBusy) as caught:
            SourceLock(tmp_path, "sample").acquire()
        assert "Another sync of 'sample' is running" in caught.value.user_message
        assert f"pid {os.getpid()}" in caught.value.user_message
        with SourceLock(tmp_path, "other"):  # other sources are independent
            pass
    with SourceLock(tmp_path, "sample"):  # released on exit
        pass


def test_lock_held_by_another_process_is_released_by_kill_9(tmp_path: Path) -> None:
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(tmp_path)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        with pytest.raises(SyncBusy, match=f"pid {holder.pid}"):
            SourceLock(tmp_path, "sample").acquire()
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    with SourceLock(tmp_path, "sample"):
        pass


class SlowEmbedder(HashEmbedder):
    def __init__(self, delay_s: float) -> None:
        super().__init__()
        self.delay_s = delay_s

    async def embed_documents(self, texts):  # type: ignore[no-untyped-def]
        await asyncio.sleep(self.delay_s)
        return await super().embed_documents(texts)


def runner(kb: Path, tmp_path: Path, embedder: HashEmbedder) -> SyncRunner:
    return SyncRunner([SyncSource("kb", FolderConnector(kb))], MemoryIndex(), embedder,
                      MemorySyncState(), tmp_path / "locks")


async def test_runs_of_one_source_queue_inside_a_process(kb: Path, tmp_path: Path) -> None:
    write(kb, "a.md", "# A\n\nText.")
    sync = runner(kb, tmp_path, SlowEmbedder(0.3))
    started = time.perf_counter()
    first, second = await asyncio.gather(sync.run("kb"), sync.run("kb", full=True))
    assert time.perf_counter() - started >= 0.3
    assert (first.counts.added, second.counts.unchanged) == (1, 1)


async def test_another_process_holding_the_lock_fails_fast(kb: Path, tmp_path: Path) -> None:
    write(kb, "a.md", "# A\n\nText.")
    sync = runner(kb, tmp_path, HashEmbedder())
    with SourceLock(tmp_path / "locks", "kb"):  # stands in for `sift serve` next door
        with pytest.raises(SyncBusy):
            await sync.run("kb")
        dry = await sync.run("kb", dry_run=True)  # reading is always allowed
        assert dry.counts.added == 1


async def test_unknown_source_names_the_configured_ones(kb: Path, tmp_path: Path) -> None:
    with pytest.raises(SyncError) as caught:
        await runner(kb, tmp_path, HashEmbedder()).run("nope")
    assert caught.value.user_message == "There is no source named 'nope'; configured sources: kb."
