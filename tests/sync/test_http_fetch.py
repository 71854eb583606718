"""The http connector reads pushed ids one by one through `item_path`."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from pydantic import SecretStr

from rag.errors import SyncError
from sync.connectors.base import (
    DocumentFailure,
    DocumentGone,
    SourceConfig,
    SourceDocument,
    fetcher,
)
from sync.connectors.http import HttpSettings, build
from tests.fakes.platform_server import FakePlatform, Fault, article

TOKEN = "rest-token"


@pytest.fixture
async def platform() -> AsyncIterator[FakePlatform]:
    server = FakePlatform(token=TOKEN)
    server.put(article("a-1", "Refunds", "Refunds take three days."))
    server.put(article("a/2", "Slashes", "An id with a slash."))
    await server.start()
    yield server
    await server.stop()


def source(server: FakePlatform, token: str = TOKEN, **options: object) -> object:
    settings = HttpSettings.model_validate({"item_path": "/articles/{id}", "max_retries": 0,
                                            "webhook_secret": SecretStr("s"), **options})
    return build(SourceConfig("rest", url=server.url, token=token), settings)


async def test_fetch_reads_found_gone_and_failing_items(platform: FakePlatform) -> None:
    platform.faults.append(Fault(500, path="/articles/a-3"))
    targeted = fetcher(source(platform))
    assert targeted is not None
    found = [d async for d in targeted.fetch(["a-1", "a/2", "gone", "a-3"])]
    assert isinstance(found[0], SourceDocument) and found[0].body == "Refunds take three days."
    # Found through the one-segment route /articles/{id}: the slash went out encoded.
    assert isinstance(found[1], SourceDocument) and found[1].doc_id == "a/2"
    assert found[2] == DocumentGone("gone")
    assert isinstance(found[3], DocumentFailure) and found[3].doc_id == "a-3"
    assert "HTTP 500" in found[3].error


async def test_without_item_path_there_is_no_fetch(platform: FakePlatform) -> None:
    assert fetcher(source(platform, item_path="")) is None


async def test_fetch_with_a_refused_token_stops(platform: FakePlatform) -> None:
    targeted = fetcher(source(platform, token="expired"))
    assert targeted is not None
    with pytest.raises(SyncError, match="HTTP 401"):
        [d async for d in targeted.fetch(["a-1"])]
