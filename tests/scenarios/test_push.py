"""Zendesk pushes through `sift serve`: a signed change reaches the index within seconds; a
forged, replayed or misdirected one is 401 and changes nothing; a flood is one sync."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta

import pytest
from pydantic import SecretStr

from bot.settings import SourceSettings
from rag.index import WeaviateIndex
from tests.fakes.zendesk_server import (
    EMAIL,
    TOKEN,
    WEBHOOK_SECRET,
    FakeArticle,
    FakeZendesk,
    article_event,
    signed,
)
from tests.scenarios.slack_stack import Serve
from tests.scenarios.stack import ServedSift

pytestmark = pytest.mark.weaviate
HOOK = "/sync/hooks/desk"


@pytest.fixture
async def zendesk() -> AsyncIterator[FakeZendesk]:
    server = FakeZendesk()
    server.categories, server.sections = {10: "Billing"}, {110: ("Refunds", 10)}
    server.put(FakeArticle(1, 110, "Refund a card payment", "<p>Refunds take three days.</p>"))
    server.put(FakeArticle(2, 110, "Chargebacks", "<p>Chargebacks are disputed.</p>"))
    await server.start()
    yield server
    await server.stop()


def desk(name: str, server: FakeZendesk, secret: str) -> SourceSettings:
    return SourceSettings.model_validate({
        "name": name, "kind": "zendesk", "url": server.url, "token": SecretStr(TOKEN),
        "zendesk": {"email": EMAIL, "webhook_secret": secret}})


async def until(check: Callable[[], Awaitable[bool]], timeout_s: float) -> float:
    """Seconds until `check` holds; fails past `timeout_s`."""
    started = time.monotonic()
    while not await check():
        if time.monotonic() - started > timeout_s:
            raise AssertionError(f"not reached within {timeout_s}s")
        await asyncio.sleep(0.05)
    return time.monotonic() - started


async def push(sift: ServedSift, kind: str, article: int, path: str = HOOK) -> int:
    body = article_event(kind, article)
    status, _ = await sift.post(path, data=body, headers=signed(body))
    return status


async def test_pushed_changes_reach_the_index_within_seconds(make_served: Serve,
                                                              zendesk: FakeZendesk) -> None:
    served = await make_served(sources=[desk("desk", zendesk, WEBHOOK_SECRET),
                                        desk("other", zendesk, "the other desk's secret")])
    sift = served.sift
    index = sift.app.index()
    await index.connect(ensure=False)
    try:
        await _attacks_change_nothing(sift, zendesk, index)
        assert await push(sift, "published", 1) == 202
        await until(lambda: _has(index, "1"), 5)
        before = (await index.list_documents("desk"))["1"]
        zendesk.change(1, body="<p>Refunds now take one day.</p>")
        assert await push(sift, "published", 1) == 202
        await until(lambda: _hashes(index, "1", before), 5)
        zendesk.delete(1)
        assert await push(sift, "unpublished", 1) == 202
        await until(lambda: _gone(index, "1"), 5)
        await _a_flood_is_coalesced(sift, zendesk, index)
    finally:
        await index.close()


async def _attacks_change_nothing(sift: ServedSift, zendesk: FakeZendesk,
                                  index: WeaviateIndex) -> None:
    body = article_event("published", 1)
    stale = signed(body, when=datetime.now(UTC) - timedelta(minutes=10))
    forged = {**signed(body), "X-Zendesk-Webhook-Signature": "bm90IGEgc2lnbmF0dXJl"}
    for path, headers in ((HOOK, {"Content-Type": "application/json"}), (HOOK, forged),
                          (HOOK, stale), ("/sync/hooks/other", signed(body))):
        status, text = await sift.post(path, data=body, headers=headers)
        assert status == 401, (path, text)
        assert WEBHOOK_SECRET not in text
    status, _ = await sift.post("/sync/hooks/nowhere", data=body, headers=signed(body))
    assert status == 404
    await asyncio.sleep(1.0)  # time enough for a sync, had one been queued
    assert zendesk.fetches(1) == 0
    assert await index.list_documents("desk") == {} == await index.list_documents("other")


async def _a_flood_is_coalesced(sift: ServedSift, zendesk: FakeZendesk,
                                index: WeaviateIndex) -> None:
    statuses = await asyncio.gather(*(push(sift, "published", 2) for _ in range(40)))
    assert set(statuses) == {202}
    await until(lambda: _has(index, "2"), 5)
    await asyncio.sleep(0.5)  # any queued repeat would have started by now
    assert 1 <= zendesk.fetches(2) <= 2  # 40 notifications: one sync, maybe one more


async def _has(index: WeaviateIndex, doc_id: str) -> bool:
    return doc_id in await index.list_documents("desk")


async def _gone(index: WeaviateIndex, doc_id: str) -> bool:
    return doc_id not in await index.list_documents("desk")


async def _hashes(index: WeaviateIndex, doc_id: str, before: set[str]) -> bool:
    now = (await index.list_documents("desk")).get(doc_id)
    return bool(now) and now != before
