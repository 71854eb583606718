"""Confluence pages by id (what a webhook names), on Cloud and Data Center."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from pydantic import SecretStr

from sync.connectors.base import DocumentFailure, DocumentGone, SourceConfig, SourceDocument
from sync.connectors.confluence import ConfluenceSettings, push
from sync.push_queue import PushSyncs
from sync.runner import SyncRunner, SyncSource
from tests.fakes.confluence_server import FakeConfluence, FakePage
from tests.fakes.memory_index import MemoryIndex
from tests.fakes.memory_sync_state import MemorySyncState
from tests.sync.conftest import HashEmbedder
from tests.sync.test_confluence import confluence, connector  # noqa: F401 (the fixture)
from tests.sync.test_push_receivers import SECRET, confluence_event, hub, post

DEPLOYMENTS = pytest.mark.parametrize("deployment", ["cloud", "datacenter"])


@DEPLOYMENTS
async def test_fetch_reads_a_page_with_its_labels_and_restrictions(
        confluence: FakeConfluence, deployment: str) -> None:  # noqa: F811
    [pay, keys] = [d async for d in connector(confluence, deployment).fetch(["1002", "1001"])]
    assert isinstance(pay, SourceDocument) and isinstance(keys, SourceDocument)
    assert pay.access == ("confluence:group:hr", "confluence:user:557058:bo")
    assert keys.tags == ("security", "howto") and "vault rotate" in keys.body
    assert keys.url.endswith("1001") and keys.url.startswith(confluence.url)


@DEPLOYMENTS
async def test_fetch_says_gone_for_pages_sift_may_no_longer_show(
        confluence: FakeConfluence, deployment: str) -> None:  # noqa: F811
    confluence.put(FakePage("3001", "SECRET", "Elsewhere", "<p>Not a chosen space.</p>"))
    confluence.put(FakePage("3002", "ENG", "Binned", "<p>Trashed.</p>", status="trashed"))
    del confluence.pages["1003"]
    ids = ["3001", "3002", "1003", "9999", "not-a-number"]
    found = [d async for d in connector(confluence, deployment).fetch(ids)]
    assert found == [DocumentGone(i) for i in ids]


@DEPLOYMENTS
async def test_fetch_reports_a_page_whose_restrictions_cannot_be_read(
        confluence: FakeConfluence, deployment: str) -> None:  # noqa: F811
    confluence.locked.add("1001")
    [item] = [d async for d in connector(confluence, deployment).fetch(["1001"])]
    if deployment == "cloud":  # Data Center expands restrictions with the page itself
        assert isinstance(item, DocumentFailure) and "page 1001 (Rotating keys)" in item.error
    else:
        assert isinstance(item, SourceDocument)


async def test_a_data_center_webhook_removes_a_trashed_page(
        confluence: FakeConfluence, tmp_path: Path) -> None:  # noqa: F811
    source = connector(confluence, "datacenter")
    index = MemoryIndex()
    runner = SyncRunner([SyncSource("wiki", source)], index, HashEmbedder(), MemorySyncState(),
                        tmp_path / "locks")
    await runner.run("wiki", full=True)
    assert "1001" in await index.list_documents("wiki")
    confluence.pages["1001"].status = "trashed"
    receiver = push(SourceConfig("wiki"), ConfluenceSettings(webhook_secret=SecretStr(SECRET)))
    body = confluence_event("page_trashed", 1001, datetime.now(UTC))
    reply = receiver.receive(post(body, hub(body)))
    pushes = PushSyncs(runner, gather_s=0.01)
    pushes.submit("wiki", reply.doc_ids, reply.resync)
    await pushes.idle()
    assert "1001" not in await index.list_documents("wiki")
    assert "1002" in await index.list_documents("wiki")
