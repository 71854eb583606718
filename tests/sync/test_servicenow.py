"""The ServiceNow Knowledge connector through the sync job, against a fake instance."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import unquote

import pytest

from rag.errors import SyncError
from sync.connectors.base import SourceConfig, SourceDocument
from sync.connectors.servicenow import ServiceNowConnector, ServiceNowSettings
from sync.job import JobConfig, SyncJob
from tests.fakes.memory_index import MemoryIndex
from tests.fakes.memory_sync_state import MemorySyncState
from tests.fakes.platform_server import rate_limited
from tests.fakes.servicenow_server import (
    CLIENT_ID,
    CLIENT_SECRET,
    PASSWORD,
    USER,
    FakeServiceNow,
)
from tests.sync.conftest import HashEmbedder, paragraph
from tests.sync.connector_contract import ConnectorContract, Rig, Seen, Trouble

SOURCE = "kb"
KNOWN = frozenset({"public", "servicenow:group:Service Desk", "servicenow:role:itil",
                   "servicenow:base:IT"})


def instance(snow: FakeServiceNow) -> None:
    it, hr = snow.base("IT"), snow.base("HR")
    snow.base("Legal")  # a base the source does not choose
    network = snow.category("Network", it)
    vpn = snow.category("VPN", it, parent=network)
    desk = snow.record("sys_user_group", "desk", name="Service Desk")
    itil = snow.record("sys_user_role", "itil", name="itil")
    agents = snow.criterion("Agents", group=desk, role=itil)
    london = snow.criterion("London office", location="25ab9c4d0a0a0bb300f7dabdc0ca7c1c")
    snow.record("kb_uc_can_read_mtom", "hr-staff", kb_knowledge_base=hr, user_criteria=agents)
    snow.article("KB0010001", "Connect to the VPN", f"<h2>Steps</h2><p>{paragraph('vpn', 3)}"
                 "</p>", it, vpn)
    snow.article("KB0010002", "Reset a desk phone", f"<p>{paragraph('phone', 3)}</p>", it,
                 network, can=agents)
    snow.article("KB0010003", "Office badges", f"<p>{paragraph('badge', 2)}</p>", it,
                 can=london)
    snow.article("KB0010004", "Parental leave", f"<p>{paragraph('leave', 2)}</p>", hr)
    snow.article("KB0010005", "Draft", "<p>Not yet.</p>", it, state="draft")
    snow.article("KB0010006", "Printers", f"<p>{paragraph('printer', 2)}</p>", it)


@pytest.fixture
async def snow() -> AsyncIterator[FakeServiceNow]:
    server = FakeServiceNow()
    instance(server)
    await server.start()
    yield server
    await server.stop()


def connector(server: FakeServiceNow, **overrides: Any) -> ServiceNowConnector:
    token = overrides.pop("token", PASSWORD)
    options = {"username": USER, "bases": ["IT", "HR"], "page_size": 2, "backoff_s": 0.01,
               "max_wait_s": 2.0, **overrides}
    return ServiceNowConnector(SourceConfig(SOURCE, url=server.url, token=token),
                               ServiceNowSettings(**options))


def job(server: FakeServiceNow, index: MemoryIndex, state: MemorySyncState,
        config: JobConfig | None = None, **overrides: Any) -> SyncJob:
    return SyncJob(SOURCE, connector(server, **overrides), index, HashEmbedder(), state,
                   config or JobConfig(known_groups=KNOWN))


async def documents(server: FakeServiceNow, **overrides: Any) -> dict[str, Any]:
    return {d.doc_id or "-": d async for d in connector(server, **overrides).documents(None)}


async def test_published_articles_map_to_documents(snow: FakeServiceNow) -> None:
    docs = await documents(snow)
    assert set(docs) == {"KB0010001", "KB0010002", "KB0010003", "KB0010004", "KB0010006"}
    vpn = docs["KB0010001"]
    assert vpn.title == "Connect to the VPN" and "## Steps" in vpn.body
    assert vpn.tags == ("Network", "VPN") and vpn.subtype == "IT"
    assert vpn.url == f"{snow.url}/kb_view.do?sysparm_article=KB0010001"
    assert vpn.authors == ("Fred Luddy",) and vpn.updated_at is not None
    assert vpn.access == ("servicenow:base:IT",)  # no criteria: whoever reads the base
    assert docs["KB0010002"].access == ("servicenow:group:Service Desk", "servicenow:role:itil")
    # A location cannot be mapped: nobody, and the sync says why.
    assert docs["KB0010003"].access == ()
    assert "its location condition cannot be mapped" in docs["KB0010003"].warnings[0]
    # The HR base's own criteria apply to its articles that name none.
    assert docs["KB0010004"].access == ("servicenow:group:Service Desk", "servicenow:role:itil")
    public = await documents(snow, public_bases=["IT"])
    assert public["KB0010001"].access == ("public",)


async def test_sync_indexes_updates_and_removes_retired_articles(snow: FakeServiceNow) -> None:
    index, state = MemoryIndex(), MemorySyncState()
    first = await job(snow, index, state).run(full=True)
    assert (first.counts.added, first.counts.failed) == (5, 0)
    again = await job(snow, index, state).run()
    assert again.counts.added == again.counts.updated == again.counts.deleted == 0
    snow.change("KB0010006", text="<p>Printers now need a badge.</p>")
    snow.change("KB0010004", workflow_state="retired")
    del snow.tables["kb_knowledge"][next(k for k, r in snow.tables["kb_knowledge"].items()
                                         if r["number"] == "KB0010003")]
    changed = await job(snow, index, state).run()
    assert (changed.counts.updated, changed.counts.deleted) == (1, 2)
    assert set(await index.list_documents(SOURCE)) == {"KB0010001", "KB0010002", "KB0010006"}
    assert any("updated_onRELATIVEGE@minute@ago@" in unquote(r) for r in snow.requests)


async def test_a_base_that_does_not_exist_is_reported_and_the_rest_syncs(
        snow: FakeServiceNow) -> None:
    summary = await job(snow, MemoryIndex(), MemorySyncState(),
                        bases=["IT", "Fasilities"]).run(full=True)
    assert summary.counts.added == 4
    assert summary.errors == ("knowledge base 'Fasilities': not found, or the account may not "
                              "read it; skipped",)


async def test_an_article_without_text_is_reported_by_number(snow: FakeServiceNow) -> None:
    snow.article("KB0010007", "Empty", None, next(iter(snow.tables["kb_knowledge_base"])))
    index = MemoryIndex()
    summary = await job(snow, index, MemorySyncState()).run(full=True)
    assert summary.counts.added == 5
    assert summary.errors == ("article KB0010007 (Empty): the article has no HTML text",)


async def test_a_huge_article_is_named_and_the_rest_syncs(snow: FakeServiceNow) -> None:
    snow.change("KB0010006", text="<p>" + paragraph("huge", 400) + "</p>")
    config = JobConfig(known_groups=KNOWN, max_file_bytes=20_000)
    summary = await job(snow, MemoryIndex(), MemorySyncState(), config).run(full=True)
    assert summary.counts.added == 4
    assert summary.errors[0].startswith("KB0010006 is 0.0") and "over the" in summary.errors[0]


async def test_cannot_read_criteria_restrict_to_nobody(snow: FakeServiceNow) -> None:
    agents = next(k for k, r in snow.tables["user_criteria"].items() if r["name"] == "Agents")
    snow.change("KB0010001", cannot_read_user_criteria=agents)
    doc = (await documents(snow))["KB0010001"]
    assert doc.access == () and "'cannot read'" in doc.warnings[0]


async def test_a_script_or_match_all_criterion_maps_nothing(snow: FakeServiceNow) -> None:
    rows = snow.tables["user_criteria"]
    agents = next(r for r in rows.values() if r["name"] == "Agents")
    agents["match_all"] = "true"  # in the group AND holding the role: not expressible
    assert (await documents(snow))["KB0010002"].access == ()
    agents.update(match_all="false", advanced="true")
    assert (await documents(snow))["KB0010002"].access == ()


async def test_oauth_client_credentials(snow: FakeServiceNow) -> None:
    docs = await documents(snow, auth="oauth", client_id=CLIENT_ID, username="",
                           token=CLIENT_SECRET)
    assert len([d for d in docs.values() if isinstance(d, SourceDocument)]) == 5
    assert snow.tokens  # a token was issued and used


async def test_a_revoked_password_or_secret_names_the_source(
        snow: FakeServiceNow, caplog: pytest.LogCaptureFixture) -> None:
    index, state = MemoryIndex(), MemorySyncState()
    with pytest.raises(SyncError) as caught:
        await job(snow, index, state, token="revoked").run(full=True)
    assert "Source 'kb' (ServiceNow) answered HTTP 401" in caught.value.user_message
    assert "`token` and `servicenow.username`" in caught.value.user_message
    assert await index.list_documents(SOURCE) == {} and state.docs == {}
    with pytest.raises(SyncError) as caught:
        await job(snow, index, state, auth="oauth", client_id=CLIENT_ID,
                  token="revoked").run(full=True)
    assert "the token endpoint refused the credentials" in caught.value.user_message
    assert "revoked" not in caplog.text


async def test_a_rate_limited_read_waits_and_carries_on(snow: FakeServiceNow) -> None:
    snow.faults.append(rate_limited("0", "/api/now/table/kb_knowledge"))
    summary = await job(snow, MemoryIndex(), MemorySyncState()).run(full=True)
    assert summary.counts.added == 5


class TestServiceNowContract(ConnectorContract):
    kind = "servicenow"

    @pytest.fixture
    def rig(self, snow: FakeServiceNow) -> Rig:
        def remove() -> str:
            articles = snow.tables["kb_knowledge"]
            del articles[next(k for k, r in articles.items() if r["number"] == "KB0010006")]
            return "KB0010006"

        return Rig(
            SourceConfig(SOURCE, url=snow.url, token=PASSWORD),
            {"username": USER, "bases": ["IT", "HR"], "public_bases": ["IT"], "page_size": 2,
             "backoff_s": 0.01, "max_wait_s": 2.0},
            frozenset({"KB0010001", "KB0010002", "KB0010003", "KB0010004", "KB0010006"}),
            {"KB0010001": Seen("Connect to the VPN",
                               f"{snow.url}/kb_view.do?sysparm_article=KB0010001",
                               "Step 0 of the vpn procedure")},
            public="KB0010001", restricted=("KB0010004", frozenset({
                "servicenow:group:Service Desk", "servicenow:role:itil"})),
            remove=remove,
            bad_credential=Trouble(("Source 'kb' (ServiceNow) answered HTTP 401",
                                  "`token` and `servicenow.username`"),
                                 source={"token": "snow-revoked-3"}, secret="snow-revoked-3"),
            unreadable=Trouble(("knowledge base 'Fasilities'", "not found"),
                             table={"bases": ["IT", "HR", "Fasilities"]}),
            known_groups=KNOWN)
