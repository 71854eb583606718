"""A real `sift sync` process stopped by SIGINT/SIGTERM (clean, `interrupted`) or kill -9 (the
next run marks it `abandoned`); either way the rerun converges."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest

from storage.db import Database
from storage.sync_state import SyncStateRepository
from tests.sync.conftest import article, paragraph, write
from tests.sync.test_crash import Site, Sites, sites  # noqa: F401

pytestmark = [pytest.mark.weaviate, pytest.mark.slow]


def runs(site: Site) -> list[str]:
    db = Database(site.env["SIFT_DATABASE_URL"])
    try:
        return [r.status for r in reversed(SyncStateRepository(db).runs("kb"))]
    finally:
        db.dispose()


def big_corpus(kb: Path) -> None:
    write(kb, "manual.md", article("Manual", paragraph("manual", 500)))
    for i in range(5):
        write(kb, f"doc{i}.md", article(f"Doc {i}", paragraph(f"topic{i}", 10)))


def signal_when_writing(site: Site, process: subprocess.Popen[str], sig: int) -> None:
    deadline = time.monotonic() + 240
    while site.count() < 16:
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            pytest.fail("the sync ended or wrote nothing before the signal")
        time.sleep(0.05)
    process.send_signal(sig)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_stops_sync_at_a_batch_boundary_marked_interrupted(
        tmp_path: Path, sites: Sites, sig: int) -> None:  # noqa: F811
    kb = tmp_path / "kb"
    big_corpus(kb)
    site = sites("stopped", kb)
    process = site.start()
    signal_when_writing(site, process, sig)
    try:
        _, stderr = process.communicate(timeout=120)  # a batch is seconds, not minutes
    except subprocess.TimeoutExpired:
        process.kill()
        pytest.fail("sift sync ignored the signal")
    assert process.returncode == 1
    assert "The sync was interrupted" in stderr and "Traceback" not in stderr
    assert runs(site) == ["interrupted"]
    site.sync()
    assert runs(site) == ["interrupted", "ok"]


def test_a_run_killed_with_9_is_marked_abandoned_by_the_next(
        tmp_path: Path, sites: Sites) -> None:  # noqa: F811
    kb = tmp_path / "kb"
    big_corpus(kb)
    site = sites("killed", kb)
    site.kill_when(site.start(), at_least=16)
    assert runs(site) == ["running"]
    site.sync()
    assert runs(site) == ["abandoned", "ok"]
