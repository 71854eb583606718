"""A whole Sift for end-to-end scenarios: `sift serve` in this event loop, on real Weaviate and
SQLite, with Claude played by the fake Anthropic server. Platform tests add their own fakes."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from pydantic import SecretStr
from sqlalchemy import select

from bot.app import App
from bot.server import serve
from bot.settings import Settings, SourceSettings, SyncSettings, WeaviateSettings
from rag.embed import LocalEmbedder
from rag.index import WeaviateIndex
from tests.conftest import index_config, unique_collection
from tests.fakes.anthropic_server import FakeAnthropic
from tests.rag.corpus import CHUNKS
from weaviate_server.process import ManagedWeaviate, free_port


class ServedSift:
    """`sift serve` running as a task; `post` talks to its web server, `rows` reads its DB."""

    def __init__(self, app: App, *, freeze_heap: bool = False) -> None:
        self.app = app
        # A full collection of this test process's heap at every start costs more than the
        # rest of a start; the readiness test turns it on to check the freeze itself.
        self.freeze_heap = freeze_heap
        self.base_url = f"http://127.0.0.1:{app.settings.port}"
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        started = asyncio.Event()
        self._task = asyncio.create_task(serve(self.app, started=started, stop=self._stop,
                                               freeze_heap=self.freeze_heap))
        waiter = asyncio.create_task(started.wait())
        done, _ = await asyncio.wait([self._task, waiter], timeout=120,
                                     return_when=asyncio.FIRST_COMPLETED)
        waiter.cancel()
        if self._task in done:
            self._task.result()  # serve failed: raise its error here

    async def stop(self) -> None:
        self._stop.set()
        if self._task is not None:
            with contextlib.suppress(Exception):
                await self._task

    async def post(self, path: str, *, json: Any = None, data: bytes | None = None,
                   headers: dict[str, str] | None = None) -> tuple[int, str]:
        async with aiohttp.ClientSession() as session, session.post(
                self.base_url + path, json=json, data=data, headers=headers or {}) as response:
            return response.status, await response.text()

    def rows(self, model: Any) -> list[Any]:
        with self.app.database.read() as session:
            return list(session.scalars(select(model).order_by(model.id)))

    async def matching(self, model: Any, count: int, **where: Any) -> list[Any]:
        """Wait (30 s at most) until `count` rows of `model` match `where`; whatever matches
        then (answers are asynchronous)."""
        deadline = time.monotonic() + 30
        while True:
            rows = [r for r in await asyncio.to_thread(self.rows, model)
                    if all(getattr(r, k) == v for k, v in where.items())]
            if len(rows) >= count or time.monotonic() > deadline:
                return rows
            await asyncio.sleep(0.05)

    async def rows_when(self, model: Any, count: int, timeout_s: float = 20) -> list[Any]:
        """Wait until the database holds `count` rows of `model` (answers are asynchronous)."""
        for _ in range(int(timeout_s * 10)):
            rows = await asyncio.to_thread(self.rows, model)
            if len(rows) >= count:
                return rows
            await asyncio.sleep(0.1)
        raise AssertionError(f"expected {count} {model.__name__} rows")


@contextlib.asynccontextmanager
async def serving(settings: Settings, embedder: LocalEmbedder) -> AsyncIterator[ServedSift]:
    """`sift serve` with `settings` and the session's model (instead of loading another)."""
    app = App(settings)
    app.__dict__["embedder"] = embedder
    served = ServedSift(app)
    await served.start()
    try:
        yield served
    finally:
        await served.stop()


def settings_for(tmp_path: Path, weaviate: ManagedWeaviate, collection: str,
                 anthropic: FakeAnthropic, **overrides: Any) -> Settings:
    """Settings for a served Sift on fakes: nothing here reaches beyond loopback."""
    values: dict[str, Any] = dict(
        data_dir=tmp_path / "data", database_url=f"sqlite:///{tmp_path / 'sift.db'}",
        weaviate_url=weaviate.url, weaviate_api_key=SecretStr(weaviate.api_key),
        weaviate=WeaviateSettings(grpc_url=f"127.0.0.1:{weaviate.ports.grpc}",
                                  collection=collection),
        anthropic_api_key=SecretStr("sk-test-key"), anthropic_base_url=anthropic.url,
        host="127.0.0.1", port=free_port(),
        # The corpus is loaded directly; a start-up sync would add the sample knowledge base.
        sync=SyncSettings(sync_on_start=False))
    values.update(overrides)
    values["sources"] = [unscheduled(s) for s in values.get("sources") or []]
    return Settings(**values)


SCHEDULE_FIELDS = {"interval_minutes", "cron", "full_cron"}


def unscheduled(source: SourceSettings | dict[str, Any]) -> SourceSettings:
    """The source as given, without the default schedule unless the test set one: ticks are
    aligned to the wall clock (replicas share them), so the default 15-minute interval fires
    in any test that happens to cross a quarter hour, syncing behind the test's back."""
    made = SourceSettings.model_validate(source)
    if made.model_fields_set & SCHEDULE_FIELDS:
        return made
    return made.model_copy(update={"interval_minutes": None, "full_cron": ""})


@pytest.fixture
async def corpus(weaviate_server: ManagedWeaviate, embedder: LocalEmbedder
                 ) -> AsyncIterator[str]:
    """A fresh collection holding the test corpus (tests/rag/corpus.py); yields its name."""
    name = unique_collection("Scenario")
    index = WeaviateIndex(index_config(weaviate_server, name), embedder.name, embedder.dimension)
    await index.connect()
    await index.upsert(CHUNKS, await embedder.embed_documents(
        [f"{c.title}\n{c.text}" for c in CHUNKS]))
    yield name
    await index.drop()
    await index.close()
