"""Sync metrics: every recorded run counted by source, kind and outcome, its documents by
change, and the last success time (bot/metrics through sync's SyncObserver port)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from bot.metrics.observe import SyncMeter
from bot.metrics.registry import Metrics
from rag.errors import SyncError
from sync.connectors.folder import FolderConnector
from sync.runner import SyncRunner, SyncSource
from tests.fakes.memory_index import MemoryIndex
from tests.fakes.memory_sync_state import MemorySyncState
from tests.sync.conftest import HashEmbedder, article, paragraph, write


def scraped(metrics: Metrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for f in text_string_to_metric_families(metrics.exposition().decode())
            for s in f.samples}


async def test_runs_documents_and_the_last_success_are_counted(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    write(kb, "a.md", article("Alpha", paragraph("alpha", 3)))
    write(kb, "b.md", article("Beta", paragraph("beta", 3)))
    metrics = Metrics()
    runner = SyncRunner([SyncSource("kb", FolderConnector(kb))], MemoryIndex(), HashEmbedder(),
                        MemorySyncState(), tmp_path / "locks", observer=SyncMeter(metrics))
    before = time.time()
    await runner.run("kb", full=True)
    (kb / "b.md").unlink()
    write(kb, "a.md", article("Alpha", paragraph("alpha changed", 4)))
    await runner.run("kb", full=True)
    found = scraped(metrics)
    assert found[("sift_sync_runs_total", (("kind", "full"), ("outcome", "ok"),
                                          ("source", "kb")))] == 2
    assert found[("sift_sync_documents_total", (("change", "added"), ("source", "kb")))] == 2
    assert found[("sift_sync_documents_total", (("change", "updated"), ("source", "kb")))] == 1
    assert found[("sift_sync_documents_total", (("change", "deleted"), ("source", "kb")))] == 1
    last = found[("sift_sync_last_success_timestamp_seconds", (("source", "kb"),))]
    assert before <= last <= time.time()


async def test_a_failed_run_is_counted_and_moves_no_success_time(tmp_path: Path) -> None:
    metrics = Metrics()
    missing = FolderConnector(tmp_path / "not-there")
    runner = SyncRunner([SyncSource("gone", missing)], MemoryIndex(), HashEmbedder(),
                        MemorySyncState(), tmp_path / "locks", observer=SyncMeter(metrics))
    with pytest.raises(SyncError):
        await runner.run("gone")
    found = scraped(metrics)
    assert found[("sift_sync_runs_total", (("kind", "incremental"), ("outcome", "failed"),
                                          ("source", "gone")))] == 1
    assert not any(name == "sift_sync_last_success_timestamp_seconds" for name, _ in found)
