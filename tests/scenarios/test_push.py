"""Zendesk pushes through `sift serve`: a signed change reaches the index within seconds; a
forged, replayed or misdirected one is 401 and changes nothing; a flood is one sync."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest
from pydantic import SecretStr

from bot.settings import SourceSettings
from rag.embed import LocalEmbedder
from tests.fakes.zendesk_server import (
    EMAIL,
    TOKEN,
    WEBHOOK_SECRET,
    FakeArticle,
    FakeZendesk,
    article_event,
    signed,
)
from tests.scenarios.push_support import Probe, probe, until
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


async def push(sift: ServedSift, kind: str, article: int, path: str = HOOK) -> int:
    body = article_event(kind, article)
    status, _ = await sift.post(path, data=body, headers=signed(body))
    return status


async def test_pushed_changes_reach_the_index_within_seconds(
        make_served: Serve, zendesk: FakeZendesk, embedder: LocalEmbedder,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    served = await make_served(sources=[desk("desk", zendesk, WEBHOOK_SECRET),
                                        desk("other", zendesk, "the other desk's secret")])
    sift = served.sift
    async with probe(sift, embedder, "desk") as index, probe(sift, embedder, "other") as other:
        await _attacks_change_nothing(sift, zendesk, index, other)
        assert await push(sift, "published", 1) == 202
        await until(lambda: index.finds("1", "Refunds take three days."))
        zendesk.change(1, body="<p>Refunds now take one working day.</p>")
        assert await push(sift, "published", 1) == 202
        await until(lambda: index.finds("1", "Refunds now take one working day."))
        assert not await index.finds("1", "Refunds take three days.")
        zendesk.delete(1)
        assert await push(sift, "unpublished", 1) == 202
        await until(lambda: index.gone("1"))
        await _a_flood_is_coalesced(sift, zendesk, index)
    assert "push to desk refused" in caplog.text  # the operator learns why, with a reference
    assert "pushed sync of desk" in caplog.text  # and what each pushed sync did
    assert WEBHOOK_SECRET not in caplog.text and TOKEN not in caplog.text


async def _attacks_change_nothing(sift: ServedSift, zendesk: FakeZendesk, index: Probe,
                                  other: Probe) -> None:
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
    await index.settled_empty()  # time enough for a sync, had one been queued
    assert zendesk.fetches(1) == 0
    assert await other.ids() == set()


async def _a_flood_is_coalesced(sift: ServedSift, zendesk: FakeZendesk, index: Probe) -> None:
    statuses = await asyncio.gather(*(push(sift, "published", 2) for _ in range(40)))
    assert set(statuses) == {202}
    await until(lambda: index.finds("2", "Chargebacks are disputed."))
    await asyncio.sleep(0.5)  # any queued repeat would have started by now
    assert 1 <= zendesk.fetches(2) <= 2  # 40 notifications: one sync, maybe one more
