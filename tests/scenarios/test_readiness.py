"""`sift serve` answers HTTP before the model has loaded; /readyz tells when it can answer."""

from __future__ import annotations

import asyncio
import gc
import json
from collections.abc import Sequence
from pathlib import Path

import aiohttp
import pytest

from bot.app import App
from bot.server import YOUNG_COLLECTION_EVERY
from rag.embed import LocalEmbedder
from rag.types import Vector
from tests.fakes.anthropic_server import FakeAnthropic
from tests.scenarios.stack import ServedSift, settings_for
from weaviate_server.process import ManagedWeaviate

pytestmark = pytest.mark.weaviate


class SlowToLoad:
    """The real model, whose first use waits until the test lets it finish "loading"."""

    def __init__(self, inner: LocalEmbedder) -> None:
        self._inner = inner
        self.loaded = asyncio.Event()
        self.fail = False
        self.name, self.dimension = inner.name, inner.dimension

    async def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        return await self._inner.embed_documents(texts)

    async def embed_query(self, text: str) -> Vector:
        await self.loaded.wait()
        if self.fail:
            raise RuntimeError("model file damaged")
        return await self._inner.embed_query(text)


async def get(url: str) -> tuple[int, dict[str, object]]:
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        return response.status, json.loads(await response.text())


async def settled_readyz(base_url: str) -> tuple[int, dict[str, object]]:
    """/readyz once it says ready or that a load failed (at most ~5 s of polling)."""
    for _ in range(100):
        status, body = await get(base_url + "/readyz")
        if status == 200 or "failed" in json.dumps(body):
            break
        await asyncio.sleep(0.05)
    return status, body


@pytest.mark.parametrize("fails", [False, True])
async def test_readyz_names_what_still_loads(tmp_path: Path, weaviate_server: ManagedWeaviate,
                                             corpus: str, embedder: LocalEmbedder,
                                             fake_anthropic: FakeAnthropic,
                                             fails: bool) -> None:
    app = App(settings_for(tmp_path, weaviate_server, corpus, fake_anthropic, sources=[]))
    slow = SlowToLoad(embedder)
    slow.fail = fails
    app.__dict__["embedder"] = slow
    sift = ServedSift(app, freeze_heap=True)
    assert gc.get_freeze_count() == 0
    pace = gc.get_threshold()
    await sift.start()  # returns while the model is still "loading"
    try:
        status, body = await get(sift.base_url + "/readyz")
        assert status == 503 and body["status"] == "loading"
        assert body["loading"] == {"embedding model": f"loading {embedder.name}"}
        assert (await get(sift.base_url + "/healthz"))[0] == 200  # the process lives
        slow.loaded.set()
        status, body = await settled_readyz(sift.base_url)
        if fails:
            assert status == 503
            assert body["loading"] == {"embedding model": "failed to load: model file damaged"}
        else:
            assert status == 200 and body["status"] == "ok"
            # Start-up's objects are out of the collector's sight once ready (short pauses),
            # and young objects are collected less often (fewer survive to be scanned again).
            assert gc.get_freeze_count() > 0
            assert gc.get_threshold() == (YOUNG_COLLECTION_EVERY, *pace[1:])
            assert pace[0] < YOUNG_COLLECTION_EVERY
    finally:
        await sift.stop()
    assert gc.get_freeze_count() == 0  # handed back on stop (tests serve in one process)
    assert gc.get_threshold() == pace


async def test_serve_inside_a_host_process_leaves_its_heap_unfrozen(
        tmp_path: Path, weaviate_server: ManagedWeaviate, corpus: str, embedder: LocalEmbedder,
        fake_anthropic: FakeAnthropic) -> None:
    app = App(settings_for(tmp_path, weaviate_server, corpus, fake_anthropic, sources=[]))
    app.__dict__["embedder"] = embedder
    sift = ServedSift(app)  # freeze_heap=False, as a program embedding serve would pass
    await sift.start()
    try:
        assert (await settled_readyz(sift.base_url))[0] == 200
        assert gc.get_freeze_count() == 0  # ready, and the host's objects never left its sight
        assert gc.get_threshold()[0] != YOUNG_COLLECTION_EVERY  # nor its collector's pace
    finally:
        await sift.stop()
