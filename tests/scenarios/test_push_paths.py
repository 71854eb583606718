"""Confluence Data Center and the generic signed webhook through `sift serve`: a signed change is
searchable within 5 s, a forged or replayed one is 401 and changes nothing, a flood is coalesced."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest
from pydantic import SecretStr

from bot.settings import SourceSettings
from rag.embed import LocalEmbedder
from tests.fakes.confluence_server import TOKEN, FakeConfluence, FakePage
from tests.fakes.platform_server import FakePlatform, article
from tests.scenarios.push_support import Probe, probe, until
from tests.scenarios.slack_stack import Serve
from tests.scenarios.stack import ServedSift
from tests.sync.test_push_receivers import SECRET, confluence_event, hub, sift_signed

pytestmark = pytest.mark.weaviate


async def refused(sift: ServedSift, path: str, body: bytes, *headers: dict[str, str]) -> None:
    for h in headers:
        status, text = await sift.post(path, data=body, headers=h)
        assert status == 401, (h, text)
        assert SECRET not in text


# --- Confluence Data Center: X-Hub-Signature over the body, the body's own timestamp ----------

@pytest.fixture
async def wiki() -> AsyncIterator[FakeConfluence]:
    server = FakeConfluence()
    server.put(FakePage("4001", "ENG", "Deploy freeze", "<p>Deploys freeze on Fridays.</p>"))
    server.put(FakePage("4002", "ENG", "On call", "<p>The pager rotates weekly.</p>"))
    await server.start()
    yield server
    await server.stop()


def wiki_source(server: FakeConfluence) -> SourceSettings:
    return SourceSettings.model_validate({
        "name": "wiki", "kind": "confluence", "url": server.url, "token": SecretStr(TOKEN),
        "confluence": {"deployment": "datacenter", "spaces": ["ENG"],
                       "webhook_secret": SECRET}})


# Each notification a platform sends is signed anew, over a time of its own: a repeat of
# the very same bytes is a replay, which Sift refuses (409).
_SENT = itertools.count(1)


async def page_event(sift: ServedSift, event: str, page: int,
                     when: datetime | None = None, secret: str = SECRET) -> int:
    body = confluence_event(event, page, when or datetime.now(UTC)
                            + timedelta(milliseconds=next(_SENT)))
    status, _ = await sift.post("/sync/hooks/wiki", data=body, headers=hub(body, secret))
    return status


def reads(server: FakeConfluence, page: str) -> int:
    return sum(r.startswith(f"/rest/api/content/{page}") for r in server.requests)


async def test_confluence_data_center_pushes(make_served: Serve, wiki: FakeConfluence,
                                             embedder: LocalEmbedder) -> None:
    sift = (await make_served(sources=[wiki_source(wiki)])).sift
    async with probe(sift, embedder, "wiki") as index:
        body = confluence_event("page_updated", 4001, datetime.now(UTC))
        old = confluence_event("page_updated", 4001, datetime.now(UTC) - timedelta(hours=1))
        await refused(sift, "/sync/hooks/wiki", body, {}, hub(body, "a guess"),
                      hub(confluence_event("page_updated", 4002, datetime.now(UTC))))
        await refused(sift, "/sync/hooks/wiki", old, hub(old))
        await index.settled_empty()
        assert reads(wiki, "4001") == reads(wiki, "4002") == 0

        assert await page_event(sift, "page_created", 4001) == 202
        await until(lambda: index.finds("4001", "Deploys freeze on Fridays."))
        wiki.pages["4001"].body = "<p>Deploys freeze on Thursdays from noon.</p>"
        assert await page_event(sift, "page_updated", 4001) == 202
        await until(lambda: index.finds("4001", "Deploys freeze on Thursdays from noon."))
        wiki.pages["4001"].status = "trashed"
        assert await page_event(sift, "page_trashed", 4001) == 202
        await until(lambda: index.gone("4001"))

        flood = await asyncio.gather(*(page_event(sift, "page_updated", 4002)
                                       for _ in range(30)))
        assert set(flood) == {202}
        await until(lambda: index.finds("4002", "The pager rotates weekly."))
        await asyncio.sleep(0.5)  # any queued repeat would have started by now
        assert 1 <= reads(wiki, "4002") <= 2


# --- The generic signed webhook of an http source (`item_path` set) ---------------------------

REST_TOKEN = "rest-token"


@pytest.fixture
async def platform() -> AsyncIterator[FakePlatform]:
    server = FakePlatform(token=REST_TOKEN)
    server.put(article("a-1", "Refunds", "Refunds take three days."))
    await server.start()
    yield server
    await server.stop()


def rest_source(server: FakePlatform) -> SourceSettings:
    return SourceSettings.model_validate({
        "name": "rest", "kind": "http", "url": server.url, "token": SecretStr(REST_TOKEN),
        "http": {"item_path": "/articles/{id}", "webhook_secret": SECRET}})


async def notify(sift: ServedSift, payload: dict[str, object]) -> int:
    body = json.dumps(payload).encode()
    status, _ = await sift.post("/sync/hooks/rest", data=body, headers=sift_signed(
        body, datetime.now(UTC) + timedelta(seconds=next(_SENT))))
    return status


async def test_generic_signed_webhook_pushes(make_served: Serve, platform: FakePlatform,
                                             embedder: LocalEmbedder) -> None:
    sift = (await make_served(sources=[rest_source(platform)])).sift
    async with probe(sift, embedder, "rest") as index:
        await _forgeries_change_nothing(sift, platform, index)
        assert await notify(sift, {"ids": ["a-1"]}) == 202
        await until(lambda: index.finds("a-1", "Refunds take three days."))
        platform.put(article("a-1", "Refunds", "Refunds take one working day.",
                             updated_at="2026-02-01T00:00:00Z"))
        assert await notify(sift, {"ids": ["a-1"]}) == 202
        await until(lambda: index.finds("a-1", "Refunds take one working day."))
        del platform.articles["a-1"]
        assert await notify(sift, {"ids": ["a-1"]}) == 202
        await until(lambda: index.gone("a-1"))

        platform.put(article("b-2", "Invoices", "Invoices are sent monthly."))
        assert await notify(sift, {}) == 202  # "something changed": an incremental run
        await until(lambda: index.finds("b-2", "Invoices are sent monthly."))
        flood = await asyncio.gather(*(notify(sift, {"ids": ["b-2"]}) for _ in range(30)))
        assert set(flood) == {202}
        await asyncio.sleep(1.0)  # the coalesced sync, and any queued repeat, have run
        assert 1 <= len(platform.paths("/articles/b-2")) <= 2


async def _forgeries_change_nothing(sift: ServedSift, platform: FakePlatform,
                                    index: Probe) -> None:
    body = b'{"ids": ["a-1"]}'
    now = datetime.now(UTC)
    good = sift_signed(body, now)
    await refused(sift, "/sync/hooks/rest", body, {},
                  sift_signed(body, now, secret="a guess"),
                  {**good, "X-Sift-Timestamp": str(int(now.timestamp()) + 1)},
                  sift_signed(body, now - timedelta(minutes=10)))
    await refused(sift, "/sync/hooks/rest", b'{"ids": ["a-1", "b-9"]}', good)
    await index.settled_empty()
    assert platform.paths("/articles") == []
