"""The Jira connector through the sync job, against a fake Jira Cloud and Data Center."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from rag.errors import SyncError
from sync.connectors.base import DocumentGone, SourceConfig, SourceDocument
from sync.connectors.jira import JiraConnector, JiraSettings
from sync.job import JobConfig, SyncJob
from tests.fakes.jira_server import (
    EMAIL,
    PAT,
    TOKEN,
    FakeComment,
    FakeIssue,
    FakeJira,
    adf,
    grant,
)
from tests.fakes.memory_index import MemoryIndex
from tests.fakes.memory_sync_state import MemorySyncState
from tests.fakes.platform_server import rate_limited
from tests.sync.conftest import HashEmbedder, paragraph
from tests.sync.connector_contract import ConnectorContract, Rig, Seen, Trouble

SOURCE = "tickets"
KNOWN = frozenset({"public", "jira:group:it-staff", "jira:role:IT:Developers",
                   "jira:level:10021", "jira:group:ops"})


def tracker(server: FakeJira) -> None:
    server.schemes["IT"] = [grant("group", "it-staff"), grant("projectRole", "10002",
                                                                role="Developers"),
                            grant("reporter"), grant("group", "jira-admins",
                                                     permission="ADMINISTER_PROJECTS")]
    server.schemes["OPS"] = [grant("group", "ops")]
    body = adf if server.cloud else (lambda *p: "\n\n".join(p))
    server.put(FakeIssue("IT-1", "VPN drops every hour", body(
        "The VPN client disconnects hourly.", paragraph("vpn", 3)),
        labels=["vpn"], components=["Network"], comments=[
            FakeComment(body("Fixed by renewing the certificate.")),
            FakeComment(body("Internal: the vendor owes us a patch."),
                        visibility={"type": "role", "value": "Administrators"})]))
    server.put(FakeIssue("IT-2", "Payroll export", body(paragraph("payroll", 2)),
                         security="10021"))
    server.put(FakeIssue("IT-3", "Printer on floor 2", body(paragraph("printer", 2))))
    server.put(FakeIssue("OPS-4", "Disk alerts", body(paragraph("disk", 2))))
    server.put(FakeIssue("OPS-5", "Still open", body("Not done."), status="Open"))


@pytest.fixture
async def jira() -> AsyncIterator[FakeJira]:
    server = FakeJira(page_size=2)  # several pages out of a few issues
    tracker(server)
    await server.start()
    yield server
    await server.stop()


def connector(server: FakeJira, **overrides: Any) -> JiraConnector:
    token = overrides.pop("token", TOKEN if server.cloud else PAT)
    options = {"email": EMAIL if server.cloud else "", "projects": ["IT", "OPS"],
               "jql": "status = Done", "deployment": "cloud" if server.cloud else "datacenter",
               "backoff_s": 0.01, "max_wait_s": 2.0, **overrides}
    return JiraConnector(SourceConfig(SOURCE, url=server.url, token=token),
                         JiraSettings(**options))


def job(server: FakeJira, index: MemoryIndex, state: MemorySyncState,
        config: JobConfig | None = None, **overrides: Any) -> SyncJob:
    return SyncJob(SOURCE, connector(server, **overrides), index, HashEmbedder(), state,
                   config or JobConfig(known_groups=KNOWN))


async def documents(server: FakeJira, **overrides: Any) -> dict[str, Any]:
    return {d.doc_id or "-": d async for d in connector(server, **overrides).documents(None)}


async def test_issues_map_to_documents(jira: FakeJira) -> None:
    docs = await documents(jira)
    assert set(docs) == {"IT-1", "IT-2", "IT-3", "OPS-4"}  # OPS-5 is not Done
    vpn = docs["IT-1"]
    assert vpn.title == "IT-1: VPN drops every hour" and vpn.url == f"{jira.url}/browse/IT-1"
    assert "The VPN client disconnects hourly." in vpn.body
    assert "Fixed by renewing the certificate." in vpn.body
    assert "vendor owes us" not in vpn.body  # a comment for one role is not the issue's
    assert vpn.tags == ("IT-1", "Done", "vpn", "Network")
    # The scheme's Browse grants; the reporter grant names nobody fixed, admin is not Browse.
    assert vpn.access == ("jira:group:it-staff", "jira:role:IT:Developers")
    assert docs["IT-2"].access == ("jira:level:10021",)  # a security level restricts to it
    assert docs["OPS-4"].access == ("jira:group:ops",)


async def test_sync_indexes_updates_and_prunes(jira: FakeJira) -> None:
    index, state = MemoryIndex(), MemorySyncState()
    first = await job(jira, index, state).run(full=True)
    assert (first.counts.added, first.counts.failed, first.errors) == (4, 0, ())
    again = await job(jira, index, state).run()
    assert again.counts.added == again.counts.updated == again.counts.deleted == 0
    jira.change("IT-3", description=adf("Printers now need a badge."))
    jira.change("OPS-4", status="Reopened")  # leaves the query
    del jira.issues["IT-1"]  # deleted: the cheap key listing finds it gone, every run
    changed = await job(jira, index, state).run()
    assert (changed.counts.updated, changed.counts.deleted) == (1, 2)
    assert set(await index.list_documents(SOURCE)) == {"IT-2", "IT-3"}
    assert "badge" in " ".join(c.text for c, _ in index.chunks.values())


async def test_data_center_wiki_markup_and_a_personal_access_token() -> None:
    server = FakeJira("datacenter", page_size=2)
    tracker(server)
    server.put(FakeIssue("IT-9", "Wiki", "h2. Steps\n\n* *Restart* the {{agent}}\n* wait"))
    async with server:
        docs = await documents(server)
    assert set(docs) == {"IT-1", "IT-2", "IT-3", "IT-9", "OPS-4"}
    assert "## Steps" in docs["IT-9"].body and "- **Restart** the `agent`" in docs["IT-9"].body
    assert "Fixed by renewing the certificate." in docs["IT-1"].body  # its rendered HTML
    assert "vendor owes us" not in docs["IT-1"].body
    assert docs["IT-1"].access == ("jira:group:it-staff", "jira:role:IT:Developers")
    assert any(r.startswith("/rest/api/2/search?") for r in server.requests)


async def test_a_project_that_does_not_exist_is_reported_and_the_rest_syncs(
        jira: FakeJira) -> None:
    index = MemoryIndex()
    summary = await job(jira, index, MemorySyncState(), projects=["IT", "NOPE"]).run(full=True)
    assert summary.counts.added == 3
    assert summary.errors == ("project NOPE: Source 'tickets' (Jira) refused the query "
                              "'project = \"NOPE\" AND (status = Done) ORDER BY updated ASC': "
                              "The value 'NOPE' does not exist for the field 'project'.; "
                              "skipped",)


async def test_a_jql_alone_that_jira_refuses_stops_with_its_reason(jira: FakeJira) -> None:
    with pytest.raises(SyncError) as caught:
        await job(jira, MemoryIndex(), MemorySyncState(), projects=[],
                  jql="project in (IT, NOPE)").run(full=True)
    assert "The value 'NOPE' does not exist for the field 'project'." in \
        caught.value.user_message


async def test_an_unreadable_scheme_uses_project_access_or_restricts(jira: FakeJira) -> None:
    del jira.schemes["OPS"]
    docs = await documents(jira)
    assert docs["OPS-4"].access == ()  # nobody, and the sync says why
    assert "`jira.project_access` names no readers" in docs["OPS-4"].warnings[0]
    docs = await documents(jira, project_access={"OPS": ["jira:group:ops"]})
    assert docs["OPS-4"].access == ("jira:group:ops",) and docs["OPS-4"].warnings == ()


async def test_a_scheme_of_anonymous_browsing_is_public(jira: FakeJira) -> None:
    jira.schemes["OPS"] = [grant("anyone"), grant("group", "ops")]
    assert (await documents(jira))["OPS-4"].access == ("public",)
    jira.schemes["OPS"] = [grant("reporter"), grant("assignee")]
    assert (await documents(jira))["OPS-4"].access == ()  # nobody fixed: restricted


async def test_an_unconvertible_description_is_reported_by_key(jira: FakeJira) -> None:
    jira.change("IT-3", description="plain text where ADF belongs")
    index = MemoryIndex()
    summary = await job(jira, index, MemorySyncState()).run(full=True)
    assert summary.counts.added == 3 and summary.counts.failed == 1
    assert summary.errors == ("issue IT-3 (Printer on floor 2): description: the body is not "
                              "Atlassian Document Format (no doc node)",)
    assert "IT-3" not in await index.list_documents(SOURCE)


async def test_a_huge_issue_pages_its_comments_and_an_oversized_one_is_named(
        jira: FakeJira) -> None:
    jira.change("IT-3", comments=[FakeComment(adf(f"Comment number {i}.")) for i in range(250)])
    docs = await documents(jira)
    assert all(f"Comment number {i}." in docs["IT-3"].body for i in (0, 19, 20, 249))
    assert sum(1 for r in jira.requests if "/issue/IT-3/comment" in r) == 3  # 230 past 20
    config = JobConfig(known_groups=KNOWN, max_file_bytes=8000)
    summary = await job(jira, MemoryIndex(), MemorySyncState(), config).run(full=True)
    assert summary.counts.added == 3
    assert summary.errors[0].startswith("IT-3 is 0.0") and "over the" in summary.errors[0]


async def test_a_revoked_token_names_the_source_and_writes_nothing(
        jira: FakeJira, caplog: pytest.LogCaptureFixture) -> None:
    index, state = MemoryIndex(), MemorySyncState()
    with pytest.raises(SyncError) as caught:
        await job(jira, index, state, token="revoked").run(full=True)
    assert "Source 'tickets' (Jira) answered HTTP 401" in caught.value.user_message
    assert "`token` and `jira.email`" in caught.value.user_message
    assert await index.list_documents(SOURCE) == {} and state.docs == {}
    assert TOKEN not in caplog.text


async def test_a_rate_limited_search_waits_and_carries_on(jira: FakeJira) -> None:
    jira.faults.append(rate_limited("0", "/rest/api/3/search"))
    summary = await job(jira, MemoryIndex(), MemorySyncState()).run(full=True)
    assert summary.counts.added == 4


async def test_fetch_reads_named_issues(jira: FakeJira) -> None:
    jira.change("OPS-4", status="Open")
    found = [d async for d in connector(jira).fetch(["IT-1", "OPS-4", "IT-77", "x) OR (1=1"])]
    assert isinstance(found[0], SourceDocument) and found[0].doc_id == "IT-1"
    assert found[1:] == [DocumentGone("OPS-4"), DocumentGone("IT-77"),
                         DocumentGone("x) OR (1=1")]


class TestJiraContract(ConnectorContract):
    kind = "jira"

    @pytest.fixture
    def rig(self, jira: FakeJira) -> Rig:
        jira.schemes["OPS"] = [grant("anyone")]  # anonymous browsing: its issues are public

        def remove() -> str:
            del jira.issues["IT-3"]
            return "IT-3"

        return Rig(
            SourceConfig(SOURCE, url=jira.url, token=TOKEN),
            {"email": EMAIL, "projects": ["IT", "OPS"], "jql": "status = Done",
             "deployment": "cloud", "backoff_s": 0.01, "max_wait_s": 2.0},
            frozenset({"IT-1", "IT-2", "IT-3", "OPS-4"}),
            {"IT-1": Seen("IT-1: VPN drops every hour", f"{jira.url}/browse/IT-1",
                          "The VPN client disconnects hourly.")},
            public="OPS-4", restricted=("IT-2", frozenset({"jira:level:10021"})),
            remove=remove,
            bad_credential=Trouble(("Source 'tickets' (Jira) answered HTTP 401",
                                  "`token` and `jira.email`"), source={"token": "jira-revoked-7"},
                                 secret="jira-revoked-7"),
            unreadable=Trouble(("issue IT-3 (Printer on floor 2)",), apply=lambda: jira.change(
                "IT-3", description="plain text where ADF belongs")),
            known_groups=KNOWN)
