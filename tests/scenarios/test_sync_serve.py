"""`sift serve` syncs every source in the background at start-up; serving does not wait."""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiohttp
import pytest

from bot.app import App
from bot.settings import SourceSettings, SyncSettings
from bot.weaviate.process import ManagedWeaviate
from storage.models import SyncRun
from tests.conftest import unique_collection
from tests.fakes.anthropic_server import FakeAnthropic
from tests.scenarios.stack import ServedSift, settings_for
from tests.sync.conftest import article, paragraph, write

pytestmark = pytest.mark.weaviate


async def test_start_up_sync_runs_in_the_background(tmp_path: Path,
                                                    weaviate_server: ManagedWeaviate,
                                                    fake_anthropic: FakeAnthropic) -> None:
    kb = tmp_path / "kb"
    for i in range(4):
        write(kb, f"doc{i}.md", article(f"Runbook {i}", paragraph(f"runbook{i}", 6)))
    settings = settings_for(tmp_path, weaviate_server, unique_collection("Serve"),
                            fake_anthropic, sync=SyncSettings(),
                            sources=[SourceSettings(name="runbooks", kind="folder", path=kb)])
    served = ServedSift(App(settings))
    await served.start()
    try:
        # Serving already: the sync is still loading the model and embedding.
        status, body = await _healthz(served)
        assert status == 200, body
        early = await asyncio.to_thread(served.rows, SyncRun)
        assert all(r.status == "running" for r in early)
        [run] = await _finished_runs(served)
        assert (run.source, run.full, run.status, run.added) == ("runbooks", True, "ok", 4)
    finally:
        await served.stop()
        index = served.app.index()
        await index.connect(ensure=False)
        await index.drop()
        await index.close()


async def _finished_runs(served: ServedSift, timeout_s: float = 120) -> list[SyncRun]:
    for _ in range(int(timeout_s * 10)):
        runs = await asyncio.to_thread(served.rows, SyncRun)
        if runs and all(r.status != "running" for r in runs):
            return runs
        await asyncio.sleep(0.1)
    raise AssertionError("the start-up sync did not finish")


async def _healthz(served: ServedSift) -> tuple[int, str]:
    async with aiohttp.ClientSession() as session, session.get(
            served.base_url + "/healthz") as response:
        return response.status, await response.text()
