"""`sift serve` syncs every source in the background at start-up; serving does not wait."""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiohttp
import pytest

from bot.app import App
from bot.settings import SourceSettings, SyncSettings
from storage.models import SyncRun
from tests.conftest import unique_collection
from tests.fakes.anthropic_server import FakeAnthropic
from tests.scenarios.stack import ServedSift, settings_for
from tests.sync.conftest import article, paragraph, write
from weaviate_server.process import ManagedWeaviate

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
        await _drop_index(served)


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


async def test_a_running_server_does_not_bring_back_a_source_a_newer_sift_toml_removed(
        tmp_path: Path, weaviate_server: ManagedWeaviate, fake_anthropic: FakeAnthropic,
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    import logging
    import os

    from bot.cli import main

    collection = unique_collection("Follow")
    folders = {name: tmp_path / name for name in ("runbooks", "handbook")}
    for name, folder in folders.items():
        write(folder, "a.md", article(f"{name} guide", paragraph(name, 4)))
    config = tmp_path / "sift.toml"

    def configure(name: str) -> None:  # one source, synced every 3 s by the running server
        config.write_text(f'[[sources]]\nname = "{name}"\nkind = "folder"\n'
                          f'path = "{folders[name]}"\ninterval_minutes = 0.05\n')
        stamp = config.stat().st_mtime + len(name)
        os.utime(config, (stamp, stamp))

    configure("runbooks")
    settings = settings_for(tmp_path, weaviate_server, collection, fake_anthropic,
                            sync=SyncSettings(), sources=[SourceSettings(
                                name="runbooks", kind="folder", path=folders["runbooks"],
                                interval_minutes=0.05)])
    served = ServedSift(App(settings.model_copy(update={"config": config})))
    await served.start()
    try:
        await _finished_runs(served, "runbooks")
        # Meanwhile sift.toml names another source and `sift sync` removes this one.
        configure("handbook")
        for key, value in {"SIFT_CONFIG": str(config), "SIFT_DATA_DIR": str(tmp_path / "cli"),
                           "SIFT_DATABASE_URL": settings.database_url or "",
                           "SIFT_WEAVIATE_URL": weaviate_server.url,
                           "SIFT_WEAVIATE_API_KEY": weaviate_server.api_key,
                           "SIFT_WEAVIATE__GRPC_URL": f"127.0.0.1:{weaviate_server.ports.grpc}",
                           "SIFT_WEAVIATE__COLLECTION": collection}.items():
            monkeypatch.setenv(key, value)
        assert await asyncio.to_thread(main, ["sync"]) == 0
        removed_at = max(r.id for r in await asyncio.to_thread(served.rows, SyncRun))
        with caplog.at_level(logging.WARNING):
            await asyncio.sleep(8)  # more than two of the server's ticks
        later = [r for r in await asyncio.to_thread(served.rows, SyncRun)
                 if r.id > removed_at and r.source == "runbooks"]
        assert later == []  # the server did not sync it back
        assert "source 'runbooks' is no longer in sift.toml" in caplog.text
        index = served.app.index()
        await index.connect(ensure=False)
        try:
            assert await index.count("runbooks") == 0 and await index.count("handbook") >= 1
        finally:
            await index.close()
    finally:
        await served.stop()
        await _drop_index(served)


async def _drop_index(served: ServedSift) -> None:
    index = served.app.index()
    await index.connect(ensure=False)
    await index.drop()
    await index.close()
