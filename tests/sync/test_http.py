"""The http connector against a local fake knowledge platform over real HTTP."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import pytest

from rag.errors import SyncError
from sync.connectors.base import DocumentFailure, Fetched, SourceConfig, SourceDocument
from sync.connectors.common.retry_knobs import RetryKnobs
from sync.connectors.http import HttpConfig, HttpConnector
from sync.job import SyncJob
from tests.fakes.memory_index import MemoryIndex
from tests.fakes.memory_sync_state import MemorySyncState
from tests.fakes.platform_server import FakePlatform, Fault, article, malformed, rate_limited
from tests.sync.conftest import HashEmbedder
from tests.sync.connector_contract import ConnectorContract, Rig, Seen, Trouble

TOKEN = "s3cret-token"


async def serve(pagination: str) -> FakePlatform:
    server = FakePlatform(token=TOKEN, pagination=pagination)
    for i in range(7):
        server.put(article(f"a{i}", f"Article {i}", f"# Article {i}\n\nBody {i}.",
                           updated_at=f"2026-01-0{i + 1}T00:00:00Z"))
    await server.start()
    return server


@pytest.fixture(params=["cursor", "link", "page"])
async def platform(request: pytest.FixtureRequest) -> AsyncIterator[FakePlatform]:
    """Each pagination style the connector supports."""
    server = await serve(request.param)
    yield server
    await server.stop()


@pytest.fixture
async def wiki() -> AsyncIterator[FakePlatform]:
    server = await serve("cursor")
    yield server
    await server.stop()


def connector(server: FakePlatform, **overrides: Any) -> HttpConnector:
    retry = RetryKnobs(max_wait_s=5.0, backoff_s=0.01,
                       max_retries=overrides.pop("max_retries", 5))
    options: dict[str, Any] = {"base_url": server.url, "token": TOKEN, "page_size": 3}
    if server.pagination == "page":
        options["page_param"] = "page"
    return HttpConnector(HttpConfig(retry=retry, **{**options, **overrides}))


async def fetch(conn: HttpConnector, since: datetime | None = None) -> list[Fetched]:
    return [item async for item in conn.documents(since)]


async def test_pagination_collects_every_page(platform: FakePlatform) -> None:
    docs = await fetch(connector(platform))
    assert [d.doc_id for d in docs] == [f"a{i}" for i in range(7)]
    assert len(platform.paths("/articles")) == 3  # 3 + 3 + 1
    assert all(r.authorization == f"Bearer {TOKEN}" for r in platform.requests)
    assert all(r.query["limit"] == "3" for r in platform.requests)


@pytest.mark.parametrize("pagination", ["cursor", "link", "page"])
async def test_a_platform_capping_the_page_size_loses_nothing(pagination: str) -> None:
    server = FakePlatform(token=TOKEN, pagination=pagination, max_limit=2)  # we ask for 3
    for i in range(7):
        server.put(article(f"a{i}", f"Article {i}", f"Body {i}."))
    await server.start()
    try:
        conn = connector(server)
        assert [d.doc_id for d in await fetch(conn)] == [f"a{i}" for i in range(7)]
        assert await conn.list_ids() == {f"a{i}" for i in range(7)}
    finally:
        await server.stop()


async def test_a_platform_ignoring_the_page_number_is_an_error() -> None:
    server = await serve("page")
    try:
        with pytest.raises(SyncError, match="page 2 repeats page 1") as caught:
            await fetch(connector(server, page_param="ignored_page"))
        assert "same page for every ignored_page=" in caught.value.user_message
        assert len(server.requests) == 2
    finally:
        await server.stop()


async def test_incremental_pull_sends_updated_since(platform: FakePlatform) -> None:
    since = datetime(2026, 1, 5, tzinfo=UTC)
    docs = await fetch(connector(platform), since)
    assert [d.doc_id for d in docs] == ["a4", "a5", "a6"]
    assert platform.requests[0].query["updated_since"] == "2026-01-05T00:00:00Z"


async def test_ids_listing_for_pruning(platform: FakePlatform) -> None:
    del platform.articles["a3"]
    assert await connector(platform).list_ids() == {"a0", "a1", "a2", "a4", "a5", "a6"}


async def test_deleted_article_is_pruned_by_a_full_sync(platform: FakePlatform) -> None:
    index, state = MemoryIndex(), MemorySyncState()

    async def sync(full: bool) -> Any:
        job = SyncJob("wiki", connector(platform), index, HashEmbedder(), state)
        return (await job.run(full=full)).counts

    assert (await sync(True)).added == 7
    del platform.articles["a3"]
    platform.put(article("a1", "Article 1", "Changed.", updated_at="2099-01-01T00:00:00Z"))
    incremental = await sync(False)
    assert (incremental.updated, incremental.deleted) == (1, 0)
    full = await sync(True)
    assert (full.deleted, full.unchanged) == (1, 6)
    assert set(await index.list_documents("wiki")) == {"a0", "a1", "a2", "a4", "a5", "a6"}


@pytest.mark.parametrize("hint", ["1", "http-date"])
async def test_429_waits_for_retry_after(wiki: FakePlatform, hint: str) -> None:
    if hint == "http-date":
        hint = format_datetime(datetime.now(UTC) + timedelta(seconds=3), usegmt=True)
    wiki.faults.append(rate_limited(hint, "/articles"))
    docs = await fetch(connector(wiki))
    assert len(docs) == 7
    first, second = wiki.requests[0], wiki.requests[1]
    assert second.at - first.at >= 0.9  # the date form (+3 s) has one-second resolution


async def test_500_then_success(wiki: FakePlatform) -> None:
    wiki.faults.extend([Fault(500, path="/articles"), Fault(503, path="/articles")])
    assert len(await fetch(connector(wiki))) == 7
    assert len(wiki.paths("/articles")) == 5


async def test_persistent_failure_gives_up_with_the_url(wiki: FakePlatform) -> None:
    wiki.faults.extend(Fault(502, path="/articles") for _ in range(3))
    with pytest.raises(SyncError) as caught:
        await fetch(connector(wiki, max_retries=2))
    assert "HTTP 502" in caught.value.user_message and wiki.url in caught.value.user_message


async def test_malformed_json_is_a_clear_error(wiki: FakePlatform,
                                               caplog: pytest.LogCaptureFixture) -> None:
    wiki.faults.append(malformed("/articles"))
    caplog.set_level(logging.DEBUG)
    with pytest.raises(SyncError) as caught:
        await fetch(connector(wiki))
    assert "malformed JSON" in caught.value.user_message
    assert f"{wiki.url}/articles" in caught.value.user_message
    assert TOKEN not in str(caught.value) and TOKEN not in caplog.text


async def test_wrong_token_is_refused_without_retrying(wiki: FakePlatform) -> None:
    with pytest.raises(SyncError) as caught:
        await fetch(connector(wiki, token="wrong"))
    assert "HTTP 401" in caught.value.user_message and "token" in caught.value.user_message
    assert len(wiki.requests) == 1 and "wrong" not in caught.value.user_message


async def test_field_mapping_and_html_bodies(wiki: FakePlatform) -> None:
    wiki.articles.clear()
    wiki.put({"id": 42, "name": "Rate limits", "content": {"html": "<h2>Limits</h2>"
                  "<p>100 <em>per</em> minute.</p>"}, "people": [{"name": "Ana"}, {"name": "Bo"}],
                  "labels": "api, limits", "modified": "2026-02-01T12:00:00+01:00"})
    wiki.put({"title": "no id here", "body": "x", "updated_at": "2026-01-01T00:00:00Z",
                  "id": None})
    fields = {"title": "name", "body": "content.html", "authors": "people.name",
              "tags": "labels", "updated_at": "modified"}
    docs = await fetch(connector(wiki, fields=fields))
    doc = next(d for d in docs if isinstance(d, SourceDocument))
    assert (doc.doc_id, doc.title, doc.authors, doc.tags) == (
        "42", "Rate limits", ("Ana", "Bo"), ("api", "limits"))
    assert doc.body.strip() == "## Limits\n\n100 *per* minute."
    assert doc.updated_at == datetime(2026, 2, 1, 11, tzinfo=UTC)
    failure = next(d for d in docs if isinstance(d, DocumentFailure))
    assert failure.doc_id == "" and "without 'id'" in failure.error


async def test_next_link_to_another_site_is_refused() -> None:
    server = FakePlatform(pagination="cursor")
    server.faults.append(Fault(200, '{"items": [], "next": "https://evil.example/steal"}',
                               path="/articles"))
    async with server:
        with pytest.raises(SyncError, match="leaves"):
            await fetch(HttpConnector(HttpConfig(base_url=server.url, token=TOKEN)))


async def test_a_pagination_that_repeats_itself_stops_with_an_error() -> None:
    server = FakePlatform(pagination="cursor")
    page = '{"items": [{"id": "a", "body": "x"}], "next": "same"}'
    server.faults.extend([Fault(200, page, path="/articles"), Fault(200, page, path="/articles")])
    async with server:
        with pytest.raises(SyncError) as caught:
            await fetch(HttpConnector(HttpConfig(base_url=server.url)))
    assert "repeats itself" in caught.value.user_message


class TestHttpContract(ConnectorContract):
    kind = "http"

    @pytest.fixture
    def rig(self, wiki: FakePlatform) -> Rig:
        wiki.articles.clear()
        wiki.put(article("a0", "Expenses", "# Expenses\n\nClaims are filed within thirty days.",
                         url="https://kb.example/a0"))
        wiki.put(article("a1", "Pay bands", "Bands are reviewed every spring.",
                         url="https://kb.example/a1", access=["hr", "finance"]))
        wiki.put(article("a2", "Wifi", "The wifi password rotates monthly.",
                         url="https://kb.example/a2"))

        def remove() -> str:
            del wiki.articles["a2"]
            return "a2"

        return Rig(
            SourceConfig("kb", url=wiki.url, token=TOKEN), {"page_size": 2},
            frozenset({"a0", "a1", "a2"}),
            {"a0": Seen("Expenses", "https://kb.example/a0",
                        "Claims are filed within thirty days.")},
            public="a0", restricted=("a1", frozenset({"hr", "finance"})), remove=remove,
            bad_credential=Trouble(("Source 'kb' (http) answered HTTP 401", "`token`"),
                                   source={"token": "wrong-http-4"},
                                   secret="wrong-http-4"),
            unreadable=Trouble(("without 'id'",), apply=lambda: wiki.put(
                {"title": "no id here", "body": "x", "updated_at": "2026-01-01T00:00:00Z",
                 "id": None})))
