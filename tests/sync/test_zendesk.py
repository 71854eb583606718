"""The Zendesk Help Center connector through the sync job, against a fake help center."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest

from rag.errors import SyncError
from sync.connectors.base import DocumentFailure, DocumentGone, SourceConfig, SourceDocument
from sync.connectors.zendesk import ZendeskConnector, ZendeskSettings
from sync.job import JobConfig, SyncJob
from tests.fakes.memory_index import MemoryIndex
from tests.fakes.memory_sync_state import MemorySyncState
from tests.fakes.platform_server import rate_limited
from tests.fakes.zendesk_server import EMAIL, TOKEN, FakeArticle, FakeZendesk
from tests.sync.conftest import HashEmbedder, paragraph
from tests.sync.connector_contract import ConnectorContract, Rig, Seen, Trouble

SOURCE = "desk"
AGENTS = 3600001  # a user segment ("Agents and admins")


def help_center(server: FakeZendesk) -> None:
    server.categories = {10: "Billing", 20: "Accounts"}
    server.sections = {110: ("Refunds", 10), 210: ("Sign-in", 20)}
    server.put(FakeArticle(1, 110, "Refund a card payment",
                           f"<h2>Steps</h2><p>{paragraph('refund', 3)}</p>",
                           labels=["refunds", "cards"]))
    server.put(FakeArticle(2, 210, "Reset two-factor", f"<p>{paragraph('twofactor', 3)}</p>",
                           user_segment_id=AGENTS, locale="de"))
    server.put(FakeArticle(3, 210, "Unfinished", "<p>Not ready.</p>", draft=True))
    for i in range(4, 7):
        server.put(FakeArticle(i, 110, f"Invoice {i}", f"<p>{paragraph(f'invoice{i}', 2)}</p>"))


@pytest.fixture
async def zendesk() -> AsyncIterator[FakeZendesk]:
    server = FakeZendesk(page_size=2)  # several export pages out of a few articles
    help_center(server)
    await server.start()
    yield server
    await server.stop()


def connector(server: FakeZendesk, **overrides: Any) -> ZendeskConnector:
    token = overrides.pop("token", TOKEN)
    options = {"email": EMAIL, "backoff_s": 0.01, "max_wait_s": 2.0, **overrides}
    return ZendeskConnector(SourceConfig(SOURCE, url=server.url, token=token),
                            ZendeskSettings(**options))


def job(server: FakeZendesk, index: MemoryIndex, state: MemorySyncState,
        **overrides: Any) -> SyncJob:
    config = JobConfig(known_groups=frozenset({"public", f"zendesk:segment:{AGENTS}"}))
    return SyncJob(SOURCE, connector(server, **overrides), index, HashEmbedder(), state, config)


async def documents(server: FakeZendesk) -> dict[str, SourceDocument]:
    found = [d async for d in connector(server).documents(None)]
    return {d.doc_id: d for d in found if isinstance(d, SourceDocument)}


async def test_articles_map_to_documents(zendesk: FakeZendesk) -> None:
    docs = await documents(zendesk)
    assert set(docs) == {"1", "2", "4", "5", "6"}  # the draft is not a document
    refund = docs["1"]
    assert refund.title == "Refund a card payment" and "## Steps" in refund.body
    assert refund.tags == ("Billing", "Refunds", "refunds", "cards")
    assert refund.url == f"{zendesk.url}/hc/en-us/articles/1-Refund-a-card-payment"
    assert (refund.access, refund.language, refund.subtype) == (("public",), "en-us", "Refunds")
    assert refund.updated_at is not None and refund.updated_at.year == 2026
    assert docs["2"].access == (f"zendesk:segment:{AGENTS}",) and docs["2"].language == "de"
    assert docs["2"].tags == ("Accounts", "Sign-in")


async def test_sync_indexes_updates_and_deletes(zendesk: FakeZendesk) -> None:
    index, state = MemoryIndex(), MemorySyncState()
    first = await job(zendesk, index, state).run(full=True)
    assert (first.counts.added, first.counts.failed, first.errors) == (5, 0, ())
    assert set(await index.list_documents(SOURCE)) == {"1", "2", "4", "5", "6"}
    again = await job(zendesk, index, state).run()
    assert again.counts.added == again.counts.updated == 0  # a second run writes nothing
    zendesk.change(1, body="<p>Refunds now take one day.</p>")
    zendesk.change(4, draft=True)  # unpublished back to draft: it leaves the index
    zendesk.put(FakeArticle(7, 110, "Chargebacks", "<p>Chargebacks are disputed.</p>"))
    zendesk.change(7)
    changed = await job(zendesk, index, state).run()
    assert (changed.counts.added, changed.counts.updated, changed.counts.deleted) == (1, 1, 1)
    assert "one day" in " ".join(c.text for c, _ in index.chunks.values())
    zendesk.delete(5)  # deleted: the listing no longer has it; a full pass prunes it
    pruned = await job(zendesk, index, state).run(full=True)
    assert pruned.counts.deleted == 1
    assert set(await index.list_documents(SOURCE)) == {"1", "2", "6", "7"}


async def test_a_segment_not_declared_in_groups_is_reported(zendesk: FakeZendesk) -> None:
    zendesk.change(6, user_segment_id=999)
    summary = await job(zendesk, MemoryIndex(), MemorySyncState()).run(full=True)
    assert any("zendesk:segment:999" in w and "used by 6" in w for w in summary.warnings)


async def test_an_unreadable_article_is_reported_and_the_rest_syncs(
        zendesk: FakeZendesk, caplog: pytest.LogCaptureFixture) -> None:
    zendesk.change(5, body=None)
    index = MemoryIndex()
    summary = await job(zendesk, index, MemorySyncState()).run(full=True)
    assert summary.counts.added == 4 and summary.counts.failed == 1
    assert summary.errors == ("article 5 (Invoice 5): the article has no HTML body",)
    assert "sync desk: article 5 (Invoice 5): the article has no HTML body; skipped" in caplog.text
    assert "5" not in await index.list_documents(SOURCE)


async def test_expired_credentials_name_the_source_and_write_nothing(
        zendesk: FakeZendesk, caplog: pytest.LogCaptureFixture) -> None:
    index, state = MemoryIndex(), MemorySyncState()
    with pytest.raises(SyncError) as caught:
        await job(zendesk, index, state, token="expired").run(full=True)
    message = caught.value.user_message
    assert "Source 'desk' (Zendesk) answered HTTP 401" in message
    assert "`token` and `zendesk.email`" in message
    assert await index.list_documents(SOURCE) == {} and state.docs == {}
    assert "expired" not in caplog.text and TOKEN not in caplog.text


async def test_a_rate_limited_export_waits_and_carries_on(zendesk: FakeZendesk) -> None:
    zendesk.faults.append(rate_limited("0", "/api/v2/help_center/incremental"))
    summary = await job(zendesk, MemoryIndex(), MemorySyncState()).run(full=True)
    assert summary.counts.added == 5


async def test_fetch_reads_named_articles(zendesk: FakeZendesk,
                                          caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    zendesk.broken.add(6)
    zendesk.faults.clear()
    found = [d async for d in connector(zendesk, max_retries=0).fetch(["1", "3", "6", "99"])]
    assert isinstance(found[0], SourceDocument) and found[0].tags[:2] == ("Billing", "Refunds")
    assert found[1] == DocumentGone("3")  # a draft
    assert isinstance(found[2], DocumentFailure) and found[2].doc_id == "6"
    assert "article 6: Source 'desk' (Zendesk)" in found[2].error
    assert found[3] == DocumentGone("99")  # deleted or archived: 404


async def test_fetch_with_expired_credentials_stops(zendesk: FakeZendesk) -> None:
    with pytest.raises(SyncError, match="HTTP 401"):
        [d async for d in connector(zendesk, token="expired").fetch(["1"])]


class TestZendeskContract(ConnectorContract):
    kind = "zendesk"

    @pytest.fixture
    def rig(self, zendesk: FakeZendesk) -> Rig:
        def remove() -> str:
            zendesk.delete(5)
            return "5"

        return Rig(
            SourceConfig(SOURCE, url=zendesk.url, token=TOKEN),
            {"email": EMAIL, "backoff_s": 0.01, "max_wait_s": 2.0},
            frozenset({"1", "2", "4", "5", "6"}),
            {"1": Seen("Refund a card payment",
                       f"{zendesk.url}/hc/en-us/articles/1-Refund-a-card-payment",
                       "Step 0 of the refund procedure")},
            public="1", restricted=("2", frozenset({f"zendesk:segment:{AGENTS}"})),
            remove=remove,
            bad_credential=Trouble(("Source 'desk' (Zendesk) answered HTTP 401",
                                  "`token` and `zendesk.email`"), source={"token": "zd-expired"},
                                 secret="zd-expired"),
            unreadable=Trouble(("article 5 (Invoice 5)",),
                             apply=lambda: zendesk.change(5, body=None)),
            known_groups=frozenset({"public", f"zendesk:segment:{AGENTS}"}))
