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


async def test_start_up_lines_and_a_source_no_longer_configured(
        tmp_path: Path, weaviate_server: ManagedWeaviate, fake_anthropic: FakeAnthropic,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Served twice over one index: first with the folder "old", then with "runbooks" only."""
    collection = unique_collection("Lines")
    folders = {}
    for name in ("old", "runbooks"):
        folders[name] = tmp_path / name
        write(folders[name], "a.md", article(f"{name} guide", paragraph(name, 4)))

    def served_with(name: str) -> ServedSift:
        return ServedSift(App(settings_for(
            tmp_path, weaviate_server, collection, fake_anthropic, sync=SyncSettings(),
            sources=[SourceSettings(name=name, kind="folder", path=folders[name])])))

    first = served_with("old")
    await first.start()
    try:
        await _finished_runs(first)
    finally:
        await first.stop()
    out = capsys.readouterr().out
    base = first.base_url
    assert "  Slack: off (SIFT_SLACK_BOT_TOKEN is not set)" in out
    assert f"  Web chat: open {base}/ in a browser" in out
    assert ("  Admin console: off (neither SIFT_ADMIN__PASSWORD nor SIFT_ADMIN__OIDC__ISSUER "
            "is set)") in out
    assert "  Source old: never synced; a first sync starts now" in out

    second = served_with("runbooks")
    await second.start()
    index = second.app.index()
    await index.connect(ensure=False)
    try:
        await _finished_runs(second, "runbooks")
        for _ in range(100):
            counts = await index.count_by_source()
            if "old" not in counts and "runbooks" in counts:
                break
            await asyncio.sleep(0.1)
        assert set(counts) == {"runbooks"}, counts
    finally:
        await second.stop()
        await index.drop()
        await index.close()
    assert "  Source runbooks: never synced; a first sync starts now" in capsys.readouterr().out


async def _finished_runs(served: ServedSift, source: str | None = None,
                         timeout_s: float = 120) -> list[SyncRun]:
    """The sync runs once they have finished (of `source` only: the database may hold an
    earlier server's runs, finished long ago)."""
    for _ in range(int(timeout_s * 10)):
        runs = [r for r in await asyncio.to_thread(served.rows, SyncRun)
                if source is None or r.source == source]
        if runs and all(r.status != "running" for r in runs):
            return runs
        await asyncio.sleep(0.1)
    raise AssertionError("the start-up sync did not finish")


async def _healthz(served: ServedSift) -> tuple[int, str]:
    async with aiohttp.ClientSession() as session, session.get(
            served.base_url + "/healthz") as response:
        return response.status, await response.text()
